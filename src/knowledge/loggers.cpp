// Logger factories: see include/graphmend/knowledge.hpp.
#include "graphmend/knowledge.hpp"

namespace graphmend::knowledge {

LoggerFactory logger_factory(std::string_view module, std::string_view name) {
    if (name != "getLogger" && name != "get_logger") return LoggerFactory::Unknown;
    if (module == "logging") return name == "getLogger" ? LoggerFactory::Logger : LoggerFactory::Unknown;
    // transformers/utils/logging.py, diffusers/utils/logging.py and huggingface_hub/utils/logging.py
    // (at the pins and since): `def get_logger(name=None) -> logging.Logger: ... return logging.getLogger(name)`.
    for (const std::string_view package : {"transformers", "diffusers", "huggingface_hub"}) {
        if (module.starts_with(package) && module.ends_with(".logging") && name == "get_logger") {
            return LoggerFactory::Logger;
        }
    }
    // accelerate/logging.py: `def get_logger(name, log_level=None): ... return MultiProcessAdapter(logger, {})`.
    if (module == "accelerate.logging" || module == "accelerate") return LoggerFactory::NotLogger;
    return LoggerFactory::Unknown;
}

}  // namespace graphmend::knowledge

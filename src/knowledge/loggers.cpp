// Logger factories, logger methods and the warnings API: see include/graphmend/knowledge.hpp.
// Where each entry is defined (Where) is checked by tests/python/test_knowledge.py (the
// packages that are installed beside torch 2.12.1: transformers 4.52.4 and huggingface_hub).
#include "table.hpp"

namespace graphmend::knowledge {

namespace {

struct Factory {
    std::string_view name;  // module.function
    std::uint32_t where;
    LoggerFactory returns;
};

// Logger factories and what they return. Sources: logging.getLogger; transformers/utils/logging.py,
// diffusers/utils/logging.py and huggingface_hub/utils/logging.py (at the pins and since):
// `def get_logger(name=None) -> logging.Logger: ... return logging.getLogger(name)`;
// accelerate/logging.py: `def get_logger(name, log_level=None): ... return MultiProcessAdapter(logger, {})`.
constexpr auto kLoggerFactories = std::to_array<Factory>({
    {"accelerate.logging.get_logger", kDotted, LoggerFactory::NotLogger},
    {"diffusers.utils.logging.get_logger", kDotted, LoggerFactory::Logger},
    {"huggingface_hub.utils.logging.get_logger", kDotted, LoggerFactory::Logger},
    {"logging.getLogger", kDotted, LoggerFactory::Logger},
    {"transformers.utils.logging.get_logger", kDotted, LoggerFactory::Logger},
});
static_assert(detail::sorted(kLoggerFactories));

// The methods of a logging.Logger that log a record (Python 3.11's Lib/logging/__init__.py:
// `warn` and `fatal` are aliases), and `warning_once`, which transformers/utils/logging.py adds to
// logging.Logger (`logging.Logger.warning_once = warning_once`, transformers 4.52.4).
constexpr auto kLoggerMethods = std::to_array<Name>({
    {"critical", kLogger}, {"debug", kLogger}, {"error", kLogger}, {"exception", kLogger}, {"fatal", kLogger},
    {"info", kLogger}, {"log", kLogger}, {"warn", kLogger}, {"warning", kLogger}, {"warning_once", kLogger},
});
static_assert(detail::sorted(kLoggerMethods));

// The warnings API a call may be (Python 3.11's Lib/warnings.py).
constexpr auto kWarningFunctions = std::to_array<Name>({
    {"warnings.warn", kDotted},
});
static_assert(detail::sorted(kWarningFunctions));

}  // namespace

LoggerFactory logger_factory(std::string_view module, std::string_view name) {
    if (name != "getLogger" && name != "get_logger") return LoggerFactory::Unknown;
    for (const Factory& f : kLoggerFactories) {
        const std::string_view package = f.name.substr(0, f.name.find('.'));
        const std::string_view function = f.name.substr(f.name.rfind('.') + 1);
        const std::string_view factory_module = f.name.substr(0, f.name.rfind('.'));
        if (package == "logging") {
            if (module == "logging") return name == function ? f.returns : LoggerFactory::Unknown;
        } else if (f.returns == LoggerFactory::Logger) {
            // The package's logging module, where the package keeps it (`transformers.utils.logging`).
            if (module.starts_with(package) && module.ends_with(".logging") && name == function) return f.returns;
        } else if (module == factory_module || module == package) {
            return f.returns;
        }
    }
    return LoggerFactory::Unknown;
}

bool logger_method(std::string_view name) { return detail::listed(kLoggerMethods, name); }

bool warning_function(std::string_view module, std::string_view name) {
    for (const Name& w : kWarningFunctions) {
        const auto dot = w.name.rfind('.');
        if (w.name.substr(0, dot) == module && w.name.substr(dot + 1) == name) return true;
    }
    return false;
}

namespace detail {

void add_logger_tables(std::vector<Table>& out) {
    out.push_back(table("logger_factories",
                        "logging; transformers, diffusers, huggingface_hub utils/logging.py; accelerate/logging.py",
                        kLoggerFactories));
    out.push_back(table("logger_methods", "Python 3.11 Lib/logging; transformers 4.52.4 utils/logging.py",
                        kLoggerMethods));
    out.push_back(table("warning_functions", "Python 3.11 Lib/warnings.py", kWarningFunctions));
}

}  // namespace detail

}  // namespace graphmend::knowledge

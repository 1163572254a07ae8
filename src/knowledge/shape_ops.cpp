// Ops whose output shape depends on the data: see include/graphmend/knowledge.hpp.
#include "graphmend/knowledge.hpp"

namespace graphmend::knowledge {

bool dynamic_shape_op(std::string_view name) {
    return name == "nonzero" || name == "argwhere" || name == "unique" || name == "unique_consecutive" ||
           name == "masked_select" || name == "bincount";
}

}  // namespace graphmend::knowledge

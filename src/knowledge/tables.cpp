// Every table of the knowledge layer, for tools/knowledge.cpp: see include/graphmend/knowledge.hpp.
#include "table.hpp"

namespace graphmend::knowledge {

const std::vector<Table>& tables() {
    static const std::vector<Table> all = [] {
        std::vector<Table> out;
        detail::add_shape_tables(out);
        detail::add_tensor_tables(out);
        detail::add_module_tables(out);
        detail::add_logger_tables(out);
        detail::add_python_tables(out);
        detail::add_value_raising_tables(out);
        detail::add_untraceable_tables(out);
        return out;
    }();
    return all;
}

}  // namespace graphmend::knowledge

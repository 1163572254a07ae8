// graphmend_knowledge: prints every table of the knowledge layer (src/knowledge/) as JSON, for
// tests/python/test_knowledge.py, which checks each entry against the installed torch:
//
//   {"tables": [{"name": "size_methods", "source": "...",
//                "entries": [{"name": "view", "where": ["torch.Tensor"]}, ...]}, ...]}
//
// `where` names each place the entry says it is defined (knowledge::Where): "torch",
// "torch.Tensor", "torch.nn.functional", "torch.linalg", "torch.nn" (a class), "torch.nn.Module"
// (a method), "torch.ops" (NS::NAME), "dotted" (a module or an attribute of one), "builtins",
// "list", "dict", "set", "file" (io.TextIOBase), "logging.Logger", "operator", and
// "older_torch" (a dotted name an older torch defined, gone from the installed one).
#include <nlohmann/json.hpp>

#include <iostream>
#include <utility>

#include "graphmend/knowledge.hpp"

using namespace graphmend;

int main() {
    static constexpr std::pair<knowledge::Where, const char*> kPlaces[] = {
        {knowledge::kTorch, "torch"},
        {knowledge::kTensor, "torch.Tensor"},
        {knowledge::kFunctional, "torch.nn.functional"},
        {knowledge::kLinalg, "torch.linalg"},
        {knowledge::kNn, "torch.nn"},
        {knowledge::kNnModule, "torch.nn.Module"},
        {knowledge::kOp, "torch.ops"},
        {knowledge::kDotted, "dotted"},
        {knowledge::kBuiltin, "builtins"},
        {knowledge::kList, "list"},
        {knowledge::kDict, "dict"},
        {knowledge::kSet, "set"},
        {knowledge::kFile, "file"},
        {knowledge::kLogger, "logging.Logger"},
        {knowledge::kOperator, "operator"},
        {knowledge::kOlderTorch, "older_torch"},
    };
    nlohmann::ordered_json tables = nlohmann::ordered_json::array();
    for (const knowledge::Table& t : knowledge::tables()) {
        nlohmann::ordered_json entries = nlohmann::ordered_json::array();
        for (const knowledge::Name& n : t.names) {
            nlohmann::ordered_json where = nlohmann::ordered_json::array();
            std::uint32_t rest = n.where;
            for (const auto& [bit, place] : kPlaces) {
                if ((n.where & bit) != 0) where.push_back(place);
                rest &= ~static_cast<std::uint32_t>(bit);
            }
            if (rest != 0) where.push_back("unknown");
            entries.push_back({{"name", n.name}, {"where", where}});
        }
        tables.push_back({{"name", t.name}, {"source", t.source}, {"entries", entries}});
    }
    std::cout << nlohmann::ordered_json{{"tables", tables}}.dump(1) << '\n';
    return 0;
}

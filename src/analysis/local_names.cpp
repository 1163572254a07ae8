// What a function binds (local_names) and the function around a node (enclosing_function),
// for the scope walk and the rules. See include/graphmend/analysis.hpp.
#include <set>
#include <string>

#include "graphmend/analysis.hpp"

namespace graphmend::analysis {

using syntax::Node;

namespace {

bool is_function_node(const Node& n) { return n.is("function_definition") || n.is("lambda"); }

std::set<std::string> compute_local_names(const Node& function) {
    std::set<std::string> names;
    auto bind_targets = [&](const Node& target) {
        syntax::walk(target, [&](const Node& n) {
            if (n.is("identifier")) names.insert(std::string(n.text()));
            return !n.is("attribute") && !n.is("subscript");
        });
    };
    if (const Node params = function.field("parameters")) {
        for (const Node& p : params.named_children()) {
            if (p.is("identifier")) {
                names.insert(std::string(p.text()));
            } else if (const Node name = p.field("name"); name.is("identifier")) {
                names.insert(std::string(name.text()));
            } else {
                for (const Node& c : p.named_children()) {
                    if (c.is("identifier")) {
                        names.insert(std::string(c.text()));
                        break;
                    }
                }
            }
        }
    }
    syntax::walk(function.field("body"), [&](const Node& n) {
        if (n.is("function_definition") || n.is("class_definition")) {
            names.insert(std::string(n.field("name").text()));
            return false;
        }
        if (n.is("lambda")) return false;
        if (n.is("assignment") || n.is("augmented_assignment")) bind_targets(n.field("left"));
        if (n.is("for_statement") || n.is("for_in_clause")) bind_targets(n.field("left"));
        if (n.is("named_expression")) bind_targets(n.field("name"));
        if (n.is("as_pattern_target")) bind_targets(n);
        if (n.is("aliased_import")) names.insert(std::string(n.field("alias").text()));
        if (n.is("import_statement") || n.is("import_from_statement")) {
            for (const Node& c : n.named_children()) {
                if (c.is("dotted_name") && !(n.is("import_from_statement") && c == n.field("module_name"))) {
                    const std::string full(c.text());
                    names.insert(full.substr(0, full.find('.')));
                }
            }
        }
        if (n.is("global_statement") || n.is("nonlocal_statement")) return false;
        return true;
    });
    return names;
}

}  // namespace

std::set<std::string> local_names(const Node& function) {
    thread_local FunctionMemo<std::set<std::string>> memo;
    return memo.get(function, compute_local_names);
}

Node enclosing_function(const Node& node) {
    for (Node p = node.parent(); p; p = p.parent()) {  // a step each (syntax::NodeTable)
        if (is_function_node(p)) return p;
    }
    return {};
}

}  // namespace graphmend::analysis

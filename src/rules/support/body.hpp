// Small queries on function bodies shared by the dispatch matchers (split_dispatch.cpp,
// sorted_slices.cpp, expert_dispatch.cpp, span_loop.cpp). Private to src/rules/.
#pragma once

#include <string>
#include <vector>

#include "graphmend/rule.hpp"
#include "graphmend/syntax.hpp"

namespace graphmend::rules::body {

/// The statements of a block, comments left out.
inline std::vector<syntax::Node> statements(const syntax::Node& block) {
    std::vector<syntax::Node> out;
    for (const syntax::Node& s : block.named_children()) {
        if (!s.is("comment")) out.push_back(s);
    }
    return out;
}

/// `A = B` as a statement: the assignment node, or an invalid node.
inline syntax::Node assignment_of(const syntax::Node& stmt) {
    if (!stmt || !stmt.is("expression_statement")) return {};
    const auto parts = stmt.named_children();
    return parts.size() == 1 && parts[0].is("assignment") ? parts[0] : syntax::Node();
}

/// True when `node` lies within `outer`'s bytes.
inline bool inside(const syntax::Node& node, const syntax::Node& outer) {
    return outer.begin() <= node.begin() && node.end() <= outer.end();
}

/// True when identifier `id` is bound there (an assignment or loop target, unpacked or not).
inline bool bound_here(const syntax::Node& id) {
    syntax::Node n = id;
    syntax::Node p = n.parent();
    while (p && (p.is("pattern_list") || p.is("tuple_pattern") || p.is("list_pattern"))) {
        n = p;
        p = p.parent();
    }
    return p && (p.is("assignment") || p.is("augmented_assignment") || p.is("for_statement")) && p.field("left") == n;
}

/// The identifiers named `name` in the body of `def` that name the local (not an attribute's
/// or a keyword argument's name), nested functions, classes and lambdas left out.
inline std::vector<syntax::Node> occurrences(const syntax::Node& def, const std::string& name) {
    std::vector<syntax::Node> out;
    syntax::walk(def.field("body"), [&](const syntax::Node& n) {
        if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
        if (n.is("identifier") && n.text() == name) {
            const syntax::Node p = n.parent();
            if (!(p.is("attribute") && p.field("attribute") == n) && !(p.is("keyword_argument") && p.field("name") == n)) {
                out.push_back(n);
            }
        }
        return true;
    });
    return out;
}

/// `torch.cat(O, dim=0)` / `torch.cat(O, 0)` / `torch.cat(O)` (or `torch.concat`,
/// `torch.concatenate`) in file `file`: O, or an invalid node.
inline syntax::Node cat_of(const Context& ctx, std::size_t file, const syntax::Node& e) {
    const syntax::Node call = syntax::without_parens(e);
    if (!call.is("call")) return {};
    const std::string ext = ctx.project.external_name(file, call.field("function"));
    if (ext != "torch.cat" && ext != "torch.concat" && ext != "torch.concatenate") return {};
    const auto args = call.field("arguments").named_children();
    if (args.empty() || !args[0].is("identifier")) return {};
    if (args.size() == 1) return args[0];
    if (args.size() == 2 && (args[1].text() == "0" || (args[1].is("keyword_argument") &&
                                                       args[1].field("name").text() == "dim" &&
                                                       args[1].field("value").text() == "0"))) {
        return args[0];
    }
    return {};
}

}  // namespace graphmend::rules::body

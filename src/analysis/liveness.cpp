// Liveness of names in a function: see include/graphmend/liveness.hpp.
#include "graphmend/liveness.hpp"

#include <vector>

#include "graphmend/analysis.hpp"

namespace graphmend::analysis {

using syntax::Node;

namespace {

std::string text(const Node& n) { return std::string(n.text()); }

}  // namespace

bool is_read(const Node& id) {
    const Node p = id.parent();
    if (p.is("attribute") && p.field("attribute") == id) return false;
    if (p.is("keyword_argument") && p.field("name") == id) return false;
    if ((p.is("assignment") || p.is("augmented_assignment")) && p.field("left") == id) {
        return p.is("augmented_assignment");
    }
    if (p.is("function_definition") || p.is("class_definition") || p.is("parameters") ||
        p.is("default_parameter") || p.is("typed_parameter") || p.is("typed_default_parameter") ||
        p.is("lambda_parameters") || p.is("aliased_import") || p.is("dotted_name")) {
        return false;
    }
    return true;
}

bool binds(const Node& node, const std::string& name, std::uint32_t before) {
    bool bound = false;
    syntax::walk(node, [&](const Node& n) {
        if (bound || n.begin() >= before) return false;
        if (n.is("identifier") && n.text() == name && !is_read(n)) {
            const Node p = n.parent();
            bound = !(p.is("attribute") && p.field("attribute") == n) &&
                    !(p.is("keyword_argument") && p.field("name") == n);
        }
        return !bound;
    });
    return bound;
}

std::set<std::string> assigned_by(const Node& stmt) {
    std::set<std::string> names;
    if (stmt.is("expression_statement")) {
        for (const Node& e : stmt.named_children()) {
            for (Node a = e; a.is("assignment"); a = a.field("right")) {
                syntax::walk(a.field("left"), [&](const Node& t) {
                    if (t.is("identifier")) names.insert(text(t));
                    return t.is("identifier") || t.is("pattern_list") || t.is("tuple_pattern");
                });
            }
        }
    } else if (stmt.is("if_statement")) {
        std::vector<Node> blocks{stmt.field("consequence")};
        bool has_else = false;
        for (const Node& alt : stmt.children()) {
            if (alt.is("elif_clause")) blocks.push_back(alt.field("consequence"));
            if (alt.is("else_clause")) {
                blocks.push_back(alt.field("body"));
                has_else = true;
            }
        }
        if (!has_else) return names;
        bool first = true;
        for (const Node& b : blocks) {
            const auto stmts = b.named_children();
            const bool leaves = !stmts.empty() && (stmts.back().is("return_statement") || stmts.back().is("raise_statement"));
            if (leaves) continue;  // does not fall through
            auto here = assigned_by_block(b);
            if (first) {
                names = std::move(here);
                first = false;
            } else {
                std::erase_if(names, [&](const std::string& n) { return !here.contains(n); });
            }
        }
    } else if (stmt.is("with_statement")) {
        return assigned_by_block(stmt.field("body"));
    }
    return names;
}

std::set<std::string> assigned_by_block(const Node& block) {
    std::set<std::string> names;
    for (const Node& stmt : block.named_children()) names.merge(assigned_by(stmt));
    return names;
}

std::set<std::string> definitely_bound(const Node& function, const Node& target) {
    std::set<std::string> names;
    if (const Node params = function.field("parameters")) {
        syntax::walk(params, [&](const Node& n) {
            if (n.is("identifier")) names.insert(text(n));
            return !n.is("default_parameter") && !n.is("typed_default_parameter");
        });
        for (const Node& p : params.named_children()) {
            if (const Node name = p.field("name")) names.insert(text(name));
        }
    }
    const Node body = function.field("body");
    for (Node child = target, block = target.parent(); block; child = block, block = block.parent()) {
        if (block.is("block")) {
            for (const Node& stmt : block.named_children()) {
                if (stmt.begin() >= child.begin()) break;
                names.merge(assigned_by(stmt));
            }
        }
        if (block.is("for_statement") && child == block.field("body")) {
            // Inside a for loop's body its target is always bound.
            syntax::walk(block.field("left"), [&](const Node& n) {
                if (n.is("identifier")) names.insert(text(n));
                return !n.is("attribute") && !n.is("subscript");
            });
        }
        if (block == body || block == function) break;
    }
    return names;
}

Scope scope_of(const Node& function, const Node& skip) {
    Scope s;
    s.bound_before = definitely_bound(function, skip);
    s.locals = local_names(function);
    syntax::walk(function.field("body"), [&](const Node& n) {
        if (n == skip) return false;
        if (n.is("identifier") && is_read(n)) s.read_outside.insert(text(n));
        return true;
    });
    return s;
}

std::string maybe_unbound(const Node& expr, const Scope& scope, const std::set<std::string>& assigned) {
    std::string found;
    syntax::walk(expr, [&](const Node& n) {
        if (!found.empty() || n.is("lambda")) return false;
        if (n.is("identifier") && is_read(n)) {
            const std::string name = text(n);
            if (scope.locals.contains(name) && !scope.bound_before.contains(name) && !assigned.contains(name)) {
                found = name;
            }
        }
        return true;
    });
    return found;
}

}  // namespace graphmend::analysis

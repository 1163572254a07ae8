// Liveness of names in a function: see include/graphmend/liveness.hpp.
#include "graphmend/liveness.hpp"

#include <map>
#include <vector>

#include "graphmend/analysis.hpp"

namespace graphmend::analysis {

using syntax::Node;

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

void for_each_binding(const Node& node, const std::function<void(const Node&)>& visit) {
    auto targets = [&](const Node& target) {
        syntax::walk(target, [&](const Node& n) {
            if (n.is("identifier")) visit(n);
            return !n.is("attribute") && !n.is("subscript");
        });
    };
    syntax::walk(node, [&](const Node& n) {
        if (n.is("function_definition") || n.is("class_definition")) {
            if (const Node name = n.field("name")) visit(name);
            return false;
        }
        if (n.is("lambda") || n.is("global_statement") || n.is("nonlocal_statement")) return false;
        if (n.is("assignment") || n.is("augmented_assignment")) {
            targets(n.field("left"));
        } else if (n.is("for_statement") || n.is("for_in_clause")) {
            targets(n.field("left"));
        } else if (n.is("named_expression")) {
            targets(n.field("name"));
        } else if (n.is("as_pattern_target") || n.is("delete_statement")) {
            targets(n);
            return n.is("delete_statement") ? false : true;
        } else if (n.is("aliased_import")) {
            if (const Node alias = n.field("alias")) visit(alias);
            return false;
        } else if (n.is("import_statement") || n.is("import_from_statement")) {
            for (const Node& c : n.named_children()) {
                if (c.is("dotted_name") && !(n.is("import_from_statement") && c == n.field("module_name"))) {
                    const auto parts = c.named_children();
                    if (!parts.empty()) visit(parts[0]);
                }
            }
        } else if (n.is("case_pattern")) {
            // A capture: `case x:`, `case [x, y]:` (a one-part dotted name; `Color.RED` is a value).
            const auto parts = n.named_children();
            if (parts.size() == 1 && parts[0].is("dotted_name") && parts[0].named_children().size() == 1) {
                visit(parts[0].named_children()[0]);
            }
        }
        return true;
    });
}

bool binds(const Node& node, const std::string& name, std::uint32_t before) {
    bool bound = false;
    for_each_binding(node, [&](const Node& id) {
        if (!bound && id.begin() < before && id.text() == name) bound = true;
    });
    return bound;
}

namespace {

// The forward walk of reaching_assignments: `defs` maps each name to the value of the plain
// assignment that reaches the current point on every path.
class Reaching {
public:
    using Defs = std::map<std::string, Node>;

    Reaching(std::map<std::uint32_t, Node>& out, const Node& function) : out_(out) {
        // Names declared global or nonlocal anywhere inside (a nested function's `nonlocal x`
        // rebinds this function's x when it is called).
        syntax::walk(function, [&](const Node& n) {
            if (n.is("global_statement") || n.is("nonlocal_statement")) {
                for (const Node& id : n.named_children()) {
                    if (id.is("identifier")) banned_.insert(text(id));
                }
            }
            return true;
        });
    }

    void block(const Node& b, Defs& defs) {
        for (const Node& stmt : b.named_children()) statement(stmt, defs);
    }

private:
    static bool scope_boundary(const Node& n) {
        return n.is("lambda") || n.is("function_definition") || n.is("class_definition") ||
               n.is("list_comprehension") || n.is("set_comprehension") || n.is("dictionary_comprehension") ||
               n.is("generator_expression") || n.is("decorated_definition");
    }

    static void kill(const Node& n, Defs& defs) {
        for_each_binding(n, [&](const Node& id) { defs.erase(text(id)); });
    }

    // Kills what walruses in `n` bind (they bind before the rest of the statement reads).
    static void kill_walruses(const Node& n, Defs& defs) {
        syntax::walk(n, [&](const Node& c) {
            if (scope_boundary(c)) return false;
            if (c.is("named_expression")) defs.erase(text(c.field("name")));
            return true;
        });
    }

    void reads(const Node& n, const Defs& defs) {
        if (defs.empty()) return;
        std::set<std::uint32_t> targets;
        for_each_binding(n, [&](const Node& id) { targets.insert(id.begin()); });
        syntax::walk(n, [&](const Node& c) {
            if (scope_boundary(c)) return false;
            if (c.is("identifier") && is_read(c) && !targets.contains(c.begin())) {
                if (const auto it = defs.find(text(c)); it != defs.end()) out_.emplace(c.begin(), it->second);
            }
            return true;
        });
    }

    void statement(const Node& s, Defs& defs) {
        if (s.is("if_statement")) {
            kill_walruses(s.field("condition"), defs);
            reads(s.field("condition"), defs);
            const Defs pre = defs;
            {
                Defs d = pre;
                block(s.field("consequence"), d);
            }
            for (const Node& alt : s.children()) {
                Defs d = pre;
                if (alt.is("elif_clause")) {
                    kill_walruses(alt.field("condition"), d);
                    reads(alt.field("condition"), d);
                    block(alt.field("consequence"), d);
                } else if (alt.is("else_clause")) {
                    block(alt.field("body"), d);
                }
            }
            kill(s, defs);
        } else if (s.is("for_statement") || s.is("while_statement")) {
            if (s.is("for_statement")) reads(s.field("right"), defs);
            kill(s, defs);
            if (s.is("while_statement")) reads(s.field("condition"), defs);
            Defs d = defs;
            block(s.field("body"), d);
            for (const Node& alt : s.children()) {
                if (alt.is("else_clause")) {
                    Defs e = defs;
                    block(alt.field("body"), e);
                }
            }
        } else if (s.is("try_statement")) {
            {
                Defs d = defs;
                block(s.field("body"), d);
            }
            kill(s, defs);
            for (const Node& c : s.named_children()) {
                if (c.is("except_clause") || c.is("except_group_clause") || c.is("else_clause") ||
                    c.is("finally_clause")) {
                    Defs d = defs;
                    for (const Node& part : c.named_children()) {
                        if (part.is("block")) {
                            block(part, d);
                        } else {
                            reads(part, d);
                        }
                    }
                }
            }
        } else if (s.is("with_statement")) {
            for (const Node& c : s.named_children()) {
                if (c.is("with_clause")) {
                    kill_walruses(c, defs);
                    reads(c, defs);
                    kill(c, defs);
                }
            }
            Defs d = defs;
            block(s.field("body"), d);
            kill(s, defs);  // a context manager may swallow an exception half way through the body
        } else if (s.is("match_statement")) {
            reads(s.field("subject"), defs);
            for (const Node& c : s.field("body").named_children()) {
                if (!c.is("case_clause")) continue;
                Defs d = defs;
                kill(c, d);  // captures and guards' walruses (conservatively, before the guard)
                for (const Node& part : c.named_children()) {
                    if (part.is("block")) block(part, d);
                    if (part.is("if_clause")) reads(part, d);
                }
            }
            kill(s, defs);
        } else if (s.is("expression_statement") || s.is("return_statement") || s.is("raise_statement") ||
                   s.is("assert_statement") || s.is("delete_statement") || s.is("print_statement") ||
                   s.is("exec_statement")) {
            kill_walruses(s, defs);
            reads(s, defs);
            kill(s, defs);
            if (!s.is("expression_statement")) return;
            for (const Node& e : s.named_children()) {
                if (!e.is("assignment")) continue;
                std::vector<Node> lefts;
                Node right = e;
                while (right.is("assignment")) {
                    lefts.push_back(right.field("left"));
                    right = right.field("right");
                }
                if (!right) continue;  // a bare annotation `x: T`
                for (const Node& l : lefts) {
                    if (l.is("identifier") && !banned_.contains(text(l))) defs[text(l)] = right;
                }
            }
        } else {
            kill(s, defs);  // imports, nested definitions, anything else
        }
    }

    std::map<std::uint32_t, Node>& out_;
    std::set<std::string> banned_;
};

}  // namespace

std::map<std::uint32_t, Node> reaching_assignments(const Node& function) {
    std::map<std::uint32_t, Node> out;
    Reaching walk(out, function);
    Reaching::Defs defs;
    walk.block(function.field("body"), defs);
    return out;
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
    } else if (stmt.is("function_definition") || stmt.is("class_definition")) {
        names.insert(text(stmt.field("name")));  // `def NAME` binds NAME, as an assignment does
    } else if (stmt.is("decorated_definition")) {
        if (const Node def = stmt.field("definition")) names.insert(text(def.field("name")));
    }
    return names;
}

std::set<std::string> assigned_by_block(const Node& block) {
    std::set<std::string> names;
    for (const Node& stmt : block.named_children()) names.merge(assigned_by(stmt));
    return names;
}

namespace {

// What definitely_bound needs of each block of a function: its statements' first bytes (from
// the function's first byte), what each binds (assigned_by), and, every kStride statements,
// what the statements before bind together: the names a prefix of a block binds are one
// remembered set and at most kStride - 1 merges, not a walk of every statement before.
struct BlockBindings {
    std::vector<std::uint32_t> begins;
    std::vector<std::set<std::string>> binds;
    std::vector<std::set<std::string>> before;  // before[j]: of the statements [0, j * kStride)
};
constexpr std::size_t kStride = 32;
using Bindings = std::map<std::uint32_t, BlockBindings>;  // by the block's offset

Bindings bindings_of(const Node& function) {
    Bindings out;
    syntax::walk(function, [&](const Node& n) {
        if (!n.is("block")) return true;
        BlockBindings& b = out[n.begin() - function.begin()];
        std::set<std::string> so_far;
        for (const Node& stmt : n.named_children()) {
            if (b.binds.size() % kStride == 0) b.before.push_back(so_far);
            b.begins.push_back(stmt.begin() - function.begin());
            b.binds.push_back(assigned_by(stmt));
            so_far.insert(b.binds.back().begin(), b.binds.back().end());
        }
        return true;
    });
    return out;
}

}  // namespace

std::set<std::string> definitely_bound(const Node& function, const Node& target) {
    thread_local FunctionMemo<Bindings> memo;
    const Bindings& bindings = memo.get(function, bindings_of);
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
            // The statements of the block that begin before `child`.
            const auto b = bindings.find(block.begin() - function.begin());
            if (b == bindings.end()) {  // not inside the function's tree (never, for a target in it)
                for (const Node& stmt : block.named_children()) {
                    if (stmt.begin() >= child.begin()) break;
                    names.merge(assigned_by(stmt));
                }
            } else {
                const BlockBindings& bb = b->second;
                const auto k = static_cast<std::size_t>(
                    std::lower_bound(bb.begins.begin(), bb.begins.end(), child.begin() - function.begin()) -
                    bb.begins.begin());
                const std::size_t j = k / kStride;
                if (j < bb.before.size()) names.insert(bb.before[j].begin(), bb.before[j].end());
                for (std::size_t s = j * kStride; s < k; ++s) names.insert(bb.binds[s].begin(), bb.binds[s].end());
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

namespace {

// The names a function's body reads (is_read), each with the offsets of its reads from the
// function's first byte, in order.
using Reads = std::map<std::string, std::vector<std::uint32_t>>;

Reads reads_of(const Node& function) {
    Reads reads;
    syntax::walk(function.field("body"), [&](const Node& n) {
        if (n.is("identifier") && is_read(n)) reads[text(n)].push_back(n.begin() - function.begin());
        return true;
    });
    return reads;
}

}  // namespace

Scope scope_of(const Node& function, const Node& skip) {
    Scope s;
    s.bound_before = definitely_bound(function, skip);
    s.locals = local_names(function);
    thread_local FunctionMemo<Reads> memo;
    // A name is read outside `skip` when one of its reads is before or after it.
    const std::uint32_t from = skip ? skip.begin() - function.begin() : 0;
    const std::uint32_t to = skip ? skip.end() - function.begin() : 0;
    for (const auto& [name, at] : memo.get(function, reads_of)) {
        if (at.front() < from || at.back() >= to) s.read_outside.insert(name);
    }
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

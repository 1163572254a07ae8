// GM202 compile-skipped-default: the paths on which a default skipped under torch.compile meets
// a use that raises on None (see compile_skipped_default.hpp, raising_paths).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "compile_skipped_default.hpp"
#include "rules/support/body.hpp"

namespace graphmend::rules::compile_skipped {

using body::statements;

// `N is None`: N's name, or empty.
std::string none_test_name(const Node& n) {
    const Node e = syntax::without_parens(n);
    if (!e.is("comparison_operator") || e.child_count() != 3) return {};
    if (!e.child(0).is("identifier") || !e.child(1).is("is") || !e.child(2).is("none")) return {};
    return text(e.child(0));
}

void and_operands(const Node& n, std::vector<Node>& out) {
    const Node e = syntax::without_parens(n);
    if (e.is("boolean_operator") && e.child(1).is("and")) {
        and_operands(e.field("left"), out);
        and_operands(e.field("right"), out);
    } else {
        out.push_back(e);
    }
}

// The class whose method `def` is, or empty.
std::string owner_of(const Node& def) {
    for (Node p = def.parent(); p; p = p.parent()) {
        if (p.is("class_definition")) return text(p.field("name"));
        if (p.is("function_definition")) return {};
    }
    return {};
}

namespace {

constexpr int kMaxDepth = 3;

bool mentions(const Node& n, const std::string& name) {
    bool found = false;
    syntax::walk(n, [&](const Node& c) {
        if (found) return false;
        if (c.is("identifier") && c.text() == name) {
            const Node p = c.parent();
            // `x.name` and `f(name=...)` are not the variable
            if (!(p.is("attribute") && p.field("attribute") == c) && !(p.is("keyword_argument") && p.field("name") == c)) {
                found = true;
            }
        }
        return !found;
    });
    return found;
}

// A statement that runs straight on: no call, no store other than to a plain local, no
// jump, nothing that could change `self` or leave the block.
bool inert(const Node& s) {
    bool ok = s.is("expression_statement") || s.is("pass_statement");
    syntax::walk(s, [&](const Node& c) {
        if (!ok) return false;
        if (c.is("call") || c.is("await") || c.is("yield") || c.is("lambda") || c.is("named_expression")) ok = false;
        if (c.is("assignment") || c.is("augmented_assignment")) {
            if (!c.field("left").is("identifier")) ok = false;
        }
        return ok;
    });
    return ok;
}

// True when `n` is evaluated whenever the statement `stmt` (or the `if` condition) around it is.
bool unconditional(const Node& n, const Node& stmt) {
    Node prev = n;
    for (Node p = n.parent(); p && !(p == stmt); p = p.parent()) {
        if (p.is("lambda") || p.is("conditional_expression") || p.is("list_comprehension") ||
            p.is("set_comprehension") || p.is("dictionary_comprehension") || p.is("generator_expression")) {
            return false;
        }
        if (p.is("boolean_operator") && p.field("right") == prev) return false;
        prev = p;
    }
    return true;
}

bool raises_in(const Walk& w, const std::vector<Node>& body, const std::string& name, int depth);

// The parameter of `def` that the argument `arg` of `call` binds, or empty.
std::string parameter_for(const Node& def, const Node& call, const Node& arg) {
    std::vector<std::string> params;
    for (const Node& p : def.field("parameters").named_children()) {
        if (p.is("identifier")) {
            params.push_back(text(p));
        } else if (p.is("typed_parameter")) {
            params.push_back(text(p.named_children()[0]));
        } else if (p.is("default_parameter") || p.is("typed_default_parameter")) {
            params.push_back(text(p.field("name")));
        } else {
            break;  // *args, **kwargs, `/`, `*`: positions after it are not followed
        }
    }
    if (arg.parent().is("keyword_argument")) {
        const std::string k = text(arg.parent().field("name"));
        return std::find(params.begin(), params.end(), k) != params.end() ? k : std::string{};
    }
    std::size_t i = 0;
    for (const Node& a : call.field("arguments").named_children()) {
        if (a.is("comment")) continue;
        if (a == arg) break;
        if (a.is("list_splat") || a.is("dictionary_splat") || a.is("keyword_argument")) return {};
        ++i;
    }
    const bool method = !params.empty() && (params[0] == "self" || params[0] == "cls") &&
                        call.field("function").is("attribute");
    if (method) ++i;
    return i < params.size() ? params[i] : std::string{};
}

// True when evaluating `stmt` (or, for an `if`, its condition) raises when `name` is None:
// `name[...]`, `name.attr`, or `name` given to a project function that raises on it.
bool raises_at(const Walk& w, const Node& stmt, const Node& scope, const std::string& name, int depth) {
    bool raises = false;
    syntax::walk(scope, [&](const Node& c) {
        if (raises) return false;
        if (c.is("lambda") || c.is("function_definition") || c.is("class_definition")) return false;
        if (!c.is("identifier") || c.text() != name || !unconditional(c, stmt)) return true;
        const Node p = c.parent();
        if ((p.is("subscript") && p.field("value") == c) ||
            (p.is("attribute") && p.field("object") == c && p.field("attribute").text() != "__class__")) {
            raises = true;
            return false;
        }
        const Node arg = p.is("keyword_argument") ? p : c;
        if (depth < kMaxDepth && arg.parent().is("argument_list") && arg.parent().parent().is("call")) {
            const Node call = arg.parent().parent();
            const auto ref = w.ctx.project.callee(w.ctx.file, call, w.owner);
            if (ref && ref->file == w.ctx.file && ref->node.is("function_definition")) {
                const std::string param = parameter_for(ref->node, call, c);
                const Walk inner{w.ctx, owner_of(ref->node)};
                if (!param.empty() && raises_in(inner, statements(ref->node.field("body")), param, depth + 1)) {
                    raises = true;
                }
            }
        }
        return false;
    });
    return raises;
}

// True when running `body` from its start always raises on `name` being None, before any
// other use of `name`: the statements before the first mention of `name` are inert.
bool raises_in(const Walk& w, const std::vector<Node>& body, const std::string& name, int depth) {
    for (const Node& s : body) {
        if (!mentions(s, name)) {
            if (!inert(s)) return false;
            continue;
        }
        if (s.is("if_statement")) {
            const Node cond = s.field("condition");
            return mentions(cond, name) && raises_at(w, s, cond, name, depth);
        }
        if (!s.is("expression_statement") && !s.is("return_statement")) return false;
        return raises_at(w, s, s, name, depth);
    }
    return false;
}

// A test whose value cannot change between two statements with nothing in between:
// attribute chains of `self`, literals, comparisons, `not`, `and`, `or`.
bool static_test(const Node& n) {
    const Node e = syntax::without_parens(n);
    if (e.is("attribute")) {
        Node o = e;
        while (o.is("attribute")) o = o.field("object");
        return o.is("identifier") && o.text() == "self";
    }
    if (e.is("string") || e.is("integer") || e.is("float") || e.is("true") || e.is("false") || e.is("none")) {
        for (const Node& c : e.named_children()) {
            if (c.is("interpolation")) return false;  // an f-string's fields
        }
        return true;
    }
    if (e.is("not_operator")) return static_test(e.field("argument"));
    if (e.is("boolean_operator")) return static_test(e.field("left")) && static_test(e.field("right"));
    if (e.is("comparison_operator") || e.is("tuple")) {
        for (const Node& c : e.named_children()) {
            if (!c.is("comment") && !static_test(c)) return false;
        }
        return true;
    }
    return false;
}

std::string conjunction(const std::vector<std::string>& parts) {
    return parts.empty() ? std::string("True") : fmt::format("{}", fmt::join(parts, " and "));
}

enum class NoneTest { IsNone, NotNone, Other };

// How a clause test reads `name`: exactly `name is None`, `name is not None` (alone or as an
// operand of `and`: false when None), or otherwise.
NoneTest none_test_of(const Node& test, const std::string& name) {
    const Node e = syntax::without_parens(test);
    if (e.is("boolean_operator") && e.child(1).is("and")) {
        std::vector<Node> ops;
        and_operands(e, ops);
        for (const Node& o : ops) {
            if (none_test_of(o, name) == NoneTest::NotNone) return NoneTest::NotNone;
        }
        return NoneTest::Other;
    }
    if (none_test_name(e) == name) return NoneTest::IsNone;
    if (e.is("comparison_operator") && e.child_count() == 4 && e.child(0).is("identifier") && e.child(0).text() == name &&
        e.child(1).is("is") && e.child(2).is("not") && e.child(3).is("none")) {
        return NoneTest::NotNone;
    }
    if (e.is("comparison_operator") && e.child_count() == 3 && e.child(0).is("identifier") &&
        e.child(0).text() == name && e.child(1).is("is not") && e.child(2).is("none")) {
        return NoneTest::NotNone;
    }
    return NoneTest::Other;
}

}  // namespace

// The paths below the `if` at `stmts[at]` on which `name` meets a use that raises on None.
Paths raising_paths(const Walk& w, const std::vector<Node>& stmts, std::size_t at, const std::string& name) {
    Paths out;
    std::string blocked;  // a statement between the default and the use that is not inert
    for (std::size_t i = at + 1; i < stmts.size(); ++i) {
        const Node& s = stmts[i];
        if (!mentions(s, name)) {
            if (inert(s)) continue;
            if (!s.is("expression_statement")) return out;  // it may leave the block
            if (blocked.empty()) {
                blocked = fmt::format("the statement at line {} between the default and its use may change "
                                      "what the tests on the way read",
                                      s.position().line);
            }
            continue;
        }
        if (!blocked.empty()) {
            const Paths found = raising_paths(w, stmts, i - 1, name);
            Paths refused;
            if (found.always || !found.conditions.empty() || !found.refused.empty()) {
                refused.refused = blocked;
                refused.line = found.line;
            }
            return refused;
        }
        if (!s.is("if_statement")) {
            if (raises_in(w, {s}, name, 0)) {
                out.always = true;
                out.line = static_cast<int>(s.position().line);
            }
            return out;
        }
        if (mentions(s.field("condition"), name)) {
            if (raises_in(w, {s}, name, 0)) {
                out.always = true;
                out.line = static_cast<int>(s.position().line);
            }
            return out;
        }
        // The clauses in order. `before` holds the negations of the earlier tests, `open` is
        // false once a clause is known to be taken when `name` is None (`elif name is None:`)
        // or a test reads `name` in a way not followed.
        std::vector<std::string> before;
        bool open = true;
        bool all_static = true;
        auto clause = [&](const Node& test, const Node& body) {
            if (!open) return;
            std::vector<std::string> path = before;
            if (test && mentions(test, name)) {
                const NoneTest t = none_test_of(test, name);
                if (t == NoneTest::NotNone) return;  // not taken when None; its negation holds
                if (t != NoneTest::IsNone) {
                    open = false;
                    return;
                }
                open = false;  // taken when None (if the earlier tests fail): no later clause is
            } else if (test) {
                all_static = all_static && static_test(test);
                path.push_back(fmt::format("({})", text(syntax::without_parens(test))));
            }
            if (raises_in(w, statements(body), name, 0)) {
                if (!all_static && out.refused.empty()) {
                    out.refused = fmt::format("the path to the use of `{}` at line {} is chosen by a test that is not "
                                              "a static attribute test of `self`",
                                              name, body.position().line);
                } else if (all_static) {
                    out.conditions.push_back(conjunction(path));
                }
                if (out.line == 0) out.line = static_cast<int>(body.position().line);
            }
            if (test && open) before.push_back(fmt::format("not ({})", text(syntax::without_parens(test))));
        };
        clause(s.field("condition"), s.field("consequence"));
        for (const Node& c : s.children()) {
            if (c.is("elif_clause")) clause(c.field("condition"), c.field("consequence"));
            if (c.is("else_clause")) clause(Node{}, c.field("body"));
        }
        return out;
    }
    return out;
}

}  // namespace graphmend::rules::compile_skipped

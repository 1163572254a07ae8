// Rule GM202 compile-skipped-default.
//
// What it does: finds a default that the code skips while Dynamo traces it,
//     if N is None and not is_torchdynamo_compiling():
//         N = DEFAULT
// where the code below, on a path chosen by static tests (attributes of `self`, literals),
// then uses N in a way that raises on None: `N[...]`, `N.attr`, or N passed to a function
// of the project whose first use of that parameter is one of those (transformers 4.x
// LongT5Stack.forward and SwitchTransformersStack.forward). It rewrites the compile test
// so that the default is made on those paths under torch.compile too:
//     if N is None and (not is_torchdynamo_compiling() or (PATH)):
//
// Why: traced, N stays None and the use raises inside the trace. Dynamo finds no handler
// for it, abandons the whole frame ("Observed exception", GB0088, torch 2.12) and runs it
// eagerly, where the compile test is false and the default is made: every module the
// frame calls is then compiled as a graph of its own.
//
// Fix safety: safe. Eagerly the test is unchanged (`not is_torchdynamo_compiling()` is
// true and short-circuits). Under torch.compile, on the paths the rewrite adds, the
// original never ran its traced form: Dynamo ran the frame eagerly, which makes the
// default. The fixed code makes the same default inside the trace. On every other path
// (N given, or a path that accepts None) the test is false as before. The path tests are
// evaluated at the `if` instead of below it: they are attribute reads of `self` and
// literals, with no call and no store in between, so they have the same values there.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "graphmend/rule.hpp"
#include "rules/support/site.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {

const RuleInfo kInfo{"GM202", "compile-skipped-default",
                     "a default skipped under torch.compile that the traced code needs, made there too",
                     {.traces_abandoned_frame = true}};

constexpr int kMaxDepth = 3;

std::string last_part(std::string_view dotted) {
    const auto dot = dotted.rfind('.');
    return std::string(dot == std::string_view::npos ? dotted : dotted.substr(dot + 1));
}

// The call in `not is_torchdynamo_compiling()` (torch.compiler.is_compiling(),
// torch._dynamo.is_compiling(), torch.compiler.is_dynamo_compiling()), or a null node.
Node compile_test_call(const Node& n) {
    const Node e = syntax::without_parens(n);
    if (!e.is("not_operator")) return {};
    const Node call = syntax::without_parens(e.field("argument"));
    if (!call.is("call") || !call.field("arguments").named_children().empty()) return {};
    const std::string name = last_part(call.field("function").text());
    const bool named = name == "is_torchdynamo_compiling" || name == "is_compiling" || name == "is_dynamo_compiling";
    return named ? call : Node{};
}

// True when Dynamo skips the frame of `fn` ("skipping because no torch.*": torch's
// has_tensor_in_frame, torch 2.12.1 and 2.15.0): `fn` takes no parameters, and its module
// binds no global to torch or a torch.* module, so none of the names its code reads is one.
// That is transformers' `is_torchdynamo_compiling` (transformers/utils/import_utils.py imports
// torch inside its functions), whatever the folder holding the package is named.
bool skipped_for_no_torch(const analysis::ModuleIndex& module, const Node& fn) {
    if (const Node params = fn.field("parameters"); params && !params.named_children().empty()) return false;
    if (module.assigned.contains("torch") || module.functions.contains("torch") || module.classes.contains("torch")) {
        return false;
    }
    return std::none_of(module.imports.begin(), module.imports.end(), [](const analysis::Import& imp) {
        const std::string full = imp.name.empty() ? imp.module : imp.module + "." + imp.name;
        return imp.local == "torch" || (imp.level == 0 && (full == "torch" || full.starts_with("torch.")));
    });
}

// True when the compile test returns False when Dynamo, having abandoned the frame, runs it
// eagerly (its callback still intercepts the frames the eager run calls):
// - torch's own tests: Dynamo skips torch's files ("in skipfiles");
// - transformers' `is_torchdynamo_compiling`: its module (transformers/utils/import_utils.py)
//   binds no global `torch`, so Dynamo skips the helper's frame ("skipping because no
//   torch.*", torch 2.12.1 with transformers 4.52.4 and torch 2.15.0 with 5.24.0).
// A project's own wrapper that Dynamo traces returns True there: the default is not made
// and the original raises, so it is not known.
bool false_when_abandoned(const Context& ctx, const Node& call) {
    const Node fn = call.field("function");
    const std::string ext = ctx.project.external_name(ctx.file, fn);
    if (ext == "torch.compiler.is_compiling" || ext == "torch._dynamo.is_compiling" ||
        ext == "torch.compiler.is_dynamo_compiling" || ext == "torch._utils.is_compiling" ||
        ext == "torch._dynamo.external_utils.is_compiling") {
        return true;
    }
    if (ext.rfind("transformers.", 0) == 0 && last_part(ext) == "is_torchdynamo_compiling") return true;
    if (const auto ref = ctx.project.callee(ctx.file, call, {})) {
        return ref->node.is("function_definition") && ref->node.field("name").text() == "is_torchdynamo_compiling" &&
               skipped_for_no_torch(ctx.project.files()[ref->file].index, ref->node);
    }
    return false;
}

// A function of the project whose body (past its docstring) is `return TEST()`, TEST a
// compile test: a wrapper.
bool wraps_compile_test(const Context& ctx, const Node& call) {
    const auto ref = ctx.project.callee(ctx.file, call, {});
    if (!ref || !ref->node.is("function_definition")) return false;
    std::vector<Node> body;
    for (const Node& s : ref->node.field("body").named_children()) {
        if (s.is("comment")) continue;
        if (body.empty() && s.is("expression_statement") && s.named_children().size() == 1 &&
            s.named_children()[0].is("string")) {
            continue;
        }
        body.push_back(s);
    }
    if (body.size() != 1 || !body[0].is("return_statement") || body[0].named_children().size() != 1) return false;
    const Node r = syntax::without_parens(body[0].named_children()[0]);
    if (!r.is("call") || !r.field("arguments").named_children().empty()) return false;
    const std::string name = last_part(r.field("function").text());
    return name == "is_torchdynamo_compiling" || name == "is_compiling" || name == "is_dynamo_compiling";
}

Node compile_test_in(const Context& ctx, const Node& n) {
    if (Node c = compile_test_call(n)) return c;
    const Node e = syntax::without_parens(n);
    if (!e.is("not_operator")) return {};
    const Node call = syntax::without_parens(e.field("argument"));
    if (call.is("call") && call.field("arguments").named_children().empty() && wraps_compile_test(ctx, call)) {
        return call;
    }
    return {};
}

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

std::vector<Node> statements(const Node& block) {
    std::vector<Node> out;
    for (const Node& s : block.named_children()) {
        if (!s.is("comment")) out.push_back(s);
    }
    return out;
}

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

// The class whose method `def` is, or empty.
std::string owner_of(const Node& def) {
    for (Node p = def.parent(); p; p = p.parent()) {
        if (p.is("class_definition")) return text(p.field("name"));
        if (p.is("function_definition")) return {};
    }
    return {};
}

struct Walk {
    const Context& ctx;
    std::string owner;
};

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

struct Paths {
    std::vector<std::string> conditions;  // each a path on which the use raises
    bool always = false;                  // the use raises on every path
    std::string refused;                  // a raising path exists, but its test is not static
    int line = 0;                         // of the first raising use
};

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

class CompileSkippedDefaultRule final : public Rule {
public:
    [[nodiscard]] const RuleInfo& info() const override { return kInfo; }

    void check(const Context& ctx, std::vector<Site>& out) const override {
        for_each_in_scope(ctx, [&](const Node& n, const Node& def) {
            if (n.is("if_statement")) {
                if (auto s = match(ctx, def, n)) out.push_back(std::move(*s));
            }
            return !n.is("lambda");
        });
    }

private:
    static std::optional<Site> match(const Context& ctx, const Node& def, const Node& stmt) {
        for (const Node& c : stmt.children()) {
            if (c.is("elif_clause") || c.is("else_clause")) return std::nullopt;
        }
        std::vector<Node> operands;
        and_operands(stmt.field("condition"), operands);
        std::string name;
        Node compiling;
        for (const Node& o : operands) {
            if (name.empty()) name = none_test_name(o);
            if (!compiling && compile_test_in(ctx, o)) compiling = o;
        }
        if (name.empty() || !compiling) return std::nullopt;
        bool assigns = false;
        for (const Node& s : statements(stmt.field("consequence"))) {
            const Node a = s.is("expression_statement") && s.named_children().size() == 1 ? s.named_children()[0] : Node{};
            if (a.is("assignment") && a.field("left").is("identifier") && a.field("left").text() == name) assigns = true;
        }
        if (!assigns) return std::nullopt;
        const std::vector<Node> siblings = statements(stmt.parent());
        std::size_t at = 0;
        while (at < siblings.size() && !(siblings[at] == stmt)) ++at;
        const Walk w{ctx, owner_of(def)};
        const Paths paths = raising_paths(w, siblings, at, name);
        if (!paths.always && paths.conditions.empty() && paths.refused.empty()) return std::nullopt;

        Site site = new_site(kInfo, compiling, one_line(fmt::format("{} skipped under torch.compile", name)), "GB0088");
        if (!paths.always && paths.conditions.empty()) {
            site.reason = paths.refused;
            return site;
        }
        const Node test = compile_test_in(ctx, compiling);
        if (!false_when_abandoned(ctx, test)) {
            site.reason = fmt::format(
                "`{}` is not torch's or transformers' compile test: when Dynamo abandons the frame and runs it "
                "eagerly, a wrapper it traces still returns True, so the original may raise there rather than "
                "make the default",
                test.field("function").text());
            return site;
        }
        const std::string added = paths.always ? std::string("True") : fmt::format("{}", fmt::join(paths.conditions, " or "));
        site.fix = Fix{{{compiling.begin(), compiling.end(), fmt::format("({} or {})", compiling.text(), added)}},
                       Applicability::Safe,
                       {}};
        site.detail = fmt::format(
            "traced, `{0}` stays None and its use at line {1} raises, so Dynamo abandons the frame and runs it "
            "eagerly; the default is now made when tracing too, where that use is reached",
            name, paths.line);
        return site;
    }
};

}  // namespace

std::unique_ptr<Rule> make_compile_skipped_default_rule() { return std::make_unique<CompileSkippedDefaultRule>(); }

}  // namespace graphmend::rules

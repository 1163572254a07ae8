// The value analysis: what an isinstance test says of a name's kinds (isinstance_narrowing),
// and what a test is while Dynamo traces (value_when_traced, untraced_parts). See
// include/graphmend/values.hpp.
#include "graphmend/liveness.hpp"
#include "values_internal.hpp"

#include <set>
#include <string_view>

namespace graphmend::analysis {

using syntax::Node;

namespace {

// The kinds `isinstance(x, T)` admits for one class T, by its spelling; 0 when unknown.
std::uint16_t kinds_of_class(std::string_view t) {
    static const std::set<std::string_view> kTensors{"torch.Tensor", "Tensor", "torch.nn.Parameter", "nn.Parameter",
                                                     "Parameter", "torch.FloatTensor", "torch.LongTensor",
                                                     "torch.BoolTensor", "torch.HalfTensor", "torch.IntTensor"};
    static const std::set<std::string_view> kNumbers{"int", "float", "bool", "complex", "numbers.Number", "Number",
                                                     "numbers.Real", "numbers.Integral", "numbers.Complex"};
    if (kTensors.contains(t)) return kTensor;
    if (kNumbers.contains(t)) return kNumber | kBool;
    if (t == "str") return kStr;
    if (t == "torch.Size") return kSize;
    if (t == "tuple" || t == "list" || t == "Sequence" || t == "collections.abc.Sequence" || t == "typing.Sequence") {
        return kSeq | kSize;
    }
    if (t == "dict" || t == "set" || t == "Mapping" || t == "collections.abc.Mapping") return kSeq | kOther;
    if (t == "nn.Module" || t == "torch.nn.Module") return kModule;
    // numpy's arrays and scalars (`np.ndarray`, `np.floating`): Python values to Dynamo, never tensors.
    if (t.starts_with("np.") || t.starts_with("numpy.")) return kOther;
    return 0;
}

// `isinstance(NAME, T)` or `isinstance(NAME, (T1, T2))`: NAME and the kinds it admits, when
// every class is known.
std::optional<std::pair<std::string, std::uint16_t>> isinstance_test(const Node& test) {
    const Node e = syntax::without_parens(test);
    if (!e.is("call") || e.field("function").text() != "isinstance") return std::nullopt;
    const auto args = e.field("arguments").named_children();
    if (args.size() != 2 || !args[0].is("identifier")) return std::nullopt;
    std::vector<Node> classes;
    const Node t = syntax::without_parens(args[1]);
    if (t.is("tuple")) {
        classes = t.named_children();
    } else {
        classes.push_back(t);
    }
    std::uint16_t kinds = 0;
    for (const Node& c : classes) {
        const std::uint16_t k = kinds_of_class(c.text());
        if (k == 0) return std::nullopt;
        kinds |= k;
    }
    return std::make_pair(std::string(args[0].text()), kinds);
}


}  // namespace

// For the reads of a function narrowed by an enclosing isinstance test, the kinds they may
// have: read's start byte -> kinds kept. The consequence of `if isinstance(x, T)` (or of a
// conjunct of an `and`) keeps T's kinds; the elif/else clauses of `if isinstance(x, T)`,
// the statements after it when it has none and its consequence always leaves (`if
// isinstance(x, T): return ...`), and the consequence of `if not isinstance(x, T)` drop
// them (the negated test the other way). A read after the name is bound again is not
// narrowed.
std::map<std::uint32_t, std::uint16_t> isinstance_narrowing(const Node& fn) {
    std::map<std::uint32_t, std::uint16_t> out;
    constexpr std::uint16_t kAll = 0xFFFF;
    auto mark = [&](const Node& part, const std::string& name, std::uint16_t keep) {
        syntax::walk(part, [&](const Node& n) {
            if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
            if (n.is("identifier") && n.text() == name && analysis::is_read(n)) {
                auto [it, fresh] = out.emplace(n.begin(), kAll);
                it->second &= keep;
            }
            return true;
        });
    };
    // The reads of `name` in a clause (an elif's test, then its block; a block), statement by
    // statement, until one binds it: a plain assignment's own value still reads the old one.
    auto narrow_parts = [&](const std::vector<Node>& parts, const std::string& name, std::uint16_t keep) {
        for (const Node& part : parts) {
            if (!analysis::binds(part, name)) {
                mark(part, name, keep);
                continue;
            }
            if (part.is("expression_statement") && part.named_children().size() == 1 &&
                part.named_children()[0].is("assignment")) {
                Node right = part.named_children()[0];
                while (right.is("assignment")) right = right.field("right");
                if (right && !analysis::binds(right, name)) mark(right, name, keep);
            }
            // An `if` that binds it in a branch: its test still reads the old value.
            if (part.is("if_statement") && !analysis::binds(part.field("condition"), name)) {
                mark(part.field("condition"), name, keep);
            }
            break;
        }
    };
    auto narrow = [&](const Node& region, const std::string& name, std::uint16_t keep) {
        std::vector<Node> parts;
        if (region.is("elif_clause")) parts.push_back(region.field("condition"));
        const Node block = region.is("block")         ? region
                           : region.is("elif_clause") ? region.field("consequence")
                                                      : region.field("body");
        for (const Node& stmt : block.named_children()) parts.push_back(stmt);
        narrow_parts(parts, name, keep);
    };
    // The statements after an `if` (in its block) that run only when its test was false: the
    // `if` has no elif or else and its consequence always leaves (it ends in a return, raise,
    // continue or break).
    auto after_exit = [](const Node& if_statement) {
        std::vector<Node> rest;
        for (const Node& c : if_statement.children()) {
            if (c.is("elif_clause") || c.is("else_clause")) return rest;
        }
        const auto body = if_statement.field("consequence").named_children();
        if (body.empty()) return rest;
        const Node last = body.back();
        if (!last.is("return_statement") && !last.is("raise_statement") && !last.is("continue_statement") &&
            !last.is("break_statement")) {
            return rest;
        }
        bool seen = false;
        for (const Node& stmt : if_statement.parent().named_children()) {
            if (seen) rest.push_back(stmt);
            seen = seen || stmt == if_statement;
        }
        return rest;
    };
    syntax::walk(fn.field("body"), [&](const Node& n) {
        if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
        if (!n.is("if_statement")) return true;
        // The clauses in order: (test, consequence) for the `if` and each `elif`, then the else.
        std::vector<std::pair<Node, Node>> clauses{{n.field("condition"), n.field("consequence")}};
        std::vector<Node> later;  // each clause's node after the first, in order (elif and else)
        for (const Node& alt : n.children()) {
            if (alt.is("elif_clause")) clauses.emplace_back(alt.field("condition"), alt.field("consequence"));
            if (alt.is("elif_clause") || alt.is("else_clause")) later.push_back(alt);
        }
        for (std::size_t i = 0; i < clauses.size(); ++i) {
            const Node cond = syntax::without_parens(clauses[i].first);
            // The conjuncts of the test: each positive or negated isinstance narrows.
            std::vector<std::pair<Node, bool>> tests;  // (isinstance call, negated)
            std::vector<Node> todo{cond};
            while (!todo.empty()) {
                const Node c = syntax::without_parens(todo.back());
                todo.pop_back();
                if (c.is("boolean_operator") && c.field("operator").text() == "and") {
                    todo.push_back(c.field("left"));
                    todo.push_back(c.field("right"));
                } else if (c.is("not_operator")) {
                    tests.emplace_back(c.field("argument"), true);
                } else {
                    tests.emplace_back(c, false);
                }
            }
            const bool single = !cond.is("boolean_operator");
            for (const auto& [call, negated] : tests) {
                const auto t = isinstance_test(call);
                if (!t) continue;
                const auto& [name, kinds] = *t;
                narrow(clauses[i].second, name, negated ? static_cast<std::uint16_t>(~kinds) : kinds);
                // The clauses after this one run when its whole test is false: known for a single test.
                if (!single) continue;
                const std::uint16_t other = negated ? kinds : static_cast<std::uint16_t>(~kinds);
                for (std::size_t j = i; j < later.size(); ++j) narrow(later[j], name, other);
                // `if isinstance(x, T): return ...`: below it, x is not a T.
                if (clauses.size() == 1) narrow_parts(after_exit(n), name, other);
            }
        }
        return true;
    });
    return out;
}

std::optional<bool> value_when_traced(const Node& test) {
    const Node e = syntax::without_parens(test);
    if (e.is("not_operator")) {
        const auto v = value_when_traced(e.field("argument"));
        return v ? std::optional<bool>(!*v) : std::nullopt;
    }
    if (e.is("boolean_operator")) {
        const auto left = value_when_traced(e.field("left"));
        const bool is_and = e.field("operator").text() == "and";
        if (left && *left != is_and) return left;  // false and ..., true or ...: settled
        if (left) return value_when_traced(e.field("right"));
        return std::nullopt;
    }
    if (!e.is("call") || !e.field("arguments").named_children().empty()) return std::nullopt;
    const std::string_view fn = e.field("function").text();
    const auto dot = fn.rfind('.');
    const std::string_view name = dot == std::string_view::npos ? fn : fn.substr(dot + 1);
    if (name == "is_compiling" || name == "is_torchdynamo_compiling" || name == "is_dynamo_compiling") return true;
    // torch.jit.is_scripting() and torch.jit.is_tracing() are False under Dynamo (measured,
    // torch 2.12.1: `if torch.jit.is_tracing(): ...` compiles with fullgraph=True and runs the
    // else branch).
    if (name == "is_scripting" || name == "is_tracing") return false;
    return std::nullopt;
}

std::vector<Node> untraced_parts(const Node& if_statement) {
    if (!if_statement.is("if_statement")) return {};
    const auto v = value_when_traced(if_statement.field("condition"));
    if (!v) return {};
    std::vector<Node> parts{if_statement.field("condition")};
    if (!*v) {
        parts.push_back(if_statement.field("consequence"));
    } else {
        for (const Node& alt : if_statement.children()) {
            if (alt.is("elif_clause") || alt.is("else_clause")) parts.push_back(alt);
        }
    }
    return parts;
}

}  // namespace graphmend::analysis

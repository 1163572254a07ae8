// The loop body of a span loop: its writes and tests, in their elementwise spelling (see
// span_loop_internal.hpp, and span_loop.cpp for what is proven).
#include <fmt/format.h>

#include "graphmend/emit.hpp"
#include "graphmend/knowledge.hpp"
#include "rules/support/body.hpp"
#include "rules/support/site.hpp"
#include "span_loop_internal.hpp"

namespace graphmend::rules::span_loop_detail {

using body::assignment_of;
using body::statements;

// The text without blanks (spaces, tabs, line breaks): `prev + 1` and `prev+1` compare equal.
std::string squeezed(std::string_view t) {
    std::string out;
    for (const char c : t) {
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\\') out.push_back(c);
    }
    return out;
}

// The indices of `X[a, b, c]`, comments left out.
std::vector<Node> indices_of(const Node& subscript) {
    std::vector<Node> out;
    for (const Node& i : subscript.named_children()) {
        if (!(i == subscript.field("value")) && !i.is("comment")) out.push_back(i);
    }
    if (out.size() == 1 && syntax::without_parens(out[0]).is("tuple")) out = syntax::without_parens(out[0]).named_children();
    return out;
}

// An operand of a test: names, numbers, attributes of names other than the separator's,
// and `+`, `-`, `*` of them: nothing that can raise where the original would not evaluate
// it (the static form evaluates every test at every position, where `and`/`or` skipped).
// `mentions` is set when the separator's row, column or PREV is read.
bool Matcher::operand(const Node& e, bool& mentions) {
    const Node n = syntax::without_parens(e);
    if (n.is("identifier")) {
        if (separator_name(n.text())) {
            mentions = true;
            return true;
        }
        if (n.text() == idx || n.text() == loop_var) return false;
        free.push_back(n);
        return true;
    }
    if (n.is("integer")) return true;
    if (n.is("attribute")) {
        const Node o = n.field("object");
        if (!o.is("identifier") || separator_name(o.text()) || o.text() == idx || o.text() == loop_var) return false;
        free.push_back(o);
        return true;
    }
    if (n.is("unary_operator")) return n.field("operator").text() == "-" && operand(n.field("argument"), mentions);
    if (n.is("binary_operator")) {
        const std::string_view op = n.field("operator").text();
        return (op == "+" || op == "-" || op == "*") && operand(n.field("left"), mentions) &&
               operand(n.field("right"), mentions);
    }
    return false;
}

// A test in its elementwise spelling, or "" (with `why` set).
std::string Matcher::test(const Node& e) {
    const Node n = syntax::without_parens(e);
    if (n.is("boolean_operator")) {
        const std::string l = test(n.field("left"));
        const std::string r = test(n.field("right"));
        if (l.empty() || r.empty()) return "";
        return fmt::format("({}) {} ({})", l, n.field("operator").text() == "and" ? "&" : "|", r);
    }
    if (n.is("not_operator")) {
        const std::string a = test(n.field("argument"));
        return a.empty() ? "" : fmt::format("~({})", a);
    }
    if (n.is("comparison_operator") && n.named_children().size() == 2 && n.child_count() == 3) {
        const Node op = n.child(1);
        bool mentions = false;  // a tensor comparison, so `&`, `|` and `~` act on bools
        if ((op.is("==") || op.is("!=") || op.is("<") || op.is("<=") || op.is(">") || op.is(">=")) &&
            operand(n.named_children()[0], mentions) && operand(n.named_children()[1], mentions) && mentions) {
            return text(n);
        }
    }
    fail(n, fmt::format("the test `{}` is not a comparison of the separator's row or columns with numbers and "
                        "names (`+`, `-`, `*`; and, or, not)",
                        one_line(n.text())));
    return "";
}

// `PREV + 1 : COL + 1`.
bool Matcher::span(const Node& s) {
    if (prev.empty() || !s.is("slice")) return false;
    return squeezed(s.text()) == fmt::format("{}+1:{}+1", prev, col);
}

// A write `X[ROW, ...] = VALUE` under `guard`.
bool Matcher::write(const Node& a, const std::string& guard) {
    const Node left = a.field("left");
    const Node value = left.field("value");
    if (!value.is("identifier")) return fail(a, "a write into something other than a name");
    const std::string x = text(value);
    if (x == idx || x == row || x == col || x == prev || x == loop_var) {
        return fail(a, fmt::format("`{}` is written in the loop", x));
    }
    const auto ix = indices_of(left);
    if ((ix.size() != 2 && ix.size() != 3) || text(syntax::without_parens(ix[0])) != row) {
        return fail(a, fmt::format("the write into `{}` is not indexed `[{}, ...]` with 1 or 2 more indices", x, row));
    }
    bool points = true;
    bool spans = true;
    for (std::size_t i = 1; i < ix.size(); ++i) {
        points = points && text(syntax::without_parens(ix[i])) == col;
        spans = spans && span(ix[i]);
    }
    if (!points && !spans) {
        return fail(a, fmt::format("the write into `{}` is indexed by neither `{}` nor `{} + 1 : {} + 1`", x, col,
                                   prev.empty() ? "PREV" : prev, col));
    }
    std::string kind = fmt::format("{}{}", points ? "p" : "s", ix.size());
    const Node r = syntax::without_parens(a.field("right"));
    std::string v;
    // Literals that masked_fill_ converts to any dtype as the index store does (bools, and
    // ints of -128..127: past these, float16 overflows to inf in the store but raises in
    // masked_fill_, and int32 overflow raises even where the loop writes nothing).
    const Node digits = r.is("unary_operator") && r.field("operator").text() == "-" ? r.field("argument") : r;
    if (r.is("true") || r.is("false")) {
        v = text(r);
    } else if (digits.is("integer")) {
        v = squeezed(r.text());
        const auto n = syntax::int_value(r);
        if (v.find_first_not_of("-0123456789") != std::string::npos || !n || *n < -128 || *n > 127) {
            return fail(a, fmt::format("the value written into `{}` is an int outside -128..127 (or not decimal)",
                                       x));
        }
    } else if (r.is("call") && ctx.project.external_name(ctx.file, r.field("function")) == "torch.arange" &&
               kind == "s2") {
        std::vector<Node> positional;
        for (const Node& arg : r.field("arguments").named_children()) {
            if (arg.is("comment")) continue;
            if (arg.is("keyword_argument")) {
                const std::string_view k = arg.field("name").text();
                if (k != "device") {
                    return fail(a, fmt::format("torch.arange with `{}=`", k));
                }
                continue;
            }
            positional.push_back(arg);
        }
        const std::string length = fmt::format("{}-{}", col, prev);
        const bool from_zero = (positional.size() == 1 && squeezed(positional[0].text()) == length) ||
                               (positional.size() == 2 && positional[0].text() == "0" &&
                                squeezed(positional[1].text()) == length);
        if (!from_zero) {
            return fail(a, fmt::format("the write into `{}` is a torch.arange other than `torch.arange(0, {} - {})`",
                                       x, col, prev));
        }
        kind = "s2a";
        v = "None";
        raises = true;
    } else {
        return fail(a, fmt::format("the value written into `{}` is not a bool, an int or torch.arange(0, {} - {})",
                                   x, col, prev.empty() ? "PREV" : prev));
    }
    targets.insert(x);
    stores.push_back(emit::tuple({x, emit::string(kind), v, guard.empty() ? "True" : guard}));
    return true;
}

// `a & b`, either may be "" (true).
std::string Matcher::conjoin(const std::string& a, const std::string& b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    return fmt::format("{} & {}", a, b);
}

bool Matcher::block(const std::vector<Node>& steps, const std::string& guard) {
    for (const Node& s : steps) {
        if (s.is("pass_statement")) continue;
        if (s.is("if_statement")) {
            std::string others;  // the tests before this clause, all false
            std::vector<std::pair<Node, Node>> clauses{{s.field("condition"), s.field("consequence")}};
            Node otherwise;
            for (const Node& c : s.named_children()) {
                if (c.is("elif_clause")) clauses.emplace_back(c.field("condition"), c.field("consequence"));
                if (c.is("else_clause")) otherwise = c.field("body");
            }
            for (const auto& [cond, body] : clauses) {
                const std::string t = test(cond);
                if (t.empty()) return false;
                if (!block(statements(body), conjoin(guard, conjoin(others, fmt::format("({})", t))))) return false;
                others = conjoin(others, fmt::format("~({})", t));
            }
            if (otherwise && !block(statements(otherwise), conjoin(guard, others))) return false;
            continue;
        }
        const Node a = assignment_of(s);
        if (!a || a.field("type") || !a.field("left").is("subscript")) {
            return fail(s, "a statement in the loop other than a write `X[ROW, ...] = VALUE` or an `if` of them");
        }
        if (!write(a, guard)) return false;
    }
    return true;
}

}  // namespace graphmend::rules::span_loop_detail

// Matching expert dispatch by slices of sorted rows (see src/rules/gm501_static_expert_dispatch/split_dispatch.hpp,
// SortedSlices): the form of DeepSeek-V2/V3's Hub remote code (`moe_infer`).
//
// The static form keeps the counts a tensor (no read-out), runs each expert on every row of X
// instead of on its slice X[A:E], and gives each row the result of the expert whose slice held
// it (the runtime's join, as for split sizes). It equals the loop when:
//   - the counts S reach nothing but the loop, whose running bounds A and E are read only to
//     slice X[A:E] (A starts at 0 and moves to E after each expert), and the count N only
//     to compute E and to skip an expert with no rows (an expert with no rows owns no row
//     of the join: running it changes nothing);
//   - X is bound before the read-out and not after it, so every slice is a slice of one tensor,
//     consecutive and in order: the slices of the loop are those of X.split(S);
//   - the work on each slice is row-wise (rowwise.cpp) and ends in `O.append(EXPR)`, and O is
//     read only by the concatenation `torch.cat(O, dim=0)` after the loop (and `len(O)`
//     beside it, which the static form makes the number of experts).
#include <fmt/format.h>

#include <algorithm>

#include "graphmend/liveness.hpp"
#include "rules/support/site.hpp"
#include "split_dispatch.hpp"
#include "rules/support/body.hpp"
#include "rules/support/rowwise.hpp"

namespace graphmend::rules {

using syntax::Node;

using body::assignment_of;
using body::inside;
using body::occurrences;
using body::statements;

namespace {

// `T.cpu().numpy()`, `T.numpy()`, `T.tolist()`, `T.cpu().tolist()` (no arguments): T, or invalid.
Node readout_tensor(const Node& e) {
    const Node call = syntax::without_parens(e);
    if (!call.is("call") || !call.field("arguments").named_children().empty()) return {};
    const Node fn = call.field("function");
    if (!fn.is("attribute")) return {};
    const std::string_view m = fn.field("attribute").text();
    if (m != "numpy" && m != "tolist") return {};
    Node obj = fn.field("object");
    if (obj.is("call") && obj.field("arguments").named_children().empty() && obj.field("function").is("attribute") &&
        obj.field("function").field("attribute").text() == "cpu") {
        obj = obj.field("function").field("object");
    }
    return obj.is("identifier") ? obj : Node();
}

// `E = A + N` or `E = N + A`: {E, A}, or empty strings.
std::pair<std::string, std::string> end_of(const Node& stmt, const std::string& count) {
    const Node a = assignment_of(stmt);
    if (!a || !a.field("left").is("identifier")) return {};
    const Node r = syntax::without_parens(a.field("right"));
    if (!r.is("binary_operator") || r.field("operator").text() != "+") return {};
    const Node l = r.field("left");
    const Node rr = r.field("right");
    if (!l.is("identifier") || !rr.is("identifier")) return {};
    if (rr.text() == count && l.text() != count) return {text(a.field("left")), text(l)};
    if (l.text() == count && rr.text() != count) return {text(a.field("left")), text(rr)};
    return {};
}

// `X[A:E]` with X a name: X, or "".
std::string slice_rows(const Node& n, const std::string& start, const std::string& end) {
    if (!n.is("subscript") || !n.field("value").is("identifier")) return "";
    std::vector<Node> parts;
    for (const Node& i : n.named_children()) {
        if (!(i == n.field("value")) && !i.is("comment")) parts.push_back(i);
    }
    if (parts.size() != 1 || !parts[0].is("slice")) return "";
    const auto bounds = parts[0].named_children();
    const std::string_view t = parts[0].text();
    if (bounds.size() != 2 || bounds[0].text() != start || bounds[1].text() != end) return "";
    if (std::count(t.begin(), t.end(), ':') != 1) return "";
    return text(n.field("value"));
}

}  // namespace

std::optional<SortedSlices> match_sorted_slices(const Context& ctx, const Node& def, const Node& loop) {
    if (!loop.is("for_statement") || !(loop.parent() == def.field("body"))) return std::nullopt;
    if (loop.named_children().back().is("else_clause")) return std::nullopt;
    // `for I, N in enumerate(S)` or `for N in S`.
    const Node left = loop.field("left");
    const Node right = syntax::without_parens(loop.field("right"));
    std::string index;
    std::string count;
    std::string sizes;
    if (left.is("identifier") && right.is("identifier")) {
        count = text(left);
        sizes = text(right);
    } else if ((left.is("pattern_list") || left.is("tuple_pattern")) && right.is("call") &&
               right.field("function").text() == "enumerate" && ctx.source().index.find_import("enumerate") == nullptr) {
        const auto targets = left.named_children();
        const auto args = right.field("arguments").named_children();
        if (targets.size() != 2 || !targets[0].is("identifier") || !targets[1].is("identifier") || args.size() != 1 ||
            !args[0].is("identifier")) {
            return std::nullopt;
        }
        index = text(targets[0]);
        count = text(targets[1]);
        sizes = text(args[0]);
    } else {
        return std::nullopt;
    }
    const auto body = statements(def.field("body"));
    std::size_t at = 0;
    while (at < body.size() && !(body[at] == loop)) ++at;
    // The read-out: the last statement before the loop that binds S.
    Node readout;
    std::size_t readout_at = 0;
    for (std::size_t i = 0; i < at; ++i) {
        const Node a = assignment_of(body[i]);
        if (a && a.field("left").is("identifier") && a.field("left").text() == sizes) {
            readout = readout_tensor(a.field("right")) ? syntax::without_parens(a.field("right")) : Node();
            readout_at = i;
        }
    }
    if (!readout) return std::nullopt;
    // The loop's body: `E = A + N` first, a slice `X[A:E]` in it.
    const auto steps = statements(loop.field("body"));
    if (steps.empty()) return std::nullopt;
    const auto [end, start] = end_of(steps[0], count);
    if (end.empty()) return std::nullopt;
    SortedSlices d;
    d.loop = loop;
    d.readout = readout;
    d.tensor = text(readout_tensor(readout));
    d.sizes = sizes;
    d.count = count;
    syntax::walk(loop.field("body"), [&](const Node& n) {
        if (n.is("lambda") || n.is("function_definition") || n.is("class_definition")) return false;
        const std::string x = slice_rows(n, start, end);
        if (x.empty()) return true;
        if (d.rows.empty()) d.rows = x;
        if (x == d.rows) d.slices.push_back(n);
        return false;
    });
    if (d.slices.empty()) return std::nullopt;
    // From here on the form is this dispatch: refusals are its own.
    auto refuse = [&](std::string why) {
        if (d.refused.empty()) d.refused = std::move(why);
        return d;
    };
    const std::size_t line = loop.position().line;
    // Between the read-out and the loop: `O = []` and `A = 0` (and anything that binds neither S nor A).
    std::string outputs;
    bool start_zero = false;
    for (std::size_t i = readout_at + 1; i < at; ++i) {
        const Node a = assignment_of(body[i]);
        if (!a || !a.field("left").is("identifier")) continue;
        if (a.field("left").text() == start && a.field("right").text() == "0") start_zero = true;
        if (a.field("right").is("list") && a.field("right").named_children().empty()) outputs = text(a.field("left"));
    }
    if (!start_zero) return refuse(fmt::format("line {}: `{}` does not start at 0 just before the loop", line, start));
    // The body: E = A + N; [if N == 0: continue]; work on the slice; O.append(EXPR); A = E.
    if (steps.size() < 3) return refuse(fmt::format("line {}: the loop's body is not the walk over the counts", line));
    const Node last = assignment_of(steps.back());
    if (!last || last.field("left").text() != start || last.field("right").text() != end) {
        return refuse(fmt::format("line {}: the loop does not end with `{} = {}`", steps.back().position().line, start,
                                  end));
    }
    const Node append_stmt = steps[steps.size() - 2];
    const Node append = append_stmt.is("expression_statement") && append_stmt.named_children().size() == 1
                            ? append_stmt.named_children()[0]
                            : Node();
    if (outputs.empty() || !append || !append.is("call") || append.field("function").text() != outputs + ".append" ||
        append.field("arguments").named_children().size() != 1 ||
        append.field("arguments").named_children()[0].is("keyword_argument")) {
        return refuse(fmt::format("line {}: the work on each slice does not end with `O.append(EXPR)`, O a list made "
                                  "empty before the loop",
                                  append_stmt.position().line));
    }
    d.outputs = outputs;
    const Node value = append.field("arguments").named_children()[0];
    std::size_t first_work = 1;
    if (steps[1].is("if_statement")) {
        const Node test = syntax::without_parens(steps[1].field("condition"));
        const auto then = statements(steps[1].field("consequence"));
        const bool zero = test.is("comparison_operator") && test.named_children().size() == 2 &&
                          test.child_count() == 3 && test.child(1).is("==") &&
                          ((test.named_children()[0].text() == count && test.named_children()[1].text() == "0") ||
                           (test.named_children()[1].text() == count && test.named_children()[0].text() == "0"));
        if (!zero || then.size() != 1 || !then[0].is("continue_statement") || steps[1].named_children().size() != 2) {
            return refuse(fmt::format("line {}: an `if` in the loop other than `if {} == 0: continue`",
                                      steps[1].position().line, count));
        }
        d.skip = steps[1].field("condition");
        first_work = 2;
    }
    // The work: `NAME = EXPR` statements, row-wise on the slices.
    RowFlow flow(ctx, ctx.file, def, owner_of(def));
    flow.loop_var = index;
    for (const Node& s : d.slices) flow.row_nodes.emplace(s.begin(), s.end());
    for (std::size_t i = first_work; i + 2 < steps.size(); ++i) {
        const Node a = assignment_of(steps[i]);
        if (!a || !a.is("assignment")) {
            return refuse(fmt::format("line {}: a statement in the loop other than `NAME = EXPR`",
                                      steps[i].position().line));
        }
        // `NAME = self.ATTR[INDEX]`: an expert of a ModuleList of one class, which may hold None
        // for other ranks' experts (DeepSeek's expert parallelism).
        const Node r = syntax::without_parens(a.field("right"));
        if (a.field("left").is("identifier") && r.is("subscript") && r.field("value").is("attribute") &&
            r.field("value").field("object").text() == "self" && !flow.holds_rows(r)) {
            bool may_hold_none = false;
            const std::string name = text(a.field("left"));
            const Callable c = modules_or_none(ctx, ctx.file, owner_of(def), text(r.field("value").field("attribute")),
                                               may_hold_none);
            std::size_t bindings = 0;
            for (const Node& o : occurrences(def, name)) bindings += analysis::is_read(o) ? 0 : 1;
            if (c.kind == Callable::Class && bindings == 1 && flow.pure(r)) {
                flow.known[name] = c;
                if (may_hold_none) d.container = text(r.field("value"));
                continue;
            }
        }
        if (!flow.assignment(a)) return refuse(flow.why());
    }
    const auto v = flow.expr(value);
    if (!v) return refuse(flow.why());
    if (!*v) return refuse(fmt::format("line {}: what is appended does not hold the rows", append.position().line));
    if (flow.needs_eval) {
        return refuse(fmt::format("line {}: a Dropout on the rows (it draws a number per element in training)",
                                  append.position().line));
    }
    // The names: read nowhere else.
    auto only = [&](const std::string& name, auto&& allowed) -> bool {
        for (const Node& o : occurrences(def, name)) {
            if (!allowed(o)) {
                refuse(fmt::format("line {}: `{}` is used other than by the walk over the counts", o.position().line,
                                   name));
                return false;
            }
        }
        return true;
    };
    const Node end_stmt = assignment_of(steps[0]);
    const Node readout_assignment = assignment_of(body[readout_at]);
    if (!only(sizes, [&](const Node& o) {
            return (inside(o, readout_assignment) && o.end() <= readout_assignment.field("right").begin()) ||
                   inside(o, loop.field("right")) || (inside(o, readout) && d.tensor == sizes) ||
                   o.end() <= readout_assignment.begin();
        })) {
        return d;
    }
    auto in_slices = [&](const Node& o) {
        return std::any_of(d.slices.begin(), d.slices.end(), [&](const Node& s) { return inside(o, s); });
    };
    if (!only(count, [&](const Node& o) {
            return (inside(o, end_stmt) && !(o == end_stmt.field("left"))) || inside(o, left) ||
                   (d.skip && inside(o, d.skip));
        })) {
        return d;
    }
    if (!only(end, [&](const Node& o) { return inside(o, end_stmt) || in_slices(o) || inside(o, last); })) return d;
    if (!only(start, [&](const Node& o) {
            if (inside(o, end_stmt) || in_slices(o) || inside(o, last)) return true;
            const Node a = o.parent();  // `A = 0` between the read-out and the loop
            return o.begin() > readout_assignment.end() && o.end() <= loop.begin() && a.is("assignment") &&
                   a.field("left") == o && a.field("right").text() == "0";
        })) {
        return d;
    }
    if (!index.empty() && !only(index, [&](const Node& o) { return inside(o, loop); })) return d;
    // X: bound before the read-out only (or a parameter), so every slice is of one tensor; in
    // the loop read only through the slices; after it only for what it is, not its values (the
    // static form hands each expert a copy of X, so work done in place on a slice no longer
    // reaches X).
    for (const Node& o : occurrences(def, d.rows)) {
        if (o.begin() >= readout_assignment.begin() && analysis::is_read(o) == false) {
            return refuse(fmt::format("line {}: `{}` is bound again after the counts are read out",
                                      o.position().line, d.rows));
        }
        if (inside(o, loop) && !in_slices(o)) {
            return refuse(fmt::format("line {}: `{}` is read in the loop other than as `{}[{}:{}]`",
                                      o.position().line, d.rows, d.rows, start, end));
        }
        if (o.begin() >= loop.end()) {
            const Node p = o.parent();
            const std::string_view attr = p.is("attribute") && p.field("object") == o ? p.field("attribute").text()
                                                                                       : std::string_view();
            if (attr != "dtype" && attr != "device" && attr != "shape" && attr != "new_empty" &&
                attr != "new_zeros" && attr != "size" && attr != "ndim") {
                return refuse(fmt::format("line {}: `{}` is read after the loop", o.position().line, d.rows));
            }
        }
    }
    // After the loop: `torch.cat(O, dim=0)` in the next statement; O read nowhere else but
    // `len(O)` there.
    if (at + 1 >= body.size()) return refuse(fmt::format("line {}: the loop is not followed by `torch.cat({}, dim=0)`", line, outputs));
    const Node cat_stmt = body[at + 1];
    Node cat_list;
    syntax::walk(cat_stmt, [&](const Node& n) {
        if (d.cat || n.is("lambda")) return false;
        if (const Node l = body::cat_of(ctx, ctx.file, n); l && l.text() == outputs) {
            d.cat = n;
            cat_list = l;
        }
        return !d.cat;
    });
    if (!d.cat) {
        return refuse(fmt::format("line {}: the loop is not followed by `torch.cat({}, dim=0)`",
                                  cat_stmt.position().line, outputs));
    }
    if (!only(outputs, [&](const Node& o) {
            if (o == cat_list || o == append.field("function").field("object")) return true;
            if (o.end() <= loop.begin() && o.begin() > readout_assignment.end()) {
                const Node a = o.parent();
                return a.is("assignment") && a.field("left") == o;
            }
            // `len(O)` in the concatenation's statement.
            const Node args = o.parent();
            const Node call = args.parent();
            return inside(o, cat_stmt) && args.is("argument_list") && call.is("call") &&
                   call.field("function").text() == "len" && args.named_children().size() == 1;
        })) {
        return d;
    }
    if (flow.holds_rows(loop.field("right"))) return refuse("the loop's counts read the rows");
    return d;
}

}  // namespace graphmend::rules

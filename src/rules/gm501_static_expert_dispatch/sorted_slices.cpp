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
#include <tuple>

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

// One loop being matched, step by step: what the steps have found so far, and the dispatch
// they fill. The first steps (header, find_readout, find_slices) say whether the loop is of
// this form; each later one says whether it is still one that can be rewritten, refusing with
// a reason in d.refused when not.
class SlicesMatch {
public:
    SlicesMatch(const Context& ctx, const Node& def, const Node& loop)
        : ctx_(ctx), def_(def), loop_(loop), flow_(ctx, ctx.file, def, owner_of(def)) {}

    SortedSlices d;

    bool header();
    bool find_readout();
    bool find_slices();
    bool start_at_zero();
    bool walk_shape();
    bool skip_test();
    bool rowwise_work();
    bool names_only_in_walk();
    bool rows_of_one_tensor();
    bool concatenated();
    bool counts_without_rows();

private:
    bool refuse(std::string why) {
        if (d.refused.empty()) d.refused = std::move(why);
        return false;
    }
    // The names: read nowhere else. False (refused) at the first occurrence of `name` in the
    // function that is not `allowed`.
    template <typename Allowed>
    bool only(const std::string& name, Allowed&& allowed) {
        for (const Node& o : occurrences(def_, name)) {
            if (!allowed(o)) {
                refuse(fmt::format("line {}: `{}` is used other than by the walk over the counts", o.position().line,
                                   name));
                return false;
            }
        }
        return true;
    }
    [[nodiscard]] bool in_slices(const Node& o) const {
        return std::any_of(d.slices.begin(), d.slices.end(), [&](const Node& s) { return inside(o, s); });
    }

    const Context& ctx_;
    const Node& def_;
    const Node& loop_;
    // `for I, N in enumerate(S)` or `for N in S`.
    std::string index_;  // I, or ""
    std::string count_;  // N
    std::string sizes_;  // S
    std::vector<Node> body_;      // the statements of the function's body
    std::size_t at_ = 0;          // the loop's place among them
    Node readout_;                // the read-out of S
    std::size_t readout_at_ = 0;  // its statement's place
    Node readout_assignment_;     // `S = READOUT`
    std::vector<Node> steps_;     // the loop's statements
    std::string end_;             // E of `E = A + N`
    std::string start_;           // A
    Node last_;                   // `A = E`, the loop's last statement
    std::string outputs_;         // O of `O = []`
    Node append_;                 // `O.append(EXPR)`
    std::size_t first_work_ = 1;  // the first statement of the work on the slice
    RowFlow flow_;
};

// `for I, N in enumerate(S)` or `for N in S`.
bool SlicesMatch::header() {
    const Node left = loop_.field("left");
    const Node right = syntax::without_parens(loop_.field("right"));
    if (left.is("identifier") && right.is("identifier")) {
        count_ = text(left);
        sizes_ = text(right);
    } else if ((left.is("pattern_list") || left.is("tuple_pattern")) && right.is("call") &&
               right.field("function").text() == "enumerate" && ctx_.source().index.find_import("enumerate") == nullptr) {
        const auto targets = left.named_children();
        const auto args = right.field("arguments").named_children();
        if (targets.size() != 2 || !targets[0].is("identifier") || !targets[1].is("identifier") || args.size() != 1 ||
            !args[0].is("identifier")) {
            return false;
        }
        index_ = text(targets[0]);
        count_ = text(targets[1]);
        sizes_ = text(args[0]);
    } else {
        return false;
    }
    return true;
}

// The read-out: the last statement before the loop that binds S.
bool SlicesMatch::find_readout() {
    body_ = statements(def_.field("body"));
    while (at_ < body_.size() && !(body_[at_] == loop_)) ++at_;
    for (std::size_t i = 0; i < at_; ++i) {
        const Node a = assignment_of(body_[i]);
        if (a && a.field("left").is("identifier") && a.field("left").text() == sizes_) {
            readout_ = readout_tensor(a.field("right")) ? syntax::without_parens(a.field("right")) : Node();
            readout_at_ = i;
        }
    }
    return static_cast<bool>(readout_);
}

// The loop's body: `E = A + N` first, a slice `X[A:E]` in it.
bool SlicesMatch::find_slices() {
    steps_ = statements(loop_.field("body"));
    if (steps_.empty()) return false;
    std::tie(end_, start_) = end_of(steps_[0], count_);
    if (end_.empty()) return false;
    d.loop = loop_;
    d.readout = readout_;
    d.tensor = text(readout_tensor(readout_));
    d.sizes = sizes_;
    d.count = count_;
    syntax::walk(loop_.field("body"), [&](const Node& n) {
        if (n.is("lambda") || n.is("function_definition") || n.is("class_definition")) return false;
        const std::string x = slice_rows(n, start_, end_);
        if (x.empty()) return true;
        if (d.rows.empty()) d.rows = x;
        if (x == d.rows) d.slices.push_back(n);
        return false;
    });
    return !d.slices.empty();
}

// Between the read-out and the loop: `O = []` and `A = 0` (and anything that binds neither S nor A).
bool SlicesMatch::start_at_zero() {
    bool start_zero = false;
    for (std::size_t i = readout_at_ + 1; i < at_; ++i) {
        const Node a = assignment_of(body_[i]);
        if (!a || !a.field("left").is("identifier")) continue;
        if (a.field("left").text() == start_ && a.field("right").text() == "0") start_zero = true;
        if (a.field("right").is("list") && a.field("right").named_children().empty()) outputs_ = text(a.field("left"));
    }
    if (!start_zero) {
        return refuse(fmt::format("line {}: `{}` does not start at 0 just before the loop", loop_.position().line,
                                  start_));
    }
    return true;
}

// The body: E = A + N; [if N == 0: continue]; work on the slice; O.append(EXPR); A = E.
bool SlicesMatch::walk_shape() {
    if (steps_.size() < 3) {
        return refuse(fmt::format("line {}: the loop's body is not the walk over the counts", loop_.position().line));
    }
    last_ = assignment_of(steps_.back());
    if (!last_ || last_.field("left").text() != start_ || last_.field("right").text() != end_) {
        return refuse(fmt::format("line {}: the loop does not end with `{} = {}`", steps_.back().position().line,
                                  start_, end_));
    }
    const Node append_stmt = steps_[steps_.size() - 2];
    append_ = append_stmt.is("expression_statement") && append_stmt.named_children().size() == 1
                  ? append_stmt.named_children()[0]
                  : Node();
    if (outputs_.empty() || !append_ || !append_.is("call") ||
        append_.field("function").text() != outputs_ + ".append" ||
        append_.field("arguments").named_children().size() != 1 ||
        append_.field("arguments").named_children()[0].is("keyword_argument")) {
        return refuse(fmt::format("line {}: the work on each slice does not end with `O.append(EXPR)`, O a list made "
                                  "empty before the loop",
                                  append_stmt.position().line));
    }
    d.outputs = outputs_;
    return true;
}

// `if N == 0: continue` second in the body, if there.
bool SlicesMatch::skip_test() {
    if (!steps_[1].is("if_statement")) return true;
    const Node test = syntax::without_parens(steps_[1].field("condition"));
    const auto then = statements(steps_[1].field("consequence"));
    const bool zero = test.is("comparison_operator") && test.named_children().size() == 2 &&
                      test.child_count() == 3 && test.child(1).is("==") &&
                      ((test.named_children()[0].text() == count_ && test.named_children()[1].text() == "0") ||
                       (test.named_children()[1].text() == count_ && test.named_children()[0].text() == "0"));
    if (!zero || then.size() != 1 || !then[0].is("continue_statement") || steps_[1].named_children().size() != 2) {
        return refuse(fmt::format("line {}: an `if` in the loop other than `if {} == 0: continue`",
                                  steps_[1].position().line, count_));
    }
    d.skip = steps_[1].field("condition");
    first_work_ = 2;
    return true;
}

// The work: `NAME = EXPR` statements, row-wise on the slices.
bool SlicesMatch::rowwise_work() {
    flow_.loop_var = index_;
    for (const Node& s : d.slices) flow_.row_nodes.emplace(s.begin(), s.end());
    for (std::size_t i = first_work_; i + 2 < steps_.size(); ++i) {
        const Node a = assignment_of(steps_[i]);
        if (!a || !a.is("assignment")) {
            return refuse(fmt::format("line {}: a statement in the loop other than `NAME = EXPR`",
                                      steps_[i].position().line));
        }
        // `NAME = self.ATTR[INDEX]`: an expert of a ModuleList of one class, which may hold None
        // for other ranks' experts (DeepSeek's expert parallelism).
        const Node r = syntax::without_parens(a.field("right"));
        if (a.field("left").is("identifier") && r.is("subscript") && r.field("value").is("attribute") &&
            r.field("value").field("object").text() == "self" && !flow_.holds_rows(r)) {
            bool may_hold_none = false;
            const std::string name = text(a.field("left"));
            const Callable c = modules_or_none(ctx_, ctx_.file, owner_of(def_),
                                               text(r.field("value").field("attribute")), may_hold_none);
            std::size_t bindings = 0;
            for (const Node& o : occurrences(def_, name)) bindings += analysis::is_read(o) ? 0 : 1;
            if (c.kind == Callable::Class && bindings == 1 && flow_.pure(r)) {
                flow_.known[name] = c;
                if (may_hold_none) d.container = text(r.field("value"));
                continue;
            }
        }
        if (!flow_.assignment(a)) return refuse(flow_.why());
    }
    const auto v = flow_.expr(append_.field("arguments").named_children()[0]);
    if (!v) return refuse(flow_.why());
    if (!*v) return refuse(fmt::format("line {}: what is appended does not hold the rows", append_.position().line));
    if (flow_.needs_eval) {
        return refuse(fmt::format("line {}: a Dropout on the rows (it draws a number per element in training)",
                                  append_.position().line));
    }
    return true;
}

// S, N, E, A and I: read nowhere but in the walk over the counts.
bool SlicesMatch::names_only_in_walk() {
    const Node end_stmt = assignment_of(steps_[0]);
    readout_assignment_ = assignment_of(body_[readout_at_]);
    const Node& readout_assignment = readout_assignment_;
    if (!only(sizes_, [&](const Node& o) {
            return (inside(o, readout_assignment) && o.end() <= readout_assignment.field("right").begin()) ||
                   inside(o, loop_.field("right")) || (inside(o, readout_) && d.tensor == sizes_) ||
                   o.end() <= readout_assignment.begin();
        })) {
        return false;
    }
    if (!only(count_, [&](const Node& o) {
            return (inside(o, end_stmt) && !(o == end_stmt.field("left"))) || inside(o, loop_.field("left")) ||
                   (d.skip && inside(o, d.skip));
        })) {
        return false;
    }
    if (!only(end_, [&](const Node& o) { return inside(o, end_stmt) || in_slices(o) || inside(o, last_); })) {
        return false;
    }
    if (!only(start_, [&](const Node& o) {
            if (inside(o, end_stmt) || in_slices(o) || inside(o, last_)) return true;
            const Node a = o.parent();  // `A = 0` between the read-out and the loop
            return o.begin() > readout_assignment.end() && o.end() <= loop_.begin() && a.is("assignment") &&
                   a.field("left") == o && a.field("right").text() == "0";
        })) {
        return false;
    }
    return index_.empty() || only(index_, [&](const Node& o) { return inside(o, loop_); });
}

// X: bound before the read-out only (or a parameter), so every slice is of one tensor; in
// the loop read only through the slices; after it only for what it is, not its values (the
// static form hands each expert a copy of X, so work done in place on a slice no longer
// reaches X).
bool SlicesMatch::rows_of_one_tensor() {
    for (const Node& o : occurrences(def_, d.rows)) {
        if (o.begin() >= readout_assignment_.begin() && analysis::is_read(o) == false) {
            return refuse(fmt::format("line {}: `{}` is bound again after the counts are read out",
                                      o.position().line, d.rows));
        }
        if (inside(o, loop_) && !in_slices(o)) {
            return refuse(fmt::format("line {}: `{}` is read in the loop other than as `{}[{}:{}]`",
                                      o.position().line, d.rows, d.rows, start_, end_));
        }
        if (o.begin() >= loop_.end()) {
            const Node p = o.parent();
            const std::string_view attr = p.is("attribute") && p.field("object") == o ? p.field("attribute").text()
                                                                                       : std::string_view();
            if (attr != "dtype" && attr != "device" && attr != "shape" && attr != "new_empty" &&
                attr != "new_zeros" && attr != "size" && attr != "ndim") {
                return refuse(fmt::format("line {}: `{}` is read after the loop", o.position().line, d.rows));
            }
        }
    }
    return true;
}

// After the loop: `torch.cat(O, dim=0)` in the next statement; O read nowhere else but
// `len(O)` there.
bool SlicesMatch::concatenated() {
    if (at_ + 1 >= body_.size()) {
        return refuse(fmt::format("line {}: the loop is not followed by `torch.cat({}, dim=0)`", loop_.position().line,
                                  outputs_));
    }
    const Node cat_stmt = body_[at_ + 1];
    Node cat_list;
    syntax::walk(cat_stmt, [&](const Node& n) {
        if (d.cat || n.is("lambda")) return false;
        if (const Node l = body::cat_of(ctx_, ctx_.file, n); l && l.text() == outputs_) {
            d.cat = n;
            cat_list = l;
        }
        return !d.cat;
    });
    if (!d.cat) {
        return refuse(fmt::format("line {}: the loop is not followed by `torch.cat({}, dim=0)`",
                                  cat_stmt.position().line, outputs_));
    }
    return only(outputs_, [&](const Node& o) {
        if (o == cat_list || o == append_.field("function").field("object")) return true;
        if (o.end() <= loop_.begin() && o.begin() > readout_assignment_.end()) {
            const Node a = o.parent();
            return a.is("assignment") && a.field("left") == o;
        }
        // `len(O)` in the concatenation's statement.
        const Node args = o.parent();
        const Node call = args.parent();
        return inside(o, cat_stmt) && args.is("argument_list") && call.is("call") &&
               call.field("function").text() == "len" && args.named_children().size() == 1;
    });
}

bool SlicesMatch::counts_without_rows() {
    if (flow_.holds_rows(loop_.field("right"))) return refuse("the loop's counts read the rows");
    return true;
}

}  // namespace

std::optional<SortedSlices> match_sorted_slices(const Context& ctx, const Node& def, const Node& loop) {
    if (!loop.is("for_statement") || !(loop.parent() == def.field("body"))) return std::nullopt;
    if (loop.named_children().back().is("else_clause")) return std::nullopt;
    SlicesMatch m(ctx, def, loop);
    if (!m.header() || !m.find_readout() || !m.find_slices()) return std::nullopt;
    // From here on the form is this dispatch: refusals are its own.
    (void)(m.start_at_zero() && m.walk_shape() && m.skip_test() && m.rowwise_work() && m.names_only_in_walk() &&
           m.rows_of_one_tensor() && m.concatenated() && m.counts_without_rows());
    return std::move(m.d);
}

}  // namespace graphmend::rules

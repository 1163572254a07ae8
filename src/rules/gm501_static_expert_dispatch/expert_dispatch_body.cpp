// The statements of an expert dispatch loop from the pairs on (see expert_dispatch_match.hpp,
// Matcher; when they keep the static form equal to the loop: expert_dispatch.cpp).
#include <fmt/format.h>

#include "expert_dispatch_match.hpp"
#include "rules/support/body.hpp"

namespace graphmend::rules::expert_match {

using body::assignment_of;
using body::statements;

namespace {

// `I.shape[0]`, `I.size(0)`, `I.numel()`, `len(I)` with I an index name: that name.
std::string size_of_index(const Node& e, const std::set<std::string>& index) {
    const Node n = syntax::without_parens(e);
    if (n.is("subscript") && n.field("value").is("attribute") && n.field("value").field("attribute").text() == "shape" &&
        n.field("subscript").text() == "0") {
        const Node obj = n.field("value").field("object");
        return index.contains(text(obj)) ? text(obj) : "";
    }
    if (n.is("call")) {
        const Node fn = n.field("function");
        const auto args = n.field("arguments").named_children();
        if (fn.is("identifier") && fn.text() == "len" && args.size() == 1 && index.contains(text(args[0]))) {
            return text(args[0]);
        }
        if (fn.is("attribute") && index.contains(text(fn.field("object"))) &&
            ((fn.field("attribute").text() == "numel" && args.empty()) ||
             (fn.field("attribute").text() == "size" && args.size() == 1 && args[0].text() == "0"))) {
            return text(fn.field("object"));
        }
    }
    return "";
}

enum class Emptiness { None, Empty, NonEmpty };

// `SIZE == 0` / `not SIZE` (Empty), `SIZE > 0` / `SIZE != 0` / `SIZE` (NonEmpty).
Emptiness emptiness_test(const Node& test, const std::set<std::string>& index) {
    const Node t = syntax::without_parens(test);
    if (!size_of_index(t, index).empty()) return Emptiness::NonEmpty;
    if (t.is("not_operator") && !size_of_index(t.field("argument"), index).empty()) return Emptiness::Empty;
    if (t.is("comparison_operator")) {
        const auto parts = t.named_children();
        const auto ops = t.children();
        if (parts.size() != 2 || parts[1].text() != "0" || size_of_index(parts[0], index).empty()) {
            return Emptiness::None;
        }
        for (const Node& o : ops) {
            if (o.named()) continue;
            if (o.is("==")) return Emptiness::Empty;
            if (o.is(">") || o.is("!=")) return Emptiness::NonEmpty;
        }
    }
    return Emptiness::None;
}

}  // namespace

Matcher::Matcher(const Context& ctx, const Node& def, ExpertDispatch& d)
    : ctx_(ctx), def_(def), d_(d), flow_(ctx, ctx.file, def, owner_of(def)) {}

// Checks the statements after the pairs statement; false with d_.refused set.
bool Matcher::body_after(const std::vector<Node>& stmts, std::size_t from) {
    for (std::size_t i = from; i < stmts.size(); ++i) {
        const Node& s = stmts[i];
        if (s.is("pass_statement")) continue;
        if (s.is("if_statement")) {
            if (!guard(s)) return false;
            continue;
        }
        if (const Node a = assignment_of(s)) {
            const Node left = a.field("left");
            if (left.is("identifier") && flow_.masks.contains(text(left))) continue;  // the mask itself
            if (left.is("subscript") && flow_.mask_position(left) >= 0) {
                if (!put(a)) return false;
                continue;
            }
            const Node right = syntax::without_parens(a.field("right"));
            if (a.field("left").is("identifier") && right.is("identifier") && flow_.index.contains(text(right))) {
                flow_.index.insert(text(a.field("left")));
                assigned_.insert(text(a.field("left")));
                continue;
            }
            if (!flow_.assignment(a)) return refuse(flow_.why());
            if (a.field("left").is("identifier")) assigned_.insert(text(a.field("left")));
            for (const Node& t : a.field("left").named_children()) {  // `gate, up = ...chunk(2, dim=-1)`
                if (t.is("identifier")) assigned_.insert(text(t));
            }
            continue;
        }
        if (s.is("expression_statement") && s.named_children().size() == 1 &&
            s.named_children()[0].is("augmented_assignment")) {
            const Node a = s.named_children()[0];
            if (!flow_.assignment(a)) return refuse(flow_.why());
            if (a.field("left").is("identifier")) assigned_.insert(text(a.field("left")));
            continue;
        }
        if (s.is("expression_statement") && s.named_children().size() == 1 && scatter(s.named_children()[0])) {
            continue;
        }
        if (!d_.refused.empty()) return false;
        return refuse(fmt::format("line {}: `{}` would run for every candidate pair, not only the mask's",
                                  s.position().line, head_line(s)));
    }
    return true;
}

bool Matcher::refuse(std::string why) {
    if (d_.refused.empty()) d_.refused = std::move(why);
    return false;
}

// `if SIZE == 0: continue` or `if SIZE > 0: <the rest>`; or an `if` whose tests read no
// rows (`if self.training:`), each branch checked as the rest of the body.
bool Matcher::guard(const Node& s) {
    const Emptiness e = emptiness_test(s.field("condition"), flow_.index);
    if (e == Emptiness::None && !flow_.reads_row_values(s.field("condition"))) {
        std::vector<Node> blocks{s.field("consequence")};
        for (const Node& c : s.named_children()) {
            if (c.is("elif_clause")) {
                if (flow_.reads_row_values(c.field("condition"))) {
                    return refuse(fmt::format("line {}: an `elif` that tests the rows", c.position().line));
                }
                blocks.push_back(c.field("consequence"));
            } else if (c.is("else_clause")) {
                blocks.push_back(c.field("body"));
            }
        }
        const std::set<std::string> rows_before = flow_.rows;
        std::set<std::string> rows_after;
        for (const Node& b : blocks) {
            flow_.rows = rows_before;
            if (!body_after(statements(b), 0)) return false;
            rows_after.insert(flow_.rows.begin(), flow_.rows.end());
        }
        flow_.rows = rows_after;
        return true;
    }
    for (const Node& c : s.named_children()) {
        if (c.is("elif_clause") || c.is("else_clause")) return refuse("an `if` with elif/else tests the pairs");
    }
    const auto body = statements(s.field("consequence"));
    if (e == Emptiness::Empty && body.size() == 1 && body[0].is("continue_statement")) return true;
    if (e == Emptiness::NonEmpty) return body_after(body, 0);
    if (flow_.holds_rows(s.field("condition"))) {
        return refuse(fmt::format("line {}: an `if` that tests the pairs for more than being empty",
                                  s.position().line));
    }
    return refuse(fmt::format("line {}: an `if` inside the dispatch", s.position().line));
}

// `Y[..., M, ...] = V`: a write of the rows the mask picks.
bool Matcher::put(const Node& a) {
    const Node left = a.field("left");
    if (flow_.holds_rows(left.field("value"))) {
        return refuse(fmt::format("line {}: a write into rows", a.position().line));
    }
    if (!flow_.expr(a.field("right"))) return refuse(flow_.why());
    d_.puts.emplace_back(a, flow_.mask_position(left));
    return true;
}

// `Y.index_add_(0, I, SRC)`.
bool Matcher::scatter(const Node& call) {
    if (!call.is("call") || !call.field("function").is("attribute") ||
        call.field("function").field("attribute").text() != "index_add_") {
        return false;
    }
    const auto args = call.field("arguments").named_children();
    if (args.size() < 3 || args[0].text() != "0" || !flow_.index.contains(text(args[1])) ||
        args[2].is("keyword_argument")) {
        return refuse(fmt::format("line {}: an index_add_ that is not `Y.index_add_(0, INDEX, SOURCE)`",
                                  call.position().line));
    }
    if (flow_.holds_rows(call.field("function").field("object"))) {
        return refuse(fmt::format("line {}: index_add_ into rows", call.position().line));
    }
    if (d_.scatter) return refuse(fmt::format("line {}: a second index_add_", call.position().line));
    const auto src = flow_.expr(args[2]);
    if (!src) return refuse(flow_.why());
    for (std::size_t i = 3; i < args.size(); ++i) {
        if (flow_.holds_rows(args[i])) return refuse("index_add_'s alpha computed from the rows");
    }
    d_.scatter = call;
    d_.source = args[2];
    return true;
}

}  // namespace graphmend::rules::expert_match

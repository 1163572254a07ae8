// Rule GM502 static-row-subset.
//
// What it does: finds index lists of the rows a mask picks, `I = torch.where(M)[0]`, read
// (where they are made, or in a function of the same file they are passed to) only inside
// `if len(I) > 0:` blocks that gather the rows `X[I, ...]`, compute on them row by row and
// write them back `Y[I, ...] = V` (CLAP's fusion of long clips; see
// src/rules/gm502_static_row_subset/row_subset.hpp). It rewrites (src/runtime/row_subset.py):
//     I = _graphmend_subset_index(M)
//     ...
//     if len((I := _graphmend_subset_enter(I, (X, Y), module=self))) > 0:
//         ... X[_graphmend_subset_at(I), ...] ...
//         _graphmend_subset_put(Y, (I,), V)
// Traced by torch.compile without autograd recording (and in eval mode where a Dropout or
// BatchNorm is among the computations), I is the mask itself: every row goes through the
// block and the put keeps the picked rows' results, the others' values (torch.where).
// Otherwise, eagerly too, I is torch.where's index and the code runs as written.
//
// Why: one-argument torch.where and nonzero have data-dependent output shapes (GB0036).
//
// Fix safety: safe. Each picked row is computed by the same row-wise operations from the
// same values (row_layout.cpp says which are), and written once; the other rows are written
// their own values. A kernel may pick another algorithm for another row count (CPU
// convolutions of one row, see docs/rules/GM502.md), which can change the last bits of a row.
// Refused, with the reason, where equality cannot be shown.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "row_subset.hpp"
#include "graphmend/rule.hpp"
#include "graphmend/runtime_sources.hpp"
#include "rules/support/site.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {

const RuleInfo kInfo{"GM502", "static-row-subset", "rows picked by an index list processed all at once",
                     {.dynamic_shape = true, .fallback_block = runtime::stem::row_subset}};


// `a:b:c` as `slice(a, b, c)`.
std::string slice_text(const Node& s) {
    std::vector<std::string> fields{"None"};
    for (const Node& c : s.children()) {
        if (c.is(":")) {
            fields.emplace_back("None");
        } else if (c.named() && !c.is("comment")) {
            fields.back() = text(c);
        }
    }
    while (fields.size() > 1 && fields.back() == "None") fields.pop_back();
    return fmt::format("slice({})", fmt::join(fields, ", "));
}

// The indices of `y[i, a:b, ...]` as a Python tuple.
std::string index_tuple(const Node& subscript) {
    std::vector<std::string> parts;
    std::vector<Node> nodes;
    for (const Node& i : subscript.named_children()) {
        if (!(i == subscript.field("value")) && !i.is("comment")) nodes.push_back(i);
    }
    if (nodes.size() == 1 && syntax::without_parens(nodes[0]).is("tuple")) nodes = syntax::without_parens(nodes[0]).named_children();
    for (const Node& n : nodes) {
        const Node q = syntax::without_parens(n);
        parts.push_back(q.is("slice") ? slice_text(q) : q.is("ellipsis") ? "Ellipsis" : text(q));
    }
    return parts.size() == 1 ? fmt::format("({},)", parts[0]) : fmt::format("({})", fmt::join(parts, ", "));
}

class StaticRowSubsetRule final : public Rule {
public:
    [[nodiscard]] const RuleInfo& info() const override { return kInfo; }

    // The index lists its sites report, fixed or not.
    void claim(const Context& ctx, Claims& out) const override {
        for_each_in_scope(ctx, [&](const Node& n, const Node& def) {
            if (!n.is("expression_statement")) return !n.is("lambda");
            if (const auto s = match_row_subset(ctx, def, n)) out.add(s->index, ClaimKind::Reported);
            return false;
        });
    }

    void check(const Context& ctx, std::vector<Site>& out) const override {
        for_each_in_scope(ctx, [&](const Node& n, const Node& def) {
            if (!n.is("expression_statement")) return !n.is("lambda");
            if (auto s = match_row_subset(ctx, def, n)) out.push_back(site_for(*s));
            return false;
        });
    }

private:
    static Site site_for(const RowSubset& s) {
        Site site = new_site(kInfo, s.call, one_line(fmt::format("rows picked by {}", s.index.text())), "GB0036");
        if (!s.refused.empty()) {
            site.reason = s.refused;
            return site;
        }
        std::vector<edits::Edit> edits;
        edits.push_back({s.index.begin(), s.index.end(), fmt::format("{}({})", runtime::name::subset_index, s.mask.text())});
        std::vector<std::string> where;
        for (const auto& g : s.guards) {
            std::vector<std::string> tensors;
            for (const auto& t : g.tensors) {
                if (std::find(tensors.begin(), tensors.end(), t) == tensors.end()) tensors.push_back(t);
            }
            const std::string listed =
                tensors.size() == 1 ? fmt::format("({},)", tensors[0]) : fmt::format("({})", fmt::join(tensors, ", "));
            Node tested;  // the index in the `if`'s test: rebound there, so that no line is added
            syntax::walk(g.guard.field("condition"), [&](const Node& n) {
                if (!tested && n.is("identifier") && n.text() == g.param) tested = n;
                return !tested;
            });
            edits.push_back({tested.begin(), tested.end(),
                             fmt::format("({0} := {3}({0}, {1}{2}))", g.param, listed,
                                         g.needs_eval ? ", module=self" : "", runtime::name::subset_enter)});
            for (const Node& x : g.gathers) {
                std::vector<Node> parts;
                for (const Node& i : x.named_children()) {
                    if (!(i == x.field("value")) && !i.is("comment")) parts.push_back(i);
                }
                Node first = parts[0];
                if (parts.size() == 1 && syntax::without_parens(first).is("tuple")) first = syntax::without_parens(first).named_children()[0];
                edits.push_back({first.begin(), first.end(), fmt::format("{}({})", runtime::name::subset_at, first.text())});
            }
            for (const Node& a : g.puts) {
                const Node left = a.field("left");
                edits.push_back({a.begin(), a.field("right").begin(),
                                 fmt::format("{}({}, {}, ", runtime::name::subset_put, left.field("value").text(),
                                             index_tuple(left))});
                edits.push_back({a.end(), a.end(), ")"});
            }
            where.push_back(fmt::format("line {}", g.guard.position().line));
        }
        site.fix = Fix{std::move(edits), Applicability::Safe, {runtime::stem::row_subset}};
        // What the runtime's index() and enter() ask (src/runtime/row_subset.py); otherwise the
        // index is torch.where's, and breaks as before.
        const bool eval = std::any_of(s.guards.begin(), s.guards.end(), [](const auto& g) { return g.needs_eval; });
        site.fix->condition = fmt::format(
            "no autograd, a mask of one element per row of the tensors the `if` reads and writes{}",
            eval ? ", the module in eval mode (batch norms with running statistics)" : "");
        site.detail = fmt::format(
            "under torch.compile, without autograd recording, every row goes through the `if` at {} and only the "
            "picked rows are written back; otherwise the index is taken as written",
            fmt::join(where, ", "));
        return site;
    }
};

}  // namespace

std::unique_ptr<Rule> make_static_row_subset_rule() { return std::make_unique<StaticRowSubsetRule>(); }

}  // namespace graphmend::rules

// Matching expert dispatch loops, private to src/rules/gm501_static_expert_dispatch/ (the
// dispatch and when its static form equals the loop: expert_dispatch.hpp, expert_dispatch.cpp).
//
//   expert_dispatch.cpp        match_expert_dispatch, step by step: the pairs, the loop's trip
//                              count, the statements before the pairs, what the loop leaves
//   expert_dispatch_body.cpp   Matcher: the statements from the pairs on (size tests, row-wise
//                              assignments, the index_add_ or the writes by a mask)
//   expert_dispatch_hits.cpp   loops over the experts a mask hits (a hit list, or the rows of
//                              `C.nonzero()`), and what the expert's index picks there
//   expert_dispatch_masks.cpp  the mask of the pairs, and the boolean masks of a loop without
//                              pairs
//
// All nodes are of the file being checked (ctx.file).
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "expert_dispatch.hpp"
#include "graphmend/rule.hpp"
#include "rules/support/rowwise.hpp"

namespace graphmend::rules::expert_match {

using syntax::Node;

/// The first line of a statement's text.
inline std::string head_line(const Node& s) {
    const std::string_view t = s.text();
    return std::string(t.substr(0, t.find('\n')));
}

// --- expert_dispatch.cpp
/// True when `n` holds a call.
bool has_call(const Node& n);

// --- expert_dispatch_body.cpp
/// Checks the statements of a dispatch loop's body from the pairs on (the mask kind: from the
/// top) against `d`, the dispatch matched so far (its loop, pairs and mask), with the row flow
/// of function `def`: what each statement does to the rows. Sets d.scatter and d.source (the
/// index_add_) or adds to d.puts (the writes by a mask); a refusal goes to d.refused.
class Matcher {
public:
    Matcher(const Context& ctx, const Node& def, ExpertDispatch& d);

    /// Checks `stmts` from `from` on (the statements after the pairs statement); false with
    /// d.refused set.
    bool body_after(const std::vector<Node>& stmts, std::size_t from);
    /// Sets d.refused to `why` unless it holds a reason already; false.
    bool refuse(std::string why);

    /// The names the checked statements assign.
    [[nodiscard]] const std::set<std::string>& assigned() const { return assigned_; }
    /// The row flow: which names hold rows, the pairs' index names, the masks.
    RowFlow& flow() { return flow_; }

private:
    bool guard(const Node& s);
    bool put(const Node& a);
    bool scatter(const Node& call);

    const Context& ctx_;
    Node def_;
    ExpertDispatch& d_;
    RowFlow flow_;
    std::set<std::string> assigned_;
};

// --- expert_dispatch_hits.cpp
/// `for e in HIT` (the loop's iterable a name) over the experts a mask hits, where `mask` is
/// the loop's mask: true when the loop is one, with d.hit_list, d.hits, d.hit_index,
/// d.stacked, d.dim and d.steps set (and for the rows of `C.nonzero()`, d.hit_rows,
/// d.hits_node and possibly d.loop_var; d.picks where the index picks). False when it is not,
/// or with d.refused set when it is one graphmend cannot rewrite. Reads d.loop_var.
bool hit_list_header(const Context& ctx, const Node& def, const Node& loop, const Node& mask, ExpertDispatch& d);

// --- expert_dispatch_masks.cpp
/// The mask of `torch.where(M)`, `torch.nonzero(M, as_tuple=True)` or `M.nonzero(as_tuple=True)`
/// (`call` in ctx.file), or invalid.
Node pairs_mask(const Context& ctx, const Node& call);
/// `BASE[:, ..., e, :, ...]` or `BASE[..., e]` with e `loop_var`: BASE's name and the dimension
/// e indexes (-1 for the last), or {"", 0}.
std::pair<std::string, int> stacked_mask(const Node& mask, const std::string& loop_var);
/// The masks of a loop without pairs (`loop` in function `def`, its index `loop_var`): adds
/// their texts to `masks`; returns the first one's expression, or invalid.
Node boolean_masks(const Node& def, const Node& loop, const std::string& loop_var, std::set<std::string>& masks);

}  // namespace graphmend::rules::expert_match

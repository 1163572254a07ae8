// Expert dispatch loops: a loop that picks index pairs out of a mask with a data-dependent
// op, gathers rows by them, computes on the rows and adds the results back by index:
//
//     for expert_idx in range(self.num_experts):        # or over the experts a mask hits
//         expert_layer = self.experts[expert_idx]
//         idx, top_x = torch.where(expert_mask[expert_idx])      # nonzero: GB0036
//         current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
//         current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
//         final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
//
// Shared by the static-expert-dispatch rule (GM501), which rewrites such loops, and the
// data-dependent-shape rule (GM401), which stops reporting the ops GM501 removes.
// All nodes are of the file being checked; byte offsets are UTF-8 offsets into it.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graphmend/rule.hpp"

namespace graphmend::rules {

struct ExpertDispatch {
    /// Pairs: `A, B = torch.where(M)` and `Y.index_add_(0, B, SRC)`. Mask: a boolean mask
    /// indexes the rows, `X[..., M, ...]` read and `Y[..., M, ...] = V` written (Switch, NLLB-MoE).
    enum class Kind { Pairs, Mask } kind = Kind::Pairs;
    syntax::Node loop;        // the for_statement
    syntax::Node anchor;      // where the site is reported: the pairs call, or the first write
    // Pairs kind.
    syntax::Node pairs;       // `A, B = torch.where(M)` / `= M.nonzero(as_tuple=True)`: the statement
    syntax::Node pairs_call;  // its call
    syntax::Node mask;        // M
    syntax::Node scatter;     // the `Y.index_add_(0, I, SRC)` call
    syntax::Node source;      // SRC
    // Mask kind: every `X[...]` read and `Y[...] = V` assignment the mask indexes, and the
    // position of the mask among each one's indices.
    std::vector<std::pair<syntax::Node, int>> gathers;
    std::vector<std::pair<syntax::Node, int>> puts;
    /// `hit = C.nonzero(as_tuple=True)[0].tolist()` (or `torch.nonzero(C, as_tuple=True)`...)
    /// before a loop `for e in hit:` over the experts with a non-zero C (its .nonzero and
    /// .tolist break too), or invalid.
    syntax::Node hit_list;
    std::string hits;     // C
    /// The hit list is `C.nonzero()` (or `torch.nonzero(C)`): the loop runs over its rows, each a
    /// one-element tensor (transformers 5.x). The loop's iterable is rewritten rather than the
    /// hit list's statement (which may sit under `torch.no_grad()`), so that the choice of the
    /// static form sees the loop's own grad mode.
    bool hit_rows = false;
    syntax::Node hits_node;  // C in the hit list's statement
    std::string hit_index;   // the index of an expert in the loop: `e`, or `row[0]` (hit_rows)
    std::string stacked;  // the loop's mask is `stacked[..., e, ...]`, e at dimension `dim`
    int dim = 0;
    std::string steps;    // Python text of the loop's trip count over all experts
    std::string loop_var; // the loop's index variable ("" when it has none)
    /// Hit-list forms: Python text of a lambda of the index that checks, for everything the loop
    /// picks by it (`X[e]`, `X[f"expert_{e}"]`, `getattr(X, f"...")`), that it finds an element
    /// (`_graphmend_has`), and whether the lambda takes the loop's row (`[e]`) rather than e.
    /// The static form runs every index of the hit mask, which may hold more experts than X.
    std::string picks;
    bool picks_row = false;
    /// A Dropout among the computations: the static form also needs every submodule of
    /// `self` in eval mode.
    bool needs_eval = false;
    /// Why the loop cannot be rewritten (empty when it can).
    std::string refused;
};

/// The expert dispatch `loop` (a for_statement inside function `def`) performs, or nullopt
/// when it holds no `A, B = torch.where(M)` (or `nonzero(as_tuple=True)`) statement and no
/// assignment to rows picked by a boolean mask of the loop's index. A dispatch that cannot be shown equal to its static form says why in `refused`.
std::optional<ExpertDispatch> match_expert_dispatch(const Context& ctx, const syntax::Node& def,
                                                    const syntax::Node& loop);

}  // namespace graphmend::rules

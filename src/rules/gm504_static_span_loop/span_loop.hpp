// Matching a loop over the separators of a 2-D mask that writes the spans between them
// (rule GM504, static-span-loop; src/rules/gm504_static_span_loop/span_loop.cpp).
//
// The form (Grounding DINO's `generate_masks_with_special_tokens_and_transfer_map`, and the
// copies of it in MM Grounding DINO and in the original GroundingDINO code):
//
//     IDX = torch.nonzero(M)              # or M.nonzero(), torch.argwhere(M); M 2-D
//     X = torch.eye(T)...repeat(B, 1, 1)  # each target a fresh tensor made before the loop
//     PREV = 0
//     for I in range(IDX.shape[0]):       # or range(len(IDX)), range(IDX.size(0))
//         ROW, COL = IDX[I]
//         if TEST:                        # comparisons of COL, PREV, ROW with loop-invariant names
//             X[ROW, COL, COL] = True     # a point: X[ROW, COL] or X[ROW, COL, COL]
//         else:
//             X[ROW, PREV + 1 : COL + 1, PREV + 1 : COL + 1] = True   # a span, 2-D or square
//             Y[ROW, PREV + 1 : COL + 1] = torch.arange(0, COL - PREV, device=...)
//         PREV = COL
//
// Every write of the separator at (ROW, COL) lands on positions that separator owns: COL
// itself, and the positions after the separator before it in row-major order and up to COL
// (the span (PREV, COL] is empty when PREV, carried over from the row before, is not below COL).
// So the writes of different separators never meet, and each position's final value is made by
// the writes of its owner in the body's order: the static form applies each write to every
// position at once, masked by owner, guard and span (src/runtime/span_loop.py).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graphmend/rule.hpp"
#include "graphmend/syntax.hpp"

namespace graphmend::rules {

struct SpanLoop {
    syntax::Node loop;        // the for statement
    syntax::Node index_call;  // `torch.nonzero(M)` / `M.nonzero()` / `torch.argwhere(M)`: the site
    syntax::Node mask;        // M
    std::string index;        // IDX
    std::string prev;         // PREV, or "" when the loop carries no previous column
    /// The iterable's replacement: `_graphmend_span_range(IDX, PREV, lambda ROW, COL, PREV:
    /// ((X, KIND, VALUE, GUARD), ...), CHECK)`; empty when refused.
    std::string iterable;
    bool raises = false;      // a write may raise (torch.arange of a negative length)
    std::string refused;      // why it cannot be rewritten (empty when it can)
};

/// The span loop that `loop` (a for_statement of function `def`) is, or nullopt when it is not
/// of the form: `for I in range(IDX.shape[0])` whose body starts with `ROW, COL = IDX[I]`, IDX
/// bound once, before the loop, by nonzero/argwhere of one tensor. A loop of the form that
/// cannot be rewritten has `refused` set.
std::optional<SpanLoop> match_span_loop(const Context& ctx, const syntax::Node& def, const syntax::Node& loop);

}  // namespace graphmend::rules

// Row subsets: an index list of the rows a mask picks, `I = torch.where(M)[0]`, read by
// code that gathers those rows, computes on them row by row and writes them back:
//
//     is_longer_idx = torch.where(is_longer_list == 1)[0]          # nonzero: GB0036
//     hidden_states = self.patch_embed(hidden_states, is_longer_idx)
//     ...
//     def forward(self, hidden_states, is_longer_idx=None):        # the module's forward
//         if len(is_longer_idx) > 0:
//             local = hidden_states[is_longer_idx, 1:, :, :].contiguous()
//             ...                                                   # per-row code
//             global_hidden_states[is_longer_idx] = self.fusion_model(global_hidden_states[is_longer_idx], local)
//
// Shared by the static-row-subset rule (GM502), which rewrites such code, and the
// data-dependent-shape rule (GM401), which leaves the index it owns to it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graphmend/rule.hpp"

namespace graphmend::rules {

struct RowSubset {
    /// One `if` that tests the index for being non-empty and reads the rows inside: in the
    /// function that made the index, or in a function it is passed to (same file).
    struct Guard {
        syntax::Node fn;        // the function_definition
        std::string param;      // the index's name there
        syntax::Node guard;     // the if_statement
        std::vector<syntax::Node> gathers;  // `X[I, ...]` subscripts
        std::vector<syntax::Node> puts;     // `Y[I, ...] = V` assignments
        std::vector<std::string> tensors;   // the X and Y names, whose dimension 0 must be the mask's
        bool needs_eval = false;            // a Dropout or BatchNorm: the module must be in eval mode
    };
    syntax::Node statement;  // `I = torch.where(M)[0]`: the expression_statement
    syntax::Node call;       // torch.where(M) / nonzero: the site's anchor
    syntax::Node index;      // the right side, `torch.where(M)[0]`
    syntax::Node mask;       // M
    std::string name;        // I
    std::vector<Guard> guards;
    /// Why the rows cannot be processed all at once (empty when they can).
    std::string refused;
};

/// The row subset `stmt` (a statement of function `def` in the checked file) makes, or
/// nullopt when it is not `I = torch.where(M)[0]` (or `M.nonzero(as_tuple=True)[0]`,
/// `torch.nonzero(M, as_tuple=True)[0]`) with I passed to a project function or tested for
/// being empty. A subset that cannot be shown equal to its static form says why in `refused`.
std::optional<RowSubset> match_row_subset(const Context& ctx, const syntax::Node& def, const syntax::Node& stmt);

}  // namespace graphmend::rules

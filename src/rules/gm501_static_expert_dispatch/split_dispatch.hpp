// Expert dispatch by sorted split sizes (GraniteMoE, JetMoE, GraniteMoeShared/Hybrid in
// transformers 4.x): a router reads the number of rows each expert gets out into Python,
//
//     expert_size = gates.long().sum(0)
//     expert_size = expert_size.tolist()              # GB0124
//     ...
//     return index_sorted_experts, batch_index, batch_gates, expert_size, logits
//
// and a module splits the rows (sorted by expert) by those sizes, runs each expert on its
// own rows and concatenates:
//
//     input_list = inputs.split(expert_size, dim=0)
//     output_list = []
//     for i in range(self.num_experts):
//         output_list.append(F.linear(input_list[i], self.weight[i]))
//     results = torch.cat(output_list, dim=0)
//
// Shared by the static-expert-dispatch rule (GM501), which rewrites it, and the
// data-dependent-shape rule (GM401), which stops reporting the `.tolist()` GM501 reports.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graphmend/rule.hpp"

namespace graphmend::rules {

/// One function that splits rows by the sizes and concatenates what each expert computes.
struct SplitConsumer {
    syntax::Node def;    // the function_definition
    syntax::Node split;  // the `X.split(S, dim=0)` call
    syntax::Node split_assignment;  // `L = X.split(S, dim=0)`
    std::string list;    // L
    syntax::Node cat;    // the `torch.cat(O, dim=0)` call
    std::string input;   // X
    std::string sizes;   // S
    std::string outputs; // O
};

struct SplitDispatch {
    syntax::Node assignment;  // `S = T.tolist()`
    syntax::Node tolist;      // its `T.tolist()` call: the site
    std::string tensor;       // T
    /// The functions that split by the sizes (each once), in source order.
    std::vector<SplitConsumer> consumers;
    /// Where the static form is chosen, before the first module call that passes the sizes on
    /// to a consumer: that argument (a name) and the name of the rows the consumer splits.
    struct Choice {
        syntax::Node arg;
        std::string rows;
    };
    std::vector<Choice> choices;
    /// Why it cannot be rewritten (empty when it can).
    std::string refused;
};

/// The split-size dispatch whose sizes `stmt` (an expression_statement of function `def`)
/// reads out with `.tolist()`, or nullopt when the list reaches no `X.split(S, dim=0)`
/// followed by `O = []` and `for i in range(...): O.append(EXPR)` (another use of split
/// sizes, which GM401 reports).
std::optional<SplitDispatch> match_split_dispatch(const Context& ctx, const syntax::Node& def,
                                                  const syntax::Node& stmt);

/// Expert dispatch by slices of rows sorted by expert (DeepSeek-V2/V3 Hub remote code's
/// `moe_infer`): the counts are read out, then walked with a running start index,
///
///     S = T.cpu().numpy()            # or T.numpy(), T.tolist(), T.cpu().tolist()
///     O = []
///     A = 0
///     for I, N in enumerate(S):      # or `for N in S:`
///         E = A + N
///         if N == 0:                 # optional
///             continue
///         R = X[A:E]                 # or X[A:E] inline; row-wise work on the slice
///         O.append(EXPR)
///         A = E
///     ... torch.cat(O, dim=0) ...
///
/// All statements in the body of one function, the read-out, `O = []`, `A = 0` and the loop at
/// its top level.
struct SortedSlices {
    syntax::Node loop;
    syntax::Node readout;   // the read-out call (`T.cpu().numpy()`): the site
    std::string tensor;     // T
    std::string sizes;      // S
    std::string rows;       // X
    std::vector<syntax::Node> slices;  // each `X[A:E]`
    syntax::Node skip;      // the test `N == 0` of the skip, or invalid
    std::string count;      // N
    syntax::Node cat;       // the `torch.cat(O, ...)` call
    std::string outputs;    // O
    /// The expert container (`self.experts`) when an element may be None (expert
    /// parallelism): the static form is then taken only when none is.
    std::string container;
    std::string refused;    // why it cannot be rewritten (empty when it can)
};

/// The sorted-slices dispatch that loop `loop` (a for_statement of function `def`) runs, or
/// nullopt when the loop is not of this form: a walk over the elements of a name read out
/// just before with `.numpy()` / `.tolist()`, whose body computes `E = A + N` and slices a
/// name `X[A:E]`.
std::optional<SortedSlices> match_sorted_slices(const Context& ctx, const syntax::Node& def,
                                                const syntax::Node& loop);

}  // namespace graphmend::rules

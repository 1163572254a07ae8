// Ints read back from a tensor that was built from ints (rule GM503, host-int-values):
//     spatial_shapes_list.append((height, width))          # Python ints, from .shape
//     spatial_shapes = torch.as_tensor(spatial_shapes_list, dtype=torch.long, device=...)
//     for level, (height, width) in enumerate(spatial_shapes):   # read back: GB0124
// The tensor's values are the list's, so the read can use the list (where the tensor is
// made, through a sibling parameter that every call passes the list in, or, for a helper
// that only iterates its parameter, by passing the list at the call). Shared by the rule and
// by GM401 (data-dependent-shape), which leaves the reads this matcher owns.
#pragma once

#include <string>
#include <vector>

#include "graphmend/rule.hpp"

namespace graphmend::rules {

/// One read of a host-built tensor in a function: a `for` loop or comprehension over it
/// (directly or through `enumerate`) or its `.tolist()`. Several reads of one parameter that
/// are fixed at the call sites form one HostRead (`site` is the first).
struct HostRead {
    syntax::Node site;       // for_statement, the comprehension, or the .tolist() call
    std::vector<syntax::Node> reads;  // every read the site covers
    std::string what;        // e.g. "for ... in spatial_shapes"
    std::string refused;     // why the read cannot use the list ("" when it can)
    std::vector<edits::Edit> edits;
    std::string detail;      // what the fix does
};

/// The reads of tensors built from Python ints in `def` (an in-scope function of the file).
/// A read of a tensor that is not shown to be built from a list of ints is not listed.
std::vector<HostRead> match_host_reads(const Context& ctx, const syntax::Node& def);

}  // namespace graphmend::rules

// The policy between rules: how one rule's sites weigh on another's fixes in the same file.
// Each rule declares its part in its RuleInfo (rules::Policy); this reads those declarations,
// and names no rule.
#pragma once

#include <vector>

#include "graphmend/rule.hpp"

namespace graphmend::fix {

/// A site whose break stays in the emitted code: refused, unsafe while unsafe fixes are off,
/// or fixed only when a run-time condition holds (rules::Fix::condition).
bool break_stays(const rules::Site& site, bool unsafe_fixes);

/// Refuses, with the reason, every fix of a rule that traces a frame Dynamo abandoned
/// (Policy::traces_abandoned_frame) when a site of a dynamic-shape rule (Policy::dynamic_shape)
/// in the same file keeps its break (break_stays), or the file (`root`, fixed before) calls a
/// helper of such a rule's fallback block (Policy::fallback_block): traced under that frame,
/// it would break there, adding breaks to a frame that ran eagerly. Which frames inline the site is not known
/// here, so any such site of the file counts (Switch Transformers at transformers 5.24: 16 ->
/// 17 breaks, measured with torch 2.15; 16 -> 17 in training too with the dispatch left as a
/// loop at run time, GRAPHMEND_DISPATCH=loop).
void refuse_abandoned_frames(std::vector<rules::Site>& sites, const syntax::Node& root, bool unsafe_fixes);

/// True when a site of this rule inside another site's rewrite is copied there as written and
/// still breaks (Policy::retried_inside_rewrite): the next pass rewrites it.
bool retried_inside_rewrite(const rules::Site& site);

}  // namespace graphmend::fix

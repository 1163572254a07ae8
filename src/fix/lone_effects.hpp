// A deferred message must not add a graph (src/fix/lone_effects.cpp).
#pragma once

#include <vector>

#include "graphmend/rule.hpp"

namespace graphmend::fix {

/// Refuses each fix of `sites` that leaves an effect op alone (rules::Fix::effect_only) where it
/// would sit between two graph breaks that stay with no tensor op between them: Dynamo would make
/// a graph for that op alone, where the original made none (handed case c23: 3 graphs became 4).
///
/// `sites` are one file's (ctx.file), in source order; `stays[i]` is true when site i keeps its
/// break in the emitted code (refused, or a fix that is not applied). A break that stays is such
/// a site with a graph-break id, or a call of a function of the same file that holds one: Dynamo
/// (torch 2.12.1) breaks at that call and runs the function as a frame of its own, so the
/// function's start and end are graph boundaries too. Code between two boundaries is read in
/// the order it runs along the site's path (back through enclosing blocks and `if` tests to the
/// start of the function; on to the end of the function or the first `return`/`raise`); a loop
/// around the site counts as a whole. A tensor op is an expression whose value the analysis
/// knows to be a tensor. A site whose function holds no break that stays is left alone: its
/// segment reaches into callers the file does not show.
void refuse_lone_effects(const rules::Context& ctx, std::vector<rules::Site>& sites, const std::vector<bool>& stays);

}  // namespace graphmend::fix

// Help lines shared by rules: what a user can change so that Dynamo removes a break that no
// rewrite of graphmend removes.
#pragma once

#include <string>

#include "graphmend/knowledge.hpp"

namespace graphmend::rules {

/// "set `SETTING` (or `ENV` in the environment) before compiling: ..., at a cost: COST", from
/// knowledge::setting_for(kind); "" when no setting removes that kind.
std::string setting_help(knowledge::DataBreak kind);

}  // namespace graphmend::rules

// Help lines shared by rules: see src/rules/support/help.hpp.
#include "help.hpp"

#include <fmt/format.h>

namespace graphmend::rules {

std::string setting_help(knowledge::DataBreak kind) {
    const knowledge::SettingEffect effect = knowledge::setting_for(kind);
    if (effect.setting.empty()) return "";
    return fmt::format("setting `{}` (or `{}` in the environment) before compiling keeps this in the graph; the "
                       "cost: {} (measured, torch 2.12.1)",
                       effect.setting, effect.env, effect.cost);
}

}  // namespace graphmend::rules

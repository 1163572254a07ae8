// Lone CRs (classic Mac line ends): a text is analysed and fixed with LF for each lone CR, and
// its CRs are put back in the rewrite here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace graphmend::fix {

/// True when `text` has a CR and no LF: its rewrites get CRs too.
bool cr_only(std::string_view text);

/// `fixed`, a rewrite of `original` (both with LF for each lone CR), with a CR again at each
/// LF it kept from `original` at one of the byte offsets `crs` (sorted); see lone_crs.cpp.
std::string with_lone_crs(const std::string& original, const std::string& fixed, const std::vector<std::uint32_t>& crs);

}  // namespace graphmend::fix

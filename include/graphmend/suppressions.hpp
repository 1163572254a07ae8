// Suppression comments, ruff's syntax: `# noqa` (every code) or `# noqa: GM201, GM101`
// (those codes; `noqa` in any case, codes separated by commas and/or spaces) on the line a
// site starts on; `# graphmend: skip-file` on a line of its own for the whole file. Only
// real comments count (tree-sitter `comment` nodes), never text inside strings.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/syntax.hpp"

namespace graphmend {

struct Noqa {
    bool all = false;                // bare `# noqa`
    std::vector<std::string> codes;  // `# noqa: CODE, ...`
};

/// The first noqa directive in a comment's text ("# ... # noqa: GM101"); nullopt when there
/// is none. A `noqa:` followed by no code is no directive: `malformed` is then set.
std::optional<Noqa> parse_noqa(std::string_view comment, bool& malformed);

/// The file-level directive `# graphmend: skip-file` (case and blanks around `:` free).
bool is_skip_file(std::string_view comment);

struct Suppressions {
    bool skip_file = false;
    std::map<std::uint32_t, Noqa> noqa;  // by line
    std::vector<std::string> warnings;   // "path:line: ..." for a malformed directive

    /// Whether a noqa comment on `line` suppresses `code`.
    [[nodiscard]] bool suppresses(std::uint32_t line, std::string_view code) const;
};

/// The suppression comments of a parsed file.
Suppressions find_suppressions(const syntax::Tree& tree, const std::string& path);

}  // namespace graphmend

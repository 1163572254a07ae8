// Where a rewritten file gets graphmend's runtime: the blocks appended to (or refreshed in) the
// file, in its line endings and indentation, or the import of the runtime module.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/analysis.hpp"
#include "graphmend/edits.hpp"
#include "graphmend/fixer.hpp"
#include "graphmend/runtime_module.hpp"

namespace graphmend::fix {

/// The file's indentation unit: a tab, or the spaces of its first indented line ("    " when
/// it has none).
std::string indent_unit(const analysis::SourceFile& file);

/// The edit that adds the runtime blocks `stems` to the file: before the first statement that
/// uses them at module level (runtime_module::runtime_place, outside the spans of `accepted`),
/// else at the end of the file.
edits::Edit runtime_edit(const analysis::SourceFile& file, const std::vector<std::string>& stems,
                         const std::vector<edits::Edit>& accepted);

/// The runtime block of `stem` the file holds, from its first marker line to the end of its
/// end marker line, when its text is not this version's: an edit that writes this version's
/// (in the file's line endings and indentation). nullopt when it is current or its end is
/// not found (a block edited by hand is left alone).
std::optional<edits::Edit> stale_runtime_edit(const analysis::SourceFile& file, const std::string& stem);

/// The Module form: `fixed` with the file's import of the runtime module naming every helper
/// it uses (added, or extended in place); sets `out.imports_runtime`. A `fixed` that does not
/// parse is returned as it is (the caller reports it).
std::string with_module_import(std::string fixed, const runtime_module::ImportForm& form, const std::string& indent,
                               FileOutcome& out);

}  // namespace graphmend::fix

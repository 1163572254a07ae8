// Reading and parsing one input of a pass: its text (from disk or given), LF for its lone CRs,
// the tree, its suppression comments and its module index.
#pragma once

#include <optional>
#include <string>

#include "graphmend/analysis.hpp"
#include "graphmend/fixer.hpp"
#include "graphmend/suppressions.hpp"

namespace graphmend::fix {

/// The project folder written the way the file's path was given: the path minus the file's
/// place inside the project ("tests/checkouts/alpha/modeling_alpha.py" -> "tests/checkouts/alpha").
std::string project_as_given(const std::string& path, const std::string& project);

/// Reads `input` (from disk when `input.from_disk`, else takes its text), puts LF for each lone
/// CR (recording their byte offsets in `out` on the first pass), parses it and indexes it. Sets
/// `out`'s path, runtime form, disk state and project; on a read or syntax error, `out.error`
/// and nullopt. `noqa`: the first pass's slot for the file's suppression comments (found here,
/// their warnings and skip-file into `out`); nullptr in later passes. `want`, in a later pass:
/// the file as the first pass read it, else throws analysis::SourceChanged. With `keep_trees`
/// the file keeps its tree; otherwise it is kept as its index, words and text (or pruned to
/// its place on disk) and the project loads the trees it reads again.
std::optional<analysis::SourceFile> parse_input(InputFile& input, FileOutcome& out, Suppressions* noqa,
                                                const analysis::DiskText* want, bool keep_trees);

}  // namespace graphmend::fix

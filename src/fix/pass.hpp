// One pass of the pipeline over the inputs (fixer.cpp), for the fixed-point loop that runs
// passes until no pass fixes more (fixed_point.cpp).
#pragma once

#include <optional>
#include <vector>

#include "graphmend/analysis.hpp"
#include "graphmend/fixer.hpp"
#include "graphmend/suppressions.hpp"

namespace graphmend::fix {

/// One pass of the pipeline over all files: parse and index each (in parallel), the project's
/// analysis, the rules and their fixes per file (in parallel), then each rewrite parsed again.
/// Files whose `rules_on` entry is false, or with a skip-file comment, are parsed and analysed
/// (they are part of the project) but get no rules. The first pass (empty `noqa`) finds each
/// file's suppression comments; later passes, over rewritten texts with the same line numbers,
/// use the first pass's. `expected`, in a later pass: per input read from disk, the file as
/// the first pass read it; another throws analysis::SourceChanged.
std::vector<FileOutcome> run_pass(std::vector<InputFile> inputs, const FixOptions& options,
                                  const std::vector<bool>* rules_on, std::vector<Suppressions>& noqa,
                                  const std::vector<std::optional<analysis::DiskText>>* expected = nullptr);

}  // namespace graphmend::fix

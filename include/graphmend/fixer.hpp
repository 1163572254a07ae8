// graphmend's pipeline: syntax -> analysis -> rules -> edits, over files fixed together.
//
// Input: file paths with their UTF-8 text. Output: per file, the sites found (fixed or
// refused, with reasons) and the rewritten text. A file whose tree holds an ERROR or
// MISSING node is refused whole and never rewritten; a rewrite that does not parse again
// leaves the file unchanged and is reported as an error.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graphmend/rule.hpp"

namespace graphmend {

struct FixOptions {
    bool unsafe_fixes = false;  // also apply fixes whose applicability is Unsafe
    /// Threads that parse and fix files in parallel; 0: one per hardware thread. The
    /// outcomes are the same, in the same order, whatever the count.
    unsigned threads = 1;
};

/// Where a rewritten file's runtime helpers live (README "The runtime"): `Inline`, the
/// blocks of src/runtime/*.py appended to the file; `Module`, an import from the module
/// `_graphmend_runtime.py` at the root of the file's project (include/graphmend/runtime_module.hpp).
/// A file that imports the module already keeps the Module form, whichever is asked; the
/// exceptions the other way are runtime_module::form_for's.
enum class RuntimeForm { Inline, Module };

struct InputFile {
    std::string path;  // as given; also used to find the package the file belongs to
    std::string text;
    RuntimeForm runtime = RuntimeForm::Inline;
};

struct FileOutcome {
    std::string path;
    std::string project;  // the file's project folder, as given ("tests/checkouts/alpha"); see analysis.hpp
    std::string original;
    std::string fixed;                 // == original when nothing was rewritten
    std::vector<rules::Site> sites;    // in source order
    std::vector<bool> applied;         // per site: its fix is in `fixed`
    std::optional<std::string> error;  // "path:line:col: message" when the file could not be processed
    bool skip_rules = false;           // internal: a later pass of the fixed-point loop leaves this file be
    RuntimeForm runtime = RuntimeForm::Inline;  // the form asked for (InputFile::runtime)
    bool imports_runtime = false;  // `fixed` was rewritten in the Module form and imports the module

    [[nodiscard]] bool changed() const { return fixed != original; }
};

/// Runs every registered rule over the files as one project and applies the fixes, in
/// passes until no pass fixes more (at most 4): a file rewritten with sites still refused
/// is run again over its rewritten text, whose line numbers are the original's.
std::vector<FileOutcome> fix_files(std::vector<InputFile> inputs, const FixOptions& options);

}  // namespace graphmend

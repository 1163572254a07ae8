// graphmend's pipeline: syntax -> analysis -> rules -> edits, over files fixed together.
//
// Input: file paths with their UTF-8 text. Output: per file, the sites found (fixed or
// refused, with reasons) and the rewritten text. A file whose tree holds an ERROR or
// MISSING node is refused whole and never rewritten; a rewrite that does not parse again
// leaves the file unchanged and is reported as an error.
#pragma once

#include <memory>
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

/// What the configuration (see config.hpp) says for one file.
struct FileSettings {
    std::vector<std::string> selected;  // the codes of the rules whose sites are kept
    std::optional<bool> unsafe_fixes;   // set: replaces FixOptions::unsafe_fixes for this file
};

struct InputFile {
    std::string path;  // as given; also used to find the package the file belongs to
    std::string text;
    /// Null: every rule, and FixOptions::unsafe_fixes. A site of a rule not selected, or
    /// one a `# noqa` comment on its first line suppresses, is neither fixed nor reported
    /// (it is counted in FileOutcome::suppressed); a file with a `# graphmend: skip-file`
    /// comment is analysed with the others but gets no rules.
    std::shared_ptr<const FileSettings> settings = nullptr;
};

struct FileOutcome {
    std::string path;
    std::string project;  // the file's project folder, as given ("tests/checkouts/alpha"); see analysis.hpp
    std::string original;
    std::string fixed;                 // == original when nothing was rewritten
    std::vector<rules::Site> sites;    // in source order
    std::vector<bool> applied;         // per site: its fix is in `fixed`
    std::optional<std::string> error;  // "path:line:col: message" when the file could not be processed
    std::size_t suppressed = 0;        // sites left out: a rule not selected, or a `# noqa` comment
    std::vector<std::string> warnings; // "path:line: message": a malformed `# noqa` or `# graphmend:` comment
    bool skip_rules = false;           // internal: a later pass of the fixed-point loop leaves this file be

    [[nodiscard]] bool changed() const { return fixed != original; }
};

/// Runs every registered rule over the files as one project and applies the fixes, in
/// passes until no pass fixes more (at most 4): a file rewritten with sites still refused
/// is run again over its rewritten text, whose line numbers are the original's.
std::vector<FileOutcome> fix_files(std::vector<InputFile> inputs, const FixOptions& options);

}  // namespace graphmend

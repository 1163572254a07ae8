// graphmend output: reports, unified diffs, and atomic file writes.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graphmend/fixer.hpp"

namespace graphmend::output {

/// One line per site, `path:line:col: CODE [fixed|refused|not applied] what: detail`,
/// then a summary line per file: sites found, fixed, refused, and suppressed when any
/// (ruff/clang-tidy style).
std::string text_report(const FileOutcome& outcome);

/// The report of all files as JSON: {"files": [{"path", "project", "changed", "error",
/// "sites": [...]}], "projects": [{"project", "files", "sites", "fixed", "refused", "errors"}],
/// "totals": {...}}. Projects are in sorted order.
nlohmann::json json_report(const std::vector<FileOutcome>& outcomes);

/// One line per project (sorted), `project PATH: N files, S sites found, F fixed, R refused`,
/// when the outcomes span more than one project; empty otherwise.
std::string project_report(const std::vector<FileOutcome>& outcomes);

/// A unified diff (3 lines of context) from `before` to `after`, with `--- a/PATH` and
/// `+++ b/PATH` headers; empty when the texts are equal.
std::string unified_diff(const std::string& path, const std::string& before, const std::string& after);

/// What a write does with a path that is a link.
enum class LinkPolicy {
    Refuse,        // a symbolic link, or a file with more than one hard link, is not written (an error)
    WriteThrough,  // write the file a symbolic link points to (the link stays); rewrite a
                   // hard-linked file in place, so every name sees the new text
};

/// Writes `text` to `path` atomically: a temporary file `.NAME.graphmend-XXXXXX` in the same
/// folder, then a rename. Keeps the mode and (where the process may change it) the owner and
/// group of an existing file. Links are never silently replaced by a plain file: see
/// LinkPolicy (a hard-linked file rewritten in place is not atomic; the new text stays in the
/// temporary if that write fails). Throws std::runtime_error on failure, in which case `path`
/// is untouched (except after a failed in-place write, as the message says).
void write_atomically(const std::string& path, const std::string& text, LinkPolicy links = LinkPolicy::Refuse);

/// Reads a whole file. Throws std::runtime_error when it cannot be read.
std::string read_file(const std::string& path);

/// The *.py files of each path, found as config::discover finds them with no configuration
/// file read (the default excludes, .gitignore). Throws std::runtime_error for a missing path.
std::vector<std::string> collect_python_files(const std::vector<std::string>& paths);

}  // namespace graphmend::output

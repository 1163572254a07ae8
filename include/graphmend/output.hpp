// graphmend output: reports, unified diffs, and atomic file writes.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graphmend/fixer.hpp"

namespace graphmend::output {

/// One line per site, `path:line:col: CODE [fixed|refused|not applied] what: detail`,
/// then a summary line per file: sites found, fixed, refused (ruff/clang-tidy style).
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

/// The unified diff that creates the file PATH with `text` (`--- /dev/null`, `+++ b/PATH`).
std::string new_file_diff(const std::string& path, const std::string& text);

/// Writes `text` to `path` atomically: a temporary file in the same folder, then a rename.
/// Keeps the permissions of an existing file. Throws std::runtime_error on failure, in
/// which case `path` is untouched.
void write_atomically(const std::string& path, const std::string& text);

/// Reads a whole file. Throws std::runtime_error when it cannot be read.
std::string read_file(const std::string& path);

/// The *.py files of each path: a file as given, a folder recursively in sorted order,
/// skipping hidden folders, __pycache__ and graphmend's runtime modules (_graphmend_runtime.py). Throws std::runtime_error for a missing path.
std::vector<std::string> collect_python_files(const std::vector<std::string>& paths);

}  // namespace graphmend::output

// The parts of a `fix` or `check` session (include/graphmend/app.hpp, run_session): finding
// and reading its inputs (inputs.cpp) and delivering its outcomes (delivery.cpp).
#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graphmend/app.hpp"
#include "graphmend/fixer.hpp"
#include "graphmend/output.hpp"
#include "graphmend/runtime_module.hpp"

namespace graphmend::app {

/// What `fix` does with a link it would rewrite in place (--write-through-links).
output::LinkPolicy links(const Options& opt);

/// Prints each warning to stderr ("warning: ..."), unless --quiet.
void warn(const Options& opt, const std::vector<std::string>& warnings);

// --- inputs (inputs.cpp) -------------------------------------------------------------------

/// An input found but not read yet: its path, configuration and runtime form.
struct Pending {
    std::string path;
    std::shared_ptr<const FileSettings> settings;
    RuntimeForm runtime = RuntimeForm::Inline;
    std::optional<std::string> text;  // stdin's, read at once
};

/// The inputs: stdin's text (read from `in`), or the *.py files of the paths (config::discover:
/// excludes, .gitignore), each with its configuration; what could not be found goes to
/// `errors`. Every configuration is read (a malformed one throws config::ConfigError) before
/// any file.
std::vector<Pending> find_inputs(const Options& opt, std::istream& in, std::vector<std::string>& errors);

/// The inputs of `group`. A file is read by fix_files (InputFile::from_disk), as it parses it,
/// and its text is held only while it is needed; stdin's text is read already, and `-o`'s file
/// is read here (its output is written even when it is unchanged).
std::vector<InputFile> read_inputs(const Options& opt, std::vector<Pending>& pending,
                                   const std::vector<std::size_t>& group, std::vector<std::string>& errors);

/// Moves the outcomes of inputs that could not be read (FileError::Read) to `errors`: as a file
/// read_inputs cannot read, they have no outcome.
void take_read_errors(std::vector<FileOutcome>& outcomes, std::vector<std::string>& errors);

/// Independent groups (fixer.hpp, independent_groups) joined, in order, into batches of a few
/// megabytes of source.
std::vector<std::vector<std::size_t>> in_batches(const std::vector<std::vector<std::size_t>>& groups,
                                                 const std::vector<std::string>& paths);

// --- delivery (delivery.cpp) ---------------------------------------------------------------

/// A rewrite that is not written: the outcome is left as it was, and its fixes are reported as
/// not applied, for `why`. A site is "fixed" only where its fix is in the file.
void not_written(FileOutcome& o, const std::string& why);

/// The files `fix` would rewrite in place but must not, being links (output::link_refusal):
/// each is left unchanged before the runtime modules are planned, its fixes reported as not
/// applied for `why`, and its message returned (per outcome, "" for the others). `check` asks
/// too, so that it counts what `fix` would write.
std::vector<std::string> refuse_links(const Options& opt, std::vector<FileOutcome>& outcomes, const std::string& why);

/// Prints diffs, `-` output, and writes files (fix); appends, per outcome, whether it was
/// written and the failed write's message ("" for none).
void deliver(const Options& opt, output::Mode mode, const std::vector<FileOutcome>& outcomes,
             std::vector<bool>& written, std::vector<std::string>& write_errors);

/// The runtime modules the rewritten files import: a diff with --diff, a line in the report.
void show_runtime_modules(const std::vector<runtime_module::Planned>& modules, const Options& opt, bool write);

}  // namespace graphmend::app

// graphmend output: reports in every format, unified diffs, exit codes, and file writes.
//
// Human formats (text, concise, grouped) go to stderr, since stdout carries code and
// diffs; machine formats (json, sarif, github) go to stdout or --output-file. Columns are
// 1-based and counted in Unicode code points, as ruff counts them (syntax::LineCol counts
// bytes; see site_range); end positions are exclusive (the character after the site).
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "graphmend/fixer.hpp"

namespace graphmend::output {

inline constexpr std::string_view kVersion = GRAPHMEND_VERSION;  // CMakeLists.txt project(VERSION)

/// A path as a SARIF artifact URI: a relative path stays relative (to the folder graphmend ran
/// in), an absolute one becomes a file:// URI; bytes outside RFC 3986's unreserved set and '/'
/// are percent-encoded.
std::string uri_of(std::string_view path);
/// The project's address, for SARIF's informationUri and helpUri (docs/rules/NAME.md under
/// it). The project has no public address yet: `.invalid` (RFC 2606) says so.
inline constexpr std::string_view kHomepage = "https://graphmend.invalid";

// --- sites ---------------------------------------------------------------------------------

/// What a run does with the fixed text: check writes nothing; fix writes it (in place, -o,
/// or stdout for `fix -`); diff (`fix --diff`) prints a diff and writes nothing.
enum class Mode { Check, Fix, Diff };

/// A site's status. Fixed: its fix is in the text `fix` wrote (or printed); fixable: its fix
/// would be (check, --diff: nothing is written, as ruff's `--diff` says "Would fix"). The
/// `-when` forms: the fix removes the break only where its condition holds at run time
/// (rules::Fix::condition; elsewhere the code runs as written and keeps its break). Refused:
/// no fix, or its fix could not be applied; unsafe: an unsafe fix not applied (--unsafe-fixes).
enum class SiteStatus { Fixed, FixedWhen, Fixable, FixableWhen, Refused, Unsafe };
SiteStatus site_status(const FileOutcome& o, std::size_t i, Mode mode);
/// "fixed", "fixed-when", "fixable", "fixable-when", "refused", "unsafe".
std::string_view status_name(SiteStatus status);
/// Fixed, FixedWhen, Fixable, FixableWhen: the fix is in the output (fix) or would be.
bool has_fix_applied(SiteStatus status);
/// The condition of the site's fix ("" when it has no fix or removes the break for every
/// input); a fix that removes no break (graph_break empty) has none.
std::string_view site_condition(const FileOutcome& o, std::size_t i);

struct Position {
    std::uint32_t line = 1;
    std::uint32_t column = 1;             // 1-based, in code points
    std::optional<std::uint32_t> offset;  // byte offset in the original text; absent when unknown
};

struct Range {
    Position start;
    Position end;  // exclusive
};

/// Lines and byte offsets of one file's original text, to place sites and edits: from the
/// text, or from the outcome's TextLines once its texts were released.
class Placer {
public:
    explicit Placer(const std::string& text);
    explicit Placer(const FileOutcome& outcome);
    [[nodiscard]] Position at(std::uint32_t offset) const;
    /// The code-point column of 1-based byte column `byte_col` on `line`.
    [[nodiscard]] std::uint32_t column(std::uint32_t line, std::uint32_t byte_col) const;

private:
    std::optional<TextLines> own_;
    const TextLines* lines_;
};

/// The site's range in the original text. A site a later pass found (SiteOrigin::FoundLater)
/// keeps its line and its byte column in the rewritten text, with no offsets and end == start.
Range site_range(const FileOutcome& o, std::size_t i, const Placer& placer);
SiteOrigin site_origin(const FileOutcome& o, std::size_t i);

/// The site's fix applies as its own edits on the original text: it has a fix, found and
/// fixed in the first pass, and it is not inside another applied site's edit.
bool own_edits(const FileOutcome& o, std::size_t i);

/// The site's message after `CODE [status] `: `what: removes graph break ...` (`... when
/// CONDITION` for a conditional fix) or the reason.
std::string site_message(const FileOutcome& o, std::size_t i);
/// The text of the file's error after its `path:line:col: ` (or `path: `) prefix.
std::string error_message(const FileOutcome& o);

// --- a run's results -----------------------------------------------------------------------

/// What a run did to its files, for every report.
struct Results {
    const std::vector<FileOutcome>& outcomes;
    Mode mode = Mode::Check;
    std::vector<bool> written;               // per outcome: the fixed text was written (file, -o or stdout)
    std::vector<std::string> write_errors;   // per outcome: "" or the failed write's message
    std::vector<std::string> read_errors;    // inputs that could not be read (no outcome)

    /// Files whose rewritten text was written (fix), or would be (check, --diff).
    [[nodiscard]] std::size_t rewritten() const;
    [[nodiscard]] bool written_at(std::size_t i) const { return i < written.size() && written[i]; }
    [[nodiscard]] std::string_view write_error(std::size_t i) const {
        return i < write_errors.size() ? std::string_view(write_errors[i]) : std::string_view();
    }
};

struct ExitPolicy {
    bool exit_zero = false;             // --exit-zero
    bool exit_non_zero_on_fix = false;  // fix --exit-non-zero-on-fix
};

/// 2: a read, write or internal error; else 0 with --exit-zero; else 1 for a finding: a
/// syntax error, a fixable site (check; fixable-when too), a file that would change (--diff),
/// a rewritten file (fix --exit-non-zero-on-fix); else 0. Refused and unsafe sites alone give 0.
int exit_code(const Results& results, const ExitPolicy& policy);

// --- formats -------------------------------------------------------------------------------

enum class Format { Text, Concise, Grouped, Json, Sarif, Github };
inline constexpr std::string_view kFormatNames[] = {"text", "concise", "grouped", "json", "sarif", "github"};
std::optional<Format> parse_format(std::string_view name);
inline bool is_machine(Format f) { return f == Format::Json || f == Format::Sarif || f == Format::Github; }

/// ANSI colour for human formats: set when the stream is a terminal and NO_COLOR is unset
/// or empty; FORCE_COLOR (non-empty) forces it, as in ruff.
struct Style {
    bool colour = false;
    [[nodiscard]] std::string paint(std::string_view text, std::string_view sgr) const;
};
bool colour_wanted(std::FILE* stream);

/// One line per site, `path:line:col: CODE [LABEL] what: detail`, LABEL the status (fixed,
/// fixed-when, fixable, fixable-when, refused) or `not applied` / `unsafe fix not applied
/// (--unsafe-fixes)`; then a summary line per file: sites found, fixed (fixable for check and
/// --diff), fixed-when (fixable-when) when any, refused, and suppressed when any
/// (ruff/clang-tidy style).
std::string text_report(const FileOutcome& outcome, Mode mode, const Style& style = {});
/// The lines of the sites that fail `check` (fixable or fixable-when: a fix would apply) and
/// the file's error: what `-q` prints (ruff's -q prints the diagnostics only).
std::string findings_report(const FileOutcome& outcome, Mode mode, const Style& style = {});
/// text_report's site and error lines, without the per-file summary.
std::string concise_report(const FileOutcome& outcome, Mode mode, const Style& style = {});
/// ruff's grouped: `path:` then `  line:col CODE [status] message` lines, then a blank line.
std::string grouped_report(const FileOutcome& outcome, Mode mode, const Style& style = {});

/// One line per project (sorted), `project PATH: N files, S sites found, F fixed, R refused`
/// (`fixable` for check and --diff; `W fixed-when` when any), when the outcomes span more than
/// one project; empty otherwise.
std::string project_report(const Results& results);
/// The end of a human report: project_report, a `total:` line (more than one project),
/// and `N files checked, M rewritten` (more than one file).
std::string batch_summary(const Results& results);
/// --statistics: `count\tCODE\t[*] name (F fixed, R refused, U unsafe)` per code, ruff's table
/// (`fixable` for check and --diff; `W fixed-when` when any).
std::string statistics_report(const Results& results, const Style& style = {});
/// --show-fixes: `Fixed N sites:` (`Would fix` for check and --diff; `Fixed N sites (W
/// fixed-when):` when any is conditional) then `- path:` and `    n × CODE (name)` per file (ruff).
std::string fixes_report(const Results& results, const Style& style = {});

/// The JSON report (schema docs/report.schema.json, "schema_version": 2).
nlohmann::json json_report(const Results& results);
nlohmann::json json_report(const std::vector<FileOutcome>& outcomes, Mode mode);
/// SARIF 2.1.0: one run, the rules of the registry, a result per site and syntax error.
nlohmann::json sarif_report(const Results& results);
/// GitHub Actions workflow commands, `::LEVEL title=graphmend (CODE),file=...::message`.
std::string github_report(const Results& results);

/// Where reports go and what they hold.
struct Emit {
    Format format = Format::Text;
    std::string output_file;  // empty: human formats to stderr, machine formats to stdout
    std::string report_json;  // --report-json: also the JSON report here ("-": stdout)
    bool quiet = false;
    bool statistics = false;
    bool show_fixes = false;
};

/// Prints or writes every report of `results`. Error lines (reads, writes, file errors)
/// always reach stderr. Returns false when a report file could not be written.
bool emit_reports(const Results& results, const Emit& emit);

// --- progress ------------------------------------------------------------------------------

/// One line on a terminal, `graphmend: parsed N of M files`, rewritten in place once the run
/// has lasted `delay`, at most every `interval`, and erased by finish(). Thread-safe.
class Progress {
public:
    using Clock = std::function<std::chrono::steady_clock::time_point()>;
    explicit Progress(std::FILE* stream, Clock clock = std::chrono::steady_clock::now,
                      std::chrono::milliseconds delay = std::chrono::milliseconds(500),
                      std::chrono::milliseconds interval = std::chrono::milliseconds(100));
    void update(std::string_view stage, std::size_t done, std::size_t total);
    void finish();

private:
    std::FILE* stream_;
    Clock clock_;
    std::chrono::steady_clock::time_point start_;
    std::optional<std::chrono::steady_clock::time_point> last_;
    std::chrono::milliseconds delay_, interval_;
    std::mutex mutex_;
};

// --- files ---------------------------------------------------------------------------------

/// A unified diff (3 lines of context) from `before` to `after`, with `--- a/PATH` and
/// `+++ b/PATH` headers; empty when the texts are equal. PATH is the path as `git apply` and
/// `patch -p1` take it from the working folder: relative to it and lexically normal, or, for a
/// file outside it, absolute without the leading `/` (see header_path in diff.cpp).
std::string unified_diff(const std::string& path, const std::string& before, const std::string& after);

/// The unified diff that creates the file PATH with `text` (`--- /dev/null`, `+++ b/PATH`).
std::string new_file_diff(const std::string& path, const std::string& text);

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

/// write_atomically for a rewrite of a file read from disk as the bytes `read` describes
/// (FileOutcome::disk): first reads the file again, and throws std::runtime_error "PATH: changed
/// on disk since graphmend read it; not written" when it is no longer those bytes (edited or
/// replaced since), or "PATH: cannot read: REASON; not written" (removed since), so that a
/// rewrite never silently loses a change made while graphmend ran, nor brings back a removed file.
void write_if_unchanged(const std::string& path, const std::string& text, const analysis::DiskText& read,
                        LinkPolicy links = LinkPolicy::Refuse);

/// Why write_atomically(path, ..., links) would refuse `path` because it is a link (the
/// message it throws), or "" when it would write it.
std::string link_refusal(const std::string& path, LinkPolicy links);

/// The *.py files of each path, found as config::discover finds them with no configuration
/// file read (the default excludes, .gitignore). Throws std::runtime_error for a missing path.
std::vector<std::string> collect_python_files(const std::vector<std::string>& paths);

}  // namespace graphmend::output

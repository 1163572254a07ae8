// graphmend's pipeline: syntax -> analysis -> rules -> edits, over files fixed together.
//
// Input: file paths with their UTF-8 text. Output: per file, the sites found (fixed or
// refused, with reasons) and the rewritten text. A file whose tree holds an ERROR or
// MISSING node is refused whole and never rewritten; a rewrite that does not parse again
// leaves the file unchanged and is reported as an error.
#pragma once

#include <map>
#include <memory>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/file_settings.hpp"
#include "graphmend/rule.hpp"

namespace graphmend {

struct FixOptions {
    bool unsafe_fixes = false;  // also apply fixes whose applicability is Unsafe
    /// Threads that parse and fix files in parallel; 0: one per hardware thread. The
    /// outcomes are the same, in the same order, whatever the count.
    unsigned threads = 1;
    /// Called as files are parsed ("parsed") and fixed ("fixed"), `done` of `total` in this
    /// pass, from any worker thread (the callee synchronises); empty: no calls.
    std::function<void(std::string_view stage, std::size_t done, std::size_t total)> progress = nullptr;
    /// Keep every file's parse tree through the analysis, not only the trees it reads
    /// (analysis::Project's constructor): the same outcomes with more memory; the reference
    /// tests compare the default with.
    bool keep_trees = false;
};

/// Where a rewritten file's runtime helpers live (docs/runtime.md): `Inline`, the
/// blocks of src/runtime/*.py appended to the file; `Module`, an import from the module
/// `_graphmend_runtime.py` at the root of the file's project (include/graphmend/runtime_module.hpp).
/// A file that imports the module already keeps the Module form, whichever is asked; the
/// exceptions the other way are runtime_module::form_for's.
enum class RuntimeForm { Inline, Module };

struct InputFile {
    std::string path;  // as given; also used to find the package the file belongs to
    std::string text;
    /// Null: every rule, and FixOptions::unsafe_fixes. A site of a rule not selected, or
    /// one a `# noqa` comment on its first line suppresses, is neither fixed nor reported
    /// (it is counted in FileOutcome::suppressed); a file with a `# graphmend: skip-file`
    /// comment is analysed with the others but gets no rules.
    std::shared_ptr<const FileSettings> settings = nullptr;
    RuntimeForm runtime = RuntimeForm::Inline;
    /// Set: `text` is empty, and the file at `path` is read when the first pass parses it,
    /// then again only where the analysis or a later pass needs it. An unchanged file without
    /// sites then holds no text, in the analysis or in its outcome (docs/measuring.md, "Memory"). A file
    /// that cannot be read gets an outcome with FileError::Read, and so does every file of the
    /// inputs when one of them changes on disk while they are fixed, twice running (a first
    /// time, they are fixed again from the start).
    bool from_disk = false;
};

/// Where a site's byte range and its fix's edits come from. Rewrites keep line counts, so a
/// site's line is always the original's; its column and offsets may not be.
enum class SiteOrigin : std::uint8_t {
    FirstPass,   // found and fixed (or refused) on the original text
    FixedLater,  // found on the original; a later pass fixed it: the fix's edits are in that pass's text
    FoundLater,  // found by a later pass: its range and edits are in the text the pass before wrote
};

/// What FileOutcome::error is: the input's syntax error (a finding, at `error_at`), a
/// rewrite that does not parse (an internal error; the file is left unchanged), an input
/// read from disk (InputFile::from_disk) that could not be read or changed while it was fixed
/// (an I/O error: the file is left unchanged and has no sites), its project's runtime module
/// that could not be read or written (Write, an I/O error; runtime_module::write), or a
/// `_graphmend_runtime.py` of its project that graphmend did not write (Project, a finding:
/// the file is left unchanged). Exit codes: output::exit_code.
enum class FileError : std::uint8_t { Syntax, Internal, Read, Write, Project };

/// Where the lines of a text start, and the bytes of its lines that hold non-ASCII bytes: what
/// a report needs to turn byte offsets into lines and code-point columns once the text itself
/// is released (FileOutcome::release_texts). Offsets and lines as in syntax::SourceText.
struct TextLines {
    std::uint32_t size = 0;                      // bytes of the text
    std::vector<std::uint32_t> starts{0};        // byte offset of each line's first byte
    std::map<std::uint32_t, std::string> wide;   // 1-based line -> its bytes (with its '\n'), when one is >= 0x80

    static TextLines of(std::string_view text);
    /// The 1-based code-point column of 1-based byte column `byte_col` on `line` (columns past
    /// the line count as bytes).
    [[nodiscard]] std::uint32_t column(std::uint32_t line, std::uint32_t byte_col) const;
};

struct FileOutcome {
    std::string path;
    std::string project;  // the file's project folder, as given ("tests/checkouts/alpha"); see analysis.hpp
    std::string original;              // empty when texts_on_disk
    std::string fixed;                 // == original when nothing was rewritten
    std::vector<rules::Site> sites;    // in source order
    std::vector<bool> applied;         // per site: its fix is in `fixed`
    std::vector<SiteOrigin> origin;    // per site (empty: all FirstPass)
    /// The first pass's edit appending the runtime blocks its fixes call (absent: none was
    /// needed, or the file had them): part of every applied first-pass fix that names a block.
    std::optional<edits::Edit> runtime_edit;
    std::optional<std::string> error;  // "path:line:col: message" when the file could not be processed
    std::size_t suppressed = 0;        // sites left out: a rule not selected, or a `# noqa` comment
    std::vector<std::string> warnings; // "path:line: message": a malformed `# noqa` or `# graphmend:` comment
    /// What the analysis assumed, or could not resolve, that decides what is in scope
    /// (analysis::Project::notes): a base class taken from the shipped table, a base that
    /// resolves neither way. Found by the first pass; reports show them with the file's sites.
    std::vector<analysis::Note> notes;
    FileError error_kind = FileError::Syntax;
    syntax::LineCol error_at;          // where `error` points in the input (1:1 for an internal error)
    bool skip_rules = false;           // internal: a later pass of the fixed-point loop leaves this file be
    RuntimeForm runtime = RuntimeForm::Inline;  // the form asked for (InputFile::runtime)
    bool imports_runtime = false;  // `fixed` was rewritten in the Module form and imports the module
    /// An input read from disk: its bytes' size and hash as first read. When `texts_on_disk`,
    /// the file was left as it was and had no site: `original` and `fixed` are empty, and
    /// the text is the file's.
    std::optional<analysis::DiskText> disk;
    bool texts_on_disk = false;
    bool cr_only = false;  // internal: its lines all end in a lone CR, read as LF (fix_files)
    /// internal: the offsets of the lone CRs, read as LF, of a file that has LFs too (fix_files)
    std::vector<std::uint32_t> lone_crs;

    [[nodiscard]] bool changed() const { return texts_released ? was_changed : fixed != original; }

    /// The lines of `original`, kept when the texts are released (else empty).
    std::optional<TextLines> lines;

    /// Frees both texts once the file was delivered (written, or its diff printed), keeping
    /// `lines` when a site or an error needs the original's lines to place its position in a
    /// report. changed() keeps its answer. A batch keeps only what its reports need.
    void release_texts() {
        was_changed = changed();
        texts_released = true;
        if (!sites.empty() || error) lines = TextLines::of(original);
        // Swapped with empty strings: assigning one keeps the capacity (libstdc++).
        std::string().swap(fixed);
        std::string().swap(original);
    }

private:
    bool texts_released = false;
    bool was_changed = false;
};

/// The inputs split into groups that fix_files may run one at a time with the outcomes it
/// gives when run on them all at once: each index of `paths` in exactly one group, every group
/// a run of consecutive indices, in order. The files of a folder project (analysis.hpp) are
/// analysed only with their own folder and the packages among the inputs, so when no input
/// belongs to a package, each folder project is a group of its own (a batch of Hub checkouts
/// holds one checkout's trees at a time). Otherwise, or when a project's files are not
/// consecutive, there is one group of every input.
std::vector<std::vector<std::size_t>> independent_groups(const std::vector<std::string>& paths);

/// Runs every registered rule over the files as one project and applies the fixes, in
/// passes until no pass fixes more (at most 4): a file rewritten with sites still refused
/// is run again over its rewritten text, whose line numbers are the original's.
std::vector<FileOutcome> fix_files(std::vector<InputFile> inputs, const FixOptions& options);

}  // namespace graphmend

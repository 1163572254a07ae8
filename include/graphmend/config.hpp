// graphmend configuration, following ruff's: `[tool.graphmend]` in pyproject.toml, or the
// top-level keys of graphmend.toml / .graphmend.toml, found by walking up from each file's
// folder (the nearest wins; in one folder .graphmend.toml before graphmend.toml before
// pyproject.toml, and a pyproject.toml without [tool.graphmend] is skipped). The command
// line's flags are applied over whichever file a file gets (ruff's CLI layer).
//
// Rule selectors are code prefixes, like ruff's: "GM" and "ALL" select every rule, "GM2"
// every GM2xx rule, "GM201" one rule. Between selectors of one layer the more specific (the
// longer) wins; at the same length `ignore` wins over `select`.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/file_settings.hpp"

namespace graphmend::config {

namespace fs = std::filesystem;

/// A malformed configuration: what() is "PATH:LINE:COL: message" (or "PATH: message").
class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Why `glob` is not a valid glob (an unclosed `[` or `{`), or nullopt when it is one.
std::optional<std::string> glob_error(std::string_view glob);

/// ruff's glob (the `globset` crate's defaults): `*` matches any run of characters, `/`
/// included; `?` one character; `[a-z]`, `[!a]`; `{a,b}`; `**/` and `/**/` also match no
/// folder at all; `\` escapes. Case-sensitive. The whole of `text` must match.
bool glob_match(std::string_view glob, std::string_view text);

/// An `exclude`/`per-file-ignores` pattern, as ruff reads one: the glob as written, matched
/// against a path's last component (only when it holds no `/`), and the glob made absolute
/// against a folder (the config file's; the working folder's for the command line), matched
/// against the absolute path.
class FilePattern {
public:
    /// A pattern matched against last components only (the built-in excludes).
    static FilePattern basename(std::string glob);
    /// A user's pattern, relative to `folder` (absolute).
    static FilePattern relative_to(std::string glob, const fs::path& folder);

    [[nodiscard]] const std::string& glob() const { return glob_; }
    /// `path` is absolute and lexically normal.
    [[nodiscard]] bool matches(const fs::path& path) const;

private:
    std::string glob_;
    std::vector<std::string> name_globs_;  // the glob spelled out (see glob_match), for last components
    std::vector<std::string> path_globs_;  // the absolute glob spelled out, for whole paths
};

/// ruff's built-in `exclude` (used when a config sets no `exclude`), plus __pycache__.
const std::vector<std::string>& default_excludes();

/// One layer of rule selection (the defaults, a config file, the command line).
struct RuleSelection {
    std::optional<std::vector<std::string>> select;  // set: replaces what layers below selected
    std::vector<std::string> extend_select;
    std::vector<std::string> ignore;
};

/// Every rule code, in registry order.
std::vector<std::string> all_codes();

/// True for "ALL" and for a prefix ("GM", "GM2", "GM201") of a rule's code.
bool valid_selector(std::string_view selector);

/// True when `selector` selects `code`.
bool selects(std::string_view selector, std::string_view code);

/// The codes the layers select, applied in order over "everything selected" (ruff's
/// resolution, with graphmend's default `select = ["ALL"]`).
std::vector<std::string> resolve_rules(const std::vector<const RuleSelection*>& layers);

struct PerFileIgnore {
    FilePattern pattern;
    bool negated = false;  // `!glob`: applies to the files the glob does not match
    std::vector<std::string> codes;
};

/// The contents of one configuration file.
struct Config {
    std::string path;  // the file, as found
    RuleSelection rules;
    std::optional<std::vector<FilePattern>> exclude;
    std::vector<FilePattern> extend_exclude;
    std::vector<PerFileIgnore> per_file_ignores;
    std::optional<bool> unsafe_fixes;
    std::optional<bool> respect_gitignore;
    std::optional<std::string> target_torch;
};

/// The torch version the rules encode.
inline constexpr std::string_view kTargetTorch = "2.12";

/// Parses a configuration's text. `pyproject`: read [tool.graphmend] and return nullopt
/// when there is none; otherwise the top-level keys. Globs are relative to `folder`.
/// Throws ConfigError ("PATH:LINE:COL: ..."); appends warnings (an unknown key, a
/// target-torch other than kTargetTorch) to `warnings`.
std::optional<Config> parse_config(std::string_view text, const std::string& path, bool pyproject,
                                   const fs::path& folder, std::vector<std::string>& warnings);

/// The command line's settings, applied over every configuration.
struct Overrides {
    RuleSelection rules;
    std::vector<FilePattern> extend_exclude;  // relative to the working folder
    std::optional<bool> unsafe_fixes;
    bool no_respect_gitignore = false;
    std::string config_file;  // --config: this file for every input, globs relative to the working folder
    bool isolated = false;    // --isolated: no configuration file at all
};

/// What one configuration plus the overrides come to.
struct Settings {
    std::string config_path;  // empty: the defaults
    std::vector<std::string> selected;
    std::vector<FilePattern> exclude;  // the defaults or the config's `exclude`, then every extend-exclude
    std::vector<PerFileIgnore> per_file_ignores;
    std::optional<bool> unsafe_fixes;
    bool respect_gitignore = true;

    [[nodiscard]] bool excluded(const fs::path& path) const;
    /// What the driver applies to the file at `path` (absolute, lexically normal).
    [[nodiscard]] std::shared_ptr<const FileSettings> for_file(const fs::path& path) const;
};

Settings resolve_settings(const Config* config, const Overrides& overrides);

/// Finds and caches the settings of folders. Not thread-safe.
class Resolver {
public:
    /// Throws ConfigError when --config names a file that cannot be read or is malformed.
    explicit Resolver(Overrides overrides);
    Resolver(const Resolver&) = delete;
    Resolver& operator=(const Resolver&) = delete;

    /// The settings for files in `folder` (absolute, lexically normal). Throws ConfigError.
    const Settings& for_folder(const fs::path& folder);
    /// The settings for the file at `path` (as given).
    std::shared_ptr<const FileSettings> for_file(const std::string& path);
    /// Warnings found since the last call, in the order found.
    std::vector<std::string> take_warnings();

private:
    // The settings of one configuration file; null for a pyproject.toml without [tool.graphmend].
    const Settings* load(const fs::path& file, bool pyproject, const fs::path& folder);

    Overrides overrides_;
    std::optional<Settings> fixed_;  // --config or --isolated
    Settings defaults_;
    std::map<fs::path, const Settings*> folders_;
    std::map<fs::path, std::unique_ptr<Settings>> files_;
    std::vector<std::string> warnings_;
};

/// The file-system walk's result.
struct Discovered {
    std::vector<std::string> files;     // per path in order; a folder's files in sorted order
    std::vector<bool> named;            // per file: given by itself as a path (not found in a folder)
    std::vector<std::string> warnings;  // "PATH: ..." (no Python files, a link loop, an unreadable folder)
    std::vector<std::string> errors;    // "PATH: no such file or folder"
};

/// The *.py files of `paths`, as ruff finds them: a path given is taken as it is (never
/// excluded); a folder is walked, following symbolic links (a loop is warned about and
/// skipped), leaving out what the `exclude` patterns of the nearest configuration match and,
/// inside a git work tree, what git ignores (.gitignore files, .git/info/exclude, the global
/// excludes file) unless respect-gitignore is off. Throws ConfigError.
Discovered discover(const std::vector<std::string>& paths, Resolver& resolver);

}  // namespace graphmend::config

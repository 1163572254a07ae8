// Globs and file patterns, as ruff reads `exclude` and `per-file-ignores`: see config.hpp.
#include <fmt/format.h>

#include "graphmend/config.hpp"

namespace graphmend::config {

namespace {

// The end of the `[...]` class opening at `i`, or npos when it is not closed.
std::size_t class_end(std::string_view g, std::size_t i) {
    std::size_t j = i + 1;
    if (j < g.size() && (g[j] == '!' || g[j] == '^')) ++j;
    if (j < g.size() && g[j] == ']') ++j;  // a leading `]` is a member
    while (j < g.size() && g[j] != ']') ++j;
    return j < g.size() ? j : std::string_view::npos;
}

bool class_matches(std::string_view cls, char c) {  // cls: between `[` and `]`
    bool negated = false;
    if (!cls.empty() && (cls[0] == '!' || cls[0] == '^')) {
        negated = true;
        cls.remove_prefix(1);
    }
    bool found = false;
    for (std::size_t k = 0; k < cls.size() && !found; ++k) {
        if (k + 2 < cls.size() && cls[k + 1] == '-') {
            found = cls[k] <= c && c <= cls[k + 2];
            k += 2;
        } else {
            found = cls[k] == c;
        }
    }
    return found != negated;
}

// The end of the `{...}` group opening at `i` (nesting counted), or npos.
std::size_t brace_end(std::string_view g, std::size_t i) {
    int depth = 0;
    for (std::size_t j = i; j < g.size(); ++j) {
        if (g[j] == '\\') {
            ++j;
        } else if (g[j] == '[') {
            const auto e = class_end(g, j);
            if (e == std::string_view::npos) return e;
            j = e;
        } else if (g[j] == '{') {
            ++depth;
        } else if (g[j] == '}' && --depth == 0) {
            return j;
        }
    }
    return std::string_view::npos;
}

// The glob with its `{a,b}` groups and `**` forms spelled out as plain globs (`*`, `?`,
// classes and escapes only). `**/` may match no folder: "a/**/b" is "a/b" or "a/*/b".
void expand(std::string_view g, std::string prefix, std::vector<std::string>& out) {
    for (std::size_t i = 0; i < g.size(); ++i) {
        if (g[i] == '\\' && i + 1 < g.size()) {
            prefix += g.substr(i, 2);
            ++i;
        } else if (g[i] == '[') {
            const auto e = class_end(g, i);
            prefix += g.substr(i, e - i + 1);
            i = e;
        } else if (g[i] == '{') {
            const auto e = brace_end(g, i);
            const std::string_view body = g.substr(i + 1, e - i - 1);
            const std::string rest(g.substr(e + 1));
            int depth = 0;
            std::size_t start = 0;
            for (std::size_t k = 0; k <= body.size(); ++k) {
                if (k < body.size() && body[k] == '\\') {
                    ++k;
                } else if (k < body.size() && (body[k] == '{' || body[k] == '[')) {
                    if (body[k] == '[') k = class_end(body, k); else ++depth;
                } else if (k < body.size() && body[k] == '}') {
                    --depth;
                } else if (k == body.size() || (body[k] == ',' && depth == 0)) {
                    expand(std::string(body.substr(start, k - start)) + rest, prefix, out);
                    start = k + 1;
                }
            }
            return;
        } else if (g.substr(i).starts_with("**/") && (i == 0 || g[i - 1] == '/')) {
            expand(g.substr(i + 3), prefix, out);  // no folder
            prefix += "*/";
            i += 2;
        } else {
            prefix += g[i];
        }
    }
    out.push_back(std::move(prefix));
}

// A plain glob (see expand) against the whole text: `*` backtracks to its last position.
bool match_plain(std::string_view g, std::string_view s) {
    std::size_t gi = 0, si = 0;
    std::size_t star = std::string_view::npos, star_s = 0;
    while (si < s.size()) {
        if (gi < g.size() && g[gi] == '*') {
            star = ++gi;
            star_s = si;
            continue;
        }
        if (gi < g.size()) {
            std::size_t next = gi + 1;
            bool ok = false;
            if (g[gi] == '?') {
                ok = true;
            } else if (g[gi] == '[') {
                const auto e = class_end(g, gi);
                ok = class_matches(g.substr(gi + 1, e - gi - 1), s[si]);
                next = e + 1;
            } else if (g[gi] == '\\' && gi + 1 < g.size()) {
                ok = g[gi + 1] == s[si];
                next = gi + 2;
            } else {
                ok = g[gi] == s[si];
            }
            if (ok) {
                gi = next;
                ++si;
                continue;
            }
        }
        if (star == std::string_view::npos) return false;
        gi = star;
        si = ++star_s;
    }
    while (gi < g.size() && g[gi] == '*') ++gi;
    return gi == g.size();
}

}  // namespace

std::optional<std::string> glob_error(std::string_view g) {
    int depth = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
        if (g[i] == '\\') {
            ++i;
        } else if (g[i] == '[') {
            i = class_end(g, i);
            if (i == std::string_view::npos) return fmt::format("invalid glob `{}`: unclosed `[`", g);
        } else if (g[i] == '{') {
            ++depth;
        } else if (g[i] == '}' && --depth < 0) {
            return fmt::format("invalid glob `{}`: unopened `}}`", g);
        }
    }
    if (depth > 0) return fmt::format("invalid glob `{}`: unclosed `{{`", g);
    return std::nullopt;
}

namespace {

std::vector<std::string> expanded(std::string_view glob) {
    std::vector<std::string> plain;
    if (!glob_error(glob)) expand(glob, {}, plain);
    return plain;
}

bool any_match(const std::vector<std::string>& plain, std::string_view text) {
    for (const auto& p : plain) {
        if (match_plain(p, text)) return true;
    }
    return false;
}

}  // namespace

bool glob_match(std::string_view glob, std::string_view text) { return any_match(expanded(glob), text); }

FilePattern FilePattern::basename(std::string glob) {
    FilePattern p;
    p.name_globs_ = expanded(glob);
    p.glob_ = std::move(glob);
    return p;
}

FilePattern FilePattern::relative_to(std::string glob, const fs::path& folder) {
    FilePattern p;
    if (glob.find('/') == std::string::npos) p.name_globs_ = expanded(glob);
    p.path_globs_ = expanded((folder / glob).lexically_normal().generic_string());
    p.glob_ = std::move(glob);
    return p;
}

bool FilePattern::matches(const fs::path& path) const {
    if (!name_globs_.empty() && any_match(name_globs_, path.filename().string())) return true;
    return !path_globs_.empty() && any_match(path_globs_, path.generic_string());
}

const std::vector<std::string>& default_excludes() {
    static const std::vector<std::string> names = {
        ".bzr",         ".direnv",    ".eggs",        ".git",         ".git-rewrite",       ".hg",
        ".ipynb_checkpoints", ".mypy_cache", ".nox",   ".pants.d",     ".pyenv",             ".pytest_cache",
        ".pytype",      ".ruff_cache", ".svn",        ".tox",         ".venv",              ".vscode",
        "__pypackages__", "_build",   "buck-out",     "build",        "dist",               "node_modules",
        "site-packages", "venv",      "__pycache__",
    };
    return names;
}

}  // namespace graphmend::config

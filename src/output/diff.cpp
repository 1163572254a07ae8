// Unified diffs, computed with dtl (Debian's libdtl-dev). See include/graphmend/output.hpp.
#include <filesystem>
#include <optional>
#include <sstream>

#include <dtl/dtl.hpp>

#include "graphmend/output.hpp"

namespace graphmend::output {

namespace {

// The mark on a last line that has no '\n': a NUL, which Python source cannot hold. A line
// that gains or loses its newline is then a changed line, as in `diff -u`.
constexpr char kNoNewline = '\0';

// Lines without their '\n' (a CRLF file keeps its '\r', as `diff -u` shows it; a lone-CR file
// is one line, as `diff -u` and `patch` read it).
std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        const auto nl = text.find('\n', start);
        if (nl == std::string::npos) {
            lines.push_back(text.substr(start) + kNoNewline);
            break;
        }
        lines.push_back(text.substr(start, nl - start));
        start = nl + 1;
    }
    return lines;
}

// `path` under `root` (both absolute and lexically normal), or nothing when it is not under it.
std::optional<std::filesystem::path> under(const std::filesystem::path& path, const std::filesystem::path& root) {
    std::filesystem::path rel = path.lexically_relative(root);
    if (rel.empty() || *rel.begin() == "..") return std::nullopt;
    return rel;
}

// The path a header names (`--- a/PATH`), so that the diff applies with `git apply` or
// `patch -p1` run from the working folder. Both refuse a `.` or `..` component and a leading
// `/` (git: "invalid path"; GNU patch ignores such a name as dangerous), so the path as given
// (`./m.py`, `/abs/m.py`, `../other/m.py`) cannot be used:
// - a path under the working folder is shown relative to it, lexically normal (`./src/m.py`
//   and `$PWD/src/m.py` are `src/m.py`), also when the folder or the file's folder is reached
//   through a symbolic link;
// - a path outside it is shown absolute without its leading `/`, as `git diff --no-index`
//   writes an absolute path (`a/tmp/m.py`): the diff applies from the root folder
//   (`cd / && git apply`, `patch -p1 -d /`). A `../` path would be refused wherever it runs.
// stdin's `-` stays as it is.
std::string header_path(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec);
    if (path == "-" || ec) return path;
    const fs::path full = (cwd / path).lexically_normal();
    if (auto rel = under(full, cwd)) return rel->generic_string();
    const fs::path real_cwd = fs::weakly_canonical(cwd, ec);
    const fs::path real_folder = ec ? fs::path() : fs::weakly_canonical(full.parent_path(), ec);
    if (!ec) {
        if (auto rel = under(real_folder / full.filename(), real_cwd)) return rel->generic_string();
    }
    return full.relative_path().generic_string();
}

}  // namespace

std::string unified_diff(const std::string& path, const std::string& before, const std::string& after) {
    if (before == after) return "";
    dtl::Diff<std::string> diff(lines_of(before), lines_of(after));
    diff.compose();
    diff.composeUnifiedHunks();
    const std::string shown = header_path(path);
    std::ostringstream out;
    out << "--- a/" << shown << "\n+++ b/" << shown << "\n";
    // dtl's printUnifiedFormat, with `diff -u`'s "\ No newline at end of file" after a last
    // line without one (patch needs it to leave that line as it is).
    const auto print = [&](const auto& elems) {
        for (const auto& [line, info] : elems) {
            out << (info.type == dtl::SES_ADD ? '+' : info.type == dtl::SES_DELETE ? '-' : ' ');
            if (!line.empty() && line.back() == kNoNewline) {
                out << std::string_view(line).substr(0, line.size() - 1) << "\n\\ No newline at end of file\n";
            } else {
                out << line << '\n';
            }
        }
    };
    for (const auto& hunk : diff.getUniHunks()) {
        out << "@@ -" << hunk.a << ',' << hunk.b << " +" << hunk.c << ',' << hunk.d << " @@\n";
        print(hunk.common[0]);
        print(hunk.change);
        print(hunk.common[1]);
    }
    return out.str();
}

std::string new_file_diff(const std::string& path, const std::string& text) {
    const std::vector<std::string> lines = lines_of(text);
    std::ostringstream out;
    out << "--- /dev/null\n+++ b/" << header_path(path) << "\n@@ -0,0 +1," << lines.size() << " @@\n";
    for (const auto& line : lines) out << '+' << line << '\n';
    if (!text.empty() && text.back() != '\n') out << "\\ No newline at end of file\n";
    return out.str();
}

}  // namespace graphmend::output

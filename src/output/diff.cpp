// Unified diffs, computed with dtl (Debian's libdtl-dev). See include/graphmend/output.hpp.
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

}  // namespace

std::string unified_diff(const std::string& path, const std::string& before, const std::string& after) {
    if (before == after) return "";
    dtl::Diff<std::string> diff(lines_of(before), lines_of(after));
    diff.compose();
    diff.composeUnifiedHunks();
    std::ostringstream out;
    out << "--- a/" << path << "\n+++ b/" << path << "\n";
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
    out << "--- /dev/null\n+++ b/" << path << "\n@@ -0,0 +1," << lines.size() << " @@\n";
    for (const auto& line : lines) out << '+' << line << '\n';
    if (!text.empty() && text.back() != '\n') out << "\\ No newline at end of file\n";
    return out.str();
}

}  // namespace graphmend::output

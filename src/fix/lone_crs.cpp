// Lone CRs: see lone_crs.hpp.
#include "lone_crs.hpp"

#include <dtl/dtl.hpp>

#include <algorithm>

namespace graphmend::fix {

// A text whose lines end in a lone CR (classic Mac; CPython reads it), all or some of them:
// tree-sitter's grammar reads a `#` comment on to the next LF. Such a text is analysed and
// fixed with LF for each lone CR (syntax::lf_for_lone_crs: CR and LF are one byte each, so
// offsets are the same), and fix_files puts its CRs back (with_lone_crs): every byte outside
// a rewritten span is as it was. A text with no LF at all gets CRs in its rewrites too.
bool cr_only(std::string_view text) {
    return text.find('\r') != std::string_view::npos && text.find('\n') == std::string_view::npos;
}

namespace {

// The lines of `text`, each with its '\n' (the last may have none).
std::vector<std::string> lines_with_ends(const std::string& text) {
    std::vector<std::string> lines;
    for (std::size_t start = 0; start < text.size();) {
        const std::size_t nl = text.find('\n', start);
        const std::size_t end = nl == std::string::npos ? text.size() : nl + 1;
        lines.push_back(text.substr(start, end - start));
        start = end;
    }
    return lines;
}

}  // namespace

// `fixed`, a rewrite of `original` (both with LF for each lone CR), with a CR again at each
// LF it kept from `original` at one of the offsets `crs` (sorted). The kept bytes are those
// of the lines a line diff keeps, and, in a run of changed lines, those a byte diff of the
// run keeps (line by line when the run keeps its line count; for a text over kByteDiffLimit
// bytes, whose byte diff could take long, its common first and last bytes); a rewrite's own
// line ends stay LF, except one right after a CR, which
// is a CR too (a CR then an LF would be one line end, CRLF, where the rewrite had two).
constexpr std::size_t kByteDiffLimit = 64 * 1024;

std::string with_lone_crs(const std::string& original, const std::string& fixed, const std::vector<std::uint32_t>& crs) {
    const auto is_cr = [&](std::size_t offset) { return std::binary_search(crs.begin(), crs.end(), offset); };
    std::string out;
    out.reserve(fixed.size());
    enum Kind : char { Kept, Added, Cr };  // per byte of `out`: Cr, a lone CR put back
    std::vector<Kind> kinds;
    kinds.reserve(fixed.size());
    const auto put = [&](char c, Kind kind) {
        out += c;
        kinds.push_back(kind);
    };
    // One removed text and the text that replaced it, from `from` in `original`.
    const auto merge = [&](const std::string& removed, const std::string& added, std::size_t from) {
        if (removed.empty() || removed.size() + added.size() > kByteDiffLimit) {
            std::size_t head = 0;
            while (head < removed.size() && head < added.size() && removed[head] == added[head]) ++head;
            std::size_t tail = 0;
            while (tail < removed.size() - head && tail < added.size() - head &&
                   removed[removed.size() - 1 - tail] == added[added.size() - 1 - tail]) {
                ++tail;
            }
            for (std::size_t k = 0; k < added.size(); ++k) {
                const bool kept = k < head || k >= added.size() - tail;
                const std::size_t at = k < head ? k : removed.size() - (added.size() - k);
                const bool kept_cr = kept && added[k] == '\n' && is_cr(from + at);
                put(kept_cr ? '\r' : added[k], kept_cr ? Cr : kept ? Kept : Added);
            }
            return;
        }
        dtl::Diff<char, std::string> bytes(removed, added);
        bytes.compose();
        for (const auto& [c, info] : bytes.getSes().getSequence()) {
            if (info.type == dtl::SES_DELETE) continue;
            const bool kept = info.type == dtl::SES_COMMON;
            const bool kept_cr = kept && c == '\n' && is_cr(from + static_cast<std::size_t>(info.beforeIdx - 1));
            put(kept_cr ? '\r' : c, kept_cr ? Cr : kept ? Kept : Added);
        }
    };
    std::size_t run_start = 0;  // the offset in `original` of the run of lines removed
    std::vector<std::string> removed, added;
    // A run of changed lines: line by line when it keeps its line count (graphmend's rewrites
    // keep line numbers), else as one text.
    const auto flush = [&] {
        if (removed.size() == added.size()) {
            for (std::size_t k = 0; k < removed.size(); ++k) {
                merge(removed[k], added[k], run_start);
                run_start += removed[k].size();
            }
        } else {
            std::string gone, come;
            for (const auto& line : removed) gone += line;
            for (const auto& line : added) come += line;
            if (gone.empty()) {
                for (const char c : come) put(c, Added);
            } else {
                merge(gone, come, run_start);
            }
            run_start += gone.size();
        }
        removed.clear();
        added.clear();
    };
    dtl::Diff<std::string> lines(lines_with_ends(original), lines_with_ends(fixed));
    lines.compose();
    for (const auto& [line, info] : lines.getSes().getSequence()) {
        if (info.type == dtl::SES_DELETE) {
            removed.push_back(line);
        } else if (info.type == dtl::SES_ADD) {
            added.push_back(line);
        } else {
            flush();
            for (const char c : line) put(c, Kept);
            if (line.back() == '\n' && is_cr(run_start + line.size() - 1)) {
                out.back() = '\r';
                kinds.back() = Cr;
            }
            run_start += line.size();
        }
    }
    flush();
    for (std::size_t i = 0; i + 1 < out.size(); ++i) {
        if (kinds[i] != Cr || out[i + 1] != '\n') continue;
        if (kinds[i + 1] == Added) {
            out[i + 1] = '\r';
            kinds[i + 1] = Cr;
        } else {
            out[i] = '\n';  // a kept LF after a kept CR whose text between was removed: one byte changes
        }
    }
    return out;
}

}  // namespace graphmend::fix

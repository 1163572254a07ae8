// --statistics, --show-fixes and the github format. See include/graphmend/output.hpp.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "graphmend/output.hpp"
#include "tally.hpp"

namespace graphmend::output {

namespace {

// A GitHub workflow command's data: %, CR and LF escaped; a property value also escapes : and ,.
std::string escape(std::string_view text, bool property) {
    std::string out;
    for (const char c : text) {
        if (c == '%') out += "%25";
        else if (c == '\r') out += "%0D";
        else if (c == '\n') out += "%0A";
        else if (property && c == ':') out += "%3A";
        else if (property && c == ',') out += "%2C";
        else out += c;
    }
    return out;
}

std::string_view github_level(SiteStatus status) {
    if (!has_fix_applied(status)) return "warning";  // cannot be fixed here: does not fail the run
    // fixed already, or fixable: fails `check`
    return status == SiteStatus::Fixed || status == SiteStatus::FixedWhen ? "notice" : "error";
}

std::string github_command(std::string_view level, std::string_view title, std::string_view properties,
                           std::string_view message) {
    return fmt::format("::{} title={}{}::{}\n", level, escape(title, true), properties, escape(message, false));
}

}  // namespace

std::string github_report(const Results& results) {
    std::string out;
    for (const std::string& e : results.read_errors) out += github_command("error", "graphmend (I/O error)", "", e);
    for (std::size_t f = 0; f < results.outcomes.size(); ++f) {
        const FileOutcome& o = results.outcomes[f];
        const Placer placer(o);
        const std::string file = escape(o.path, true);
        for (std::size_t i = 0; i < o.sites.size(); ++i) {
            const Range r = site_range(o, i, placer);
            const auto& s = o.sites[i];
            const SiteStatus status = site_status(o, i, results.mode);
            out += github_command(
                github_level(status), fmt::format("graphmend ({})", s.code),
                fmt::format(",file={},line={},col={},endLine={},endColumn={}", file, r.start.line, r.start.column,
                            r.end.line, r.end.column),
                fmt::format("{}:{}:{}: {} [{}] {}", o.path, r.start.line, r.start.column, s.code, status_name(status),
                            site_message(o, i)));
        }
        if (o.error && o.error_kind == FileError::Syntax) {
            const auto col = placer.column(o.error_at.line, o.error_at.col);
            out += github_command("error", "graphmend (syntax error)",
                                  fmt::format(",file={},line={},col={}", file, o.error_at.line, col), *o.error);
        } else if (o.error) {
            const char* title = o.error_kind == FileError::Internal ? "graphmend (internal error)"
                                : o.error_kind == FileError::Project ? "graphmend (runtime module)"
                                                                     : "graphmend (I/O error)";
            out += github_command("error", title, ",file=" + file, *o.error);
        }
        for (const analysis::Note& n : o.notes) {
            out += github_command("notice", "graphmend (note)", fmt::format(",file={},line={}", file, n.line),
                                  fmt::format("{}:{}: {}", o.path, n.line, n.message));
        }
        if (!results.write_error(f).empty()) {
            out += github_command("error", "graphmend (I/O error)", ",file=" + file, results.write_error(f));
        }
    }
    return out;
}

std::string statistics_report(const Results& results, const Style& style) {
    const Tally t = total(results);
    struct Row {
        std::size_t count;
        std::string code, name, counts;
        bool fixable;
    };
    std::vector<Row> rows;
    for (const auto& [code, c] : t.codes) {
        rows.push_back({c.sites, code, t.rules.at(code),
                        fmt::format("{}, {} refused, {} unsafe", applied_text(c, results.mode), c.refused, c.unsafe),
                        c.applied() > 0});
    }
    std::size_t syntax = 0;
    for (const auto& o : results.outcomes) syntax += o.error && o.error_kind == FileError::Syntax ? 1 : 0;
    if (syntax) rows.push_back({syntax, "", "syntax-error", "", false});
    // ruff's order: most frequent first, then by code (syntax errors, without one, last).
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
        if (a.count != b.count) return a.count > b.count;
        if (a.code.empty() != b.code.empty()) return b.code.empty();
        return a.code < b.code;
    });
    const bool any_fixable = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.fixable; });
    std::size_t count_width = 1;
    std::size_t code_width = 0;
    for (const Row& r : rows) {
        count_width = std::max(count_width, fmt::formatted_size("{}", r.count));
        code_width = std::max(code_width, r.code.size());
    }
    std::string out;
    for (const Row& r : rows) {
        out += fmt::format("{}\t{}\t{}{}{}\n", style.paint(fmt::format("{:>{}}", r.count, count_width), "1"),
                           style.paint(fmt::format("{:<{}}", r.code, code_width), "1;31"),
                           any_fixable ? (r.fixable ? "[*] " : "[ ] ") : "", r.name,
                           r.counts.empty() ? "" : " (" + r.counts + ")");
    }
    return out;
}

std::string fixes_report(const Results& results, const Style& style) {
    std::size_t fixed = 0;
    std::size_t conditional = 0;
    std::string files;
    for (std::size_t f = 0; f < results.outcomes.size(); ++f) {
        const FileOutcome& o = results.outcomes[f];
        if (results.mode == Mode::Fix && !results.written_at(f)) continue;
        std::map<std::string, std::pair<std::size_t, std::string>> per_code;  // code -> (count, rule)
        for (std::size_t i = 0; i < o.sites.size(); ++i) {
            if (!o.applied[i]) continue;
            auto& entry = per_code[o.sites[i].code];
            ++entry.first;
            entry.second = o.sites[i].rule;
            ++fixed;
            conditional += site_condition(o, i).empty() ? 0 : 1;
        }
        if (per_code.empty()) continue;
        std::size_t width = 1;
        for (const auto& [code, entry] : per_code) width = std::max(width, fmt::formatted_size("{}", entry.first));
        files += fmt::format("{} {}{}\n", style.paint("-", "36"), style.paint(o.path, "1"), style.paint(":", "36"));
        for (const auto& [code, entry] : per_code) {
            files += fmt::format("    {:>{}} × {} ({})\n", entry.first, width, style.paint(code, "1;31"), entry.second);
        }
    }
    if (fixed == 0) return {};
    const bool fix = results.mode == Mode::Fix;
    const std::string label =
        fmt::format("{} {}{}:", fix ? "Fixed" : "Would fix", plural(fixed, "site"),
                    conditional ? fmt::format(" ({} {}-when)", conditional, fix ? "fixed" : "fixable") : "");
    return style.paint(label, "1;32") + "\n" + files;
}

}  // namespace graphmend::output

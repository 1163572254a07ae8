// Human reports: text, concise, grouped, and the batch summary. See include/graphmend/output.hpp.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "graphmend/output.hpp"
#include "tally.hpp"

namespace graphmend::output {

void Counts::add(SiteStatus status) {
    ++sites;
    fixed += status == SiteStatus::Fixed ? 1 : 0;
    fixed_when += status == SiteStatus::FixedWhen ? 1 : 0;
    fixable += status == SiteStatus::Fixable ? 1 : 0;
    fixable_when += status == SiteStatus::FixableWhen ? 1 : 0;
    refused += status == SiteStatus::Refused ? 1 : 0;
    unsafe += status == SiteStatus::Unsafe ? 1 : 0;
}

std::string applied_text(const Counts& c, Mode mode) {
    const std::string_view word = mode == Mode::Fix ? "fixed" : "fixable";
    std::string out = fmt::format("{} {}", c.fixed + c.fixable, word);
    if (c.conditional()) out += fmt::format(", {} {}-when", c.conditional(), word);
    return out;
}

void Tally::add(const Results& results, std::size_t i) {
    const FileOutcome& o = results.outcomes[i];
    ++files;
    errors += o.error ? 1 : 0;
    suppressed += o.suppressed;
    failures += o.error || !results.write_error(i).empty() ? 1 : 0;
    rewritten += o.changed() && (results.mode != Mode::Fix || results.written_at(i)) ? 1 : 0;
    for (std::size_t s = 0; s < o.sites.size(); ++s) {
        const SiteStatus status = site_status(o, s, results.mode);
        sites.add(status);
        codes[o.sites[s].code].add(status);
        rules[o.sites[s].code] = o.sites[s].rule;
    }
}

std::map<std::string, Tally> by_project(const Results& results) {
    std::map<std::string, Tally> out;
    for (std::size_t i = 0; i < results.outcomes.size(); ++i) out[results.outcomes[i].project].add(results, i);
    return out;
}

Tally total(const Results& results) {
    Tally t;
    for (std::size_t i = 0; i < results.outcomes.size(); ++i) t.add(results, i);
    t.failures += results.read_errors.size();
    return t;
}

std::string plural(std::size_t n, std::string_view noun) {
    return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

namespace {

// The status as the text report shows it (the JSON's "unsafe" is spelt out, and a refused
// site that had a fix is "not applied").
std::string_view text_label(const FileOutcome& o, std::size_t i, Mode mode) {
    const SiteStatus status = site_status(o, i, mode);
    if (has_fix_applied(status) || !o.sites[i].fix) return status_name(status);
    return status == SiteStatus::Unsafe ? "unsafe fix not applied (--unsafe-fixes)" : "not applied";
}

std::string_view label_colour(const FileOutcome& o, std::size_t i, Mode mode) {
    switch (site_status(o, i, mode)) {
    case SiteStatus::Fixed:
    case SiteStatus::Fixable: return "32";      // green
    case SiteStatus::FixedWhen:
    case SiteStatus::FixableWhen: return "36";  // cyan
    case SiteStatus::Unsafe: return "33";       // yellow
    case SiteStatus::Refused: break;
    }
    return "35";  // magenta
}

// `CODE [label] message`, coloured like ruff's (code in bold red).
std::string code_and_message(const FileOutcome& o, std::size_t i, Mode mode, const Style& style) {
    return fmt::format("{} {} {}", style.paint(o.sites[i].code, "1;31"),
                       style.paint(fmt::format("[{}]", text_label(o, i, mode)), label_colour(o, i, mode)),
                       site_message(o, i));
}

// `note: path:line: message` per note (Project::notes), as warnings are printed.
std::string note_lines(const FileOutcome& o, const Style& style) {
    std::string out;
    for (const analysis::Note& n : o.notes) {
        out += fmt::format("{} {}:{}: {}\n", style.paint("note:", "36"), style.paint(o.path, "1"), n.line, n.message);
    }
    return out;
}

std::string site_lines(const FileOutcome& o, Mode mode, const Style& style, bool fixable_only = false,
                       bool with_help = false) {
    std::string out;
    const Placer placer(o);
    for (std::size_t i = 0; i < o.sites.size(); ++i) {
        if (fixable_only && !has_fix_applied(site_status(o, i, mode))) continue;
        const Range r = site_range(o, i, placer);
        out += fmt::format("{}:{}:{}: {}\n", style.paint(o.path, "1"), r.start.line, r.start.column,
                           code_and_message(o, i, mode, style));
        // A site left with its break says what would remove it (rustc's and ruff's `help:`).
        if (with_help && !o.applied[i] && !o.sites[i].help.empty()) {
            out += fmt::format("  {} {}\n", style.paint("help:", "1;36"), o.sites[i].help);
        }
    }
    if (o.error) out += style.paint(*o.error, "31") + "\n";
    if (!fixable_only) out += note_lines(o, style);
    return out;
}

std::string counts_text(const Counts& c, Mode mode) {
    const std::string_view word = mode == Mode::Fix ? "fixed" : "fixable";
    std::vector<std::string> parts;
    if (c.fixed + c.fixable) parts.push_back(fmt::format("{} {}", c.fixed + c.fixable, word));
    if (c.conditional()) parts.push_back(fmt::format("{} {}-when", c.conditional(), word));
    if (c.refused) parts.push_back(fmt::format("{} refused", c.refused));
    if (c.unsafe) parts.push_back(fmt::format("{} unsafe not applied", c.unsafe));
    return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

std::string text_report(const FileOutcome& o, Mode mode, const Style& style) {
    std::string out = site_lines(o, mode, style, false, true);
    Counts c;
    for (std::size_t i = 0; i < o.sites.size(); ++i) c.add(site_status(o, i, mode));
    out += fmt::format("{}: {} found, {}, {} refused{}{}\n", o.path, plural(c.sites, "site"), applied_text(c, mode),
                       c.sites - c.applied(), o.suppressed ? fmt::format(", {} suppressed", o.suppressed) : "",
                       o.error ? " (error)" : "");
    return out;
}

std::string concise_report(const FileOutcome& o, Mode mode, const Style& style) { return site_lines(o, mode, style); }

std::string findings_report(const FileOutcome& o, Mode mode, const Style& style) {
    return site_lines(o, mode, style, true);
}

std::string grouped_report(const FileOutcome& o, Mode mode, const Style& style) {
    if (o.sites.empty() && !o.error && o.notes.empty()) return {};
    const Placer placer(o);
    struct Row {
        std::uint32_t line, column;
        std::string rest;
    };
    std::vector<Row> rows;
    for (std::size_t i = 0; i < o.sites.size(); ++i) {
        const Range r = site_range(o, i, placer);
        rows.push_back({r.start.line, r.start.column, code_and_message(o, i, mode, style)});
    }
    if (o.error) {
        rows.push_back({o.error_at.line, placer.column(o.error_at.line, o.error_at.col),
                        style.paint(error_message(o), "31")});
    }
    for (const analysis::Note& n : o.notes) rows.push_back({n.line, 1, style.paint("note:", "36") + " " + n.message});
    std::size_t line_width = 1;
    std::size_t column_width = 1;
    for (const Row& r : rows) {
        line_width = std::max(line_width, fmt::formatted_size("{}", r.line));
        column_width = std::max(column_width, fmt::formatted_size("{}", r.column));
    }
    std::string out = style.paint(o.path, "4") + ":\n";
    for (const Row& r : rows) {
        out += fmt::format("  {:>{}}:{:<{}} {}\n", r.line, line_width, r.column, column_width, r.rest);
    }
    return out + "\n";
}

std::string project_report(const Results& results) {
    const auto projects = by_project(results);
    if (projects.size() < 2) return {};
    std::string out;
    for (const auto& [project, t] : projects) {
        out += fmt::format("project {}: {}, {} found, {}, {} refused{}\n", project, plural(t.files, "file"),
                           plural(t.sites.sites, "site"), applied_text(t.sites, results.mode),
                           t.sites.sites - t.sites.applied(), t.errors ? fmt::format(", {}", plural(t.errors, "error")) : "");
    }
    return out;
}

std::string batch_summary(const Results& results) {
    std::string out = project_report(results);
    const Tally t = total(results);
    if (by_project(results).size() > 1) {
        std::vector<std::string> codes;
        for (const auto& [code, c] : t.codes) codes.push_back(fmt::format("{}: {}", code, counts_text(c, results.mode)));
        out += fmt::format("total: {}, {}, {} found{}, {}\n", plural(by_project(results).size(), "project"),
                           plural(t.files, "file"), plural(t.sites.sites, "site"),
                           codes.empty() ? "" : fmt::format(" ({})", fmt::join(codes, "; ")),
                           plural(t.failures, "failure"));
    }
    if (results.outcomes.size() > 1) {
        out += fmt::format("{} checked, {} {}\n", plural(results.outcomes.size(), "file"), t.rewritten,
                           results.mode == Mode::Fix ? "rewritten" : "would be rewritten");
    }
    return out;
}

}  // namespace graphmend::output

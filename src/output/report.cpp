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
    refused += status == SiteStatus::Refused ? 1 : 0;
    unsafe += status == SiteStatus::Unsafe ? 1 : 0;
}

void Tally::add(const Results& results, std::size_t i) {
    const FileOutcome& o = results.outcomes[i];
    ++files;
    errors += o.error ? 1 : 0;
    suppressed += o.suppressed;
    failures += o.error || !results.write_error(i).empty() ? 1 : 0;
    rewritten += o.changed() && (results.mode != Mode::Fix || results.written_at(i)) ? 1 : 0;
    for (std::size_t s = 0; s < o.sites.size(); ++s) {
        const SiteStatus status = site_status(o, s);
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

// The status as the text report shows it (the JSON's "unsafe" is spelt out).
std::string_view text_label(const FileOutcome& o, std::size_t i) {
    const auto& site = o.sites[i];
    if (o.applied[i]) return "fixed";
    if (!site.fix) return "refused";
    return site.fix->applicability == rules::Applicability::Unsafe ? "unsafe fix not applied (--unsafe-fixes)"
                                                                    : "not applied";
}

std::string_view label_colour(const FileOutcome& o, std::size_t i) {
    switch (site_status(o, i)) {
    case SiteStatus::Fixed: return "32";   // green
    case SiteStatus::Unsafe: return "33";  // yellow
    case SiteStatus::Refused: break;
    }
    return "35";  // magenta
}

// `CODE [label] message`, coloured like ruff's (code in bold red).
std::string code_and_message(const FileOutcome& o, std::size_t i, const Style& style) {
    return fmt::format("{} {} {}", style.paint(o.sites[i].code, "1;31"),
                       style.paint(fmt::format("[{}]", text_label(o, i)), label_colour(o, i)), site_message(o, i));
}

// `note: path:line: message` per note (Project::notes), as warnings are printed.
std::string note_lines(const FileOutcome& o, const Style& style) {
    std::string out;
    for (const analysis::Note& n : o.notes) {
        out += fmt::format("{} {}:{}: {}\n", style.paint("note:", "36"), style.paint(o.path, "1"), n.line, n.message);
    }
    return out;
}

std::string site_lines(const FileOutcome& o, const Style& style, bool fixable_only = false) {
    std::string out;
    const Placer placer(o);
    for (std::size_t i = 0; i < o.sites.size(); ++i) {
        if (fixable_only && site_status(o, i) != SiteStatus::Fixed) continue;
        const Range r = site_range(o, i, placer);
        out += fmt::format("{}:{}:{}: {}\n", style.paint(o.path, "1"), r.start.line, r.start.column,
                           code_and_message(o, i, style));
    }
    if (o.error) out += style.paint(*o.error, "31") + "\n";
    if (!fixable_only) out += note_lines(o, style);
    return out;
}

std::string counts_text(const Counts& c) {
    std::vector<std::string> parts;
    if (c.fixed) parts.push_back(fmt::format("{} fixed", c.fixed));
    if (c.refused) parts.push_back(fmt::format("{} refused", c.refused));
    if (c.unsafe) parts.push_back(fmt::format("{} unsafe not applied", c.unsafe));
    return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

std::string text_report(const FileOutcome& o, const Style& style) {
    std::string out = site_lines(o, style);
    const auto fixed = static_cast<std::size_t>(std::count(o.applied.begin(), o.applied.end(), true));
    out += fmt::format("{}: {} found, {} fixed, {} refused{}{}\n", o.path, plural(o.sites.size(), "site"), fixed,
                       o.sites.size() - fixed, o.suppressed ? fmt::format(", {} suppressed", o.suppressed) : "",
                       o.error ? " (error)" : "");
    return out;
}

std::string concise_report(const FileOutcome& o, const Style& style) { return site_lines(o, style); }

std::string findings_report(const FileOutcome& o, const Style& style) { return site_lines(o, style, true); }

std::string grouped_report(const FileOutcome& o, const Style& style) {
    if (o.sites.empty() && !o.error && o.notes.empty()) return {};
    const Placer placer(o);
    struct Row {
        std::uint32_t line, column;
        std::string rest;
    };
    std::vector<Row> rows;
    for (std::size_t i = 0; i < o.sites.size(); ++i) {
        const Range r = site_range(o, i, placer);
        rows.push_back({r.start.line, r.start.column, code_and_message(o, i, style)});
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

std::string project_report(const std::vector<FileOutcome>& outcomes) {
    const auto projects = by_project(Results{outcomes, Mode::Check, {}, {}, {}});
    if (projects.size() < 2) return {};
    std::string out;
    for (const auto& [project, t] : projects) {
        out += fmt::format("project {}: {}, {} found, {} fixed, {} refused{}\n", project, plural(t.files, "file"),
                           plural(t.sites.sites, "site"), t.sites.fixed, t.sites.sites - t.sites.fixed,
                           t.errors ? fmt::format(", {}", plural(t.errors, "error")) : "");
    }
    return out;
}

std::string batch_summary(const Results& results) {
    std::string out = project_report(results.outcomes);
    const Tally t = total(results);
    if (by_project(results).size() > 1) {
        std::vector<std::string> codes;
        for (const auto& [code, c] : t.codes) codes.push_back(fmt::format("{}: {}", code, counts_text(c)));
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

// The JSON report; its schema is docs/report.schema.json. See include/graphmend/output.hpp.
#include "graphmend/output.hpp"
#include "tally.hpp"

namespace graphmend::output {

namespace {

using nlohmann::json;

json position(const Position& p) {
    return {{"line", p.line}, {"column", p.column}, {"offset", p.offset ? json(*p.offset) : json(nullptr)}};
}

// One count per status value (each site under exactly one), keyed by the status's name.
json counts(const Counts& c) {
    return {{"sites", c.sites},
            {status_name(SiteStatus::Fixed), c.fixed},
            {status_name(SiteStatus::FixedWhen), c.fixed_when},
            {status_name(SiteStatus::Fixable), c.fixable},
            {status_name(SiteStatus::FixableWhen), c.fixable_when},
            {status_name(SiteStatus::Refused), c.refused},
            {status_name(SiteStatus::Unsafe), c.unsafe}};
}

json tally(const Tally& t) {
    json codes = json::object();
    for (const auto& [code, c] : t.codes) {
        codes[code] = counts(c);
        codes[code]["rule"] = t.rules.at(code);
    }
    json out = counts(t.sites);
    out.update({{"files", t.files}, {"rewritten", t.rewritten}, {"errors", t.errors}, {"failures", t.failures},
                {"suppressed", t.suppressed}, {"codes", codes}});
    return out;
}

std::string_view mode_name(Mode mode) {
    switch (mode) {
    case Mode::Fix: return "fix";
    case Mode::Diff: return "diff";
    case Mode::Check: break;
    }
    return "check";
}

// The fix's edits on the original text; null when they are not (see own_edits).
json edit_json(const edits::Edit& e, const Placer& placer) {
    return {{"start", position(placer.at(e.begin))}, {"end", position(placer.at(e.end))}, {"content", e.text}};
}

// `applied`: the fix is in the text `fix` wrote or printed (never for check and --diff,
// which write nothing).
json fix_of(const FileOutcome& o, std::size_t i, Mode mode, const Placer& placer) {
    const auto& fix = o.sites[i].fix;
    if (!fix) return nullptr;
    json edits = nullptr;
    if (own_edits(o, i)) {
        edits = json::array();
        for (const auto& e : fix->edits) edits.push_back(edit_json(e, placer));
    }
    const SiteStatus status = site_status(o, i, mode);
    const bool applied = status == SiteStatus::Fixed || status == SiteStatus::FixedWhen;
    return {{"applied", applied}, {"edits", edits}, {"runtime", fix->runtime}};
}

json site_json(const FileOutcome& o, std::size_t i, Mode mode, const Placer& placer) {
    const auto& s = o.sites[i];
    const Range r = site_range(o, i, placer);
    json applicability = nullptr;
    if (s.fix) applicability = s.fix->applicability == rules::Applicability::Safe ? "safe" : "unsafe";
    const std::string_view condition = site_condition(o, i);
    return {{"code", s.code},
            {"rule", s.rule},
            {"status", status_name(site_status(o, i, mode))},
            {"condition", condition.empty() ? json(nullptr) : json(condition)},
            {"line", r.start.line},
            {"col", r.start.column},
            {"range", {{"start", position(r.start)}, {"end", position(r.end)}}},
            {"applicability", applicability},
            {"graph_break", s.graph_break},
            {"what", s.what},
            {"message", site_message(o, i)},
            {"detail", s.detail},
            {"reason", s.reason},
            {"help", s.help.empty() || o.applied[i] ? json(nullptr) : json(s.help)},
            {"fix", fix_of(o, i, mode, placer)}};
}

// `error_kind` in the JSON report (docs/output.md).
const char* error_kind_name(FileError kind) {
    switch (kind) {
        case FileError::Syntax: return "syntax";
        case FileError::Internal: return "internal";
        case FileError::Read: return "read";
        case FileError::Write: return "write";
        case FileError::Project: return "project";
    }
    return "internal";
}

json file_json(const Results& results, std::size_t f) {
    const FileOutcome& o = results.outcomes[f];
    const Placer placer(o);
    json sites = json::array();
    for (std::size_t i = 0; i < o.sites.size(); ++i) sites.push_back(site_json(o, i, results.mode, placer));
    json error_kind = nullptr;
    json error_location = nullptr;
    if (o.error) {
        error_kind = error_kind_name(o.error_kind);
        if (o.error_kind == FileError::Syntax) {
            error_location = {{"line", o.error_at.line}, {"column", placer.column(o.error_at.line, o.error_at.col)}};
        }
    }
    json notes = json::array();
    for (const analysis::Note& n : o.notes) notes.push_back({{"line", n.line}, {"message", n.message}});
    const auto write_error = results.write_error(f);
    return {{"path", o.path},
            {"project", o.project},
            {"changed", o.changed()},
            {"written", results.written_at(f)},
            {"error", o.error ? json(*o.error) : json(nullptr)},
            {"error_kind", error_kind},
            {"error_location", error_location},
            {"write_error", write_error.empty() ? json(nullptr) : json(write_error)},
            {"runtime_edit", o.runtime_edit ? edit_json(*o.runtime_edit, placer) : json(nullptr)},
            {"suppressed", o.suppressed},
            {"sites", sites},
            {"notes", notes}};
}

}  // namespace

json json_report(const Results& results) {
    json files = json::array();
    for (std::size_t f = 0; f < results.outcomes.size(); ++f) files.push_back(file_json(results, f));
    json projects = json::array();
    const auto per_project = by_project(results);
    for (const auto& [project, t] : per_project) {
        json p = tally(t);
        p["project"] = project;
        projects.push_back(p);
    }
    json totals = tally(total(results));
    totals["projects"] = per_project.size();
    return {{"schema_version", 2},
            {"tool", {{"name", "graphmend"}, {"version", kVersion}}},
            {"mode", mode_name(results.mode)},
            {"files", files},
            {"read_errors", results.read_errors},
            {"projects", projects},
            {"totals", totals}};
}

json json_report(const std::vector<FileOutcome>& outcomes, Mode mode) {
    return json_report(Results{outcomes, mode, {}, {}, {}});
}

}  // namespace graphmend::output

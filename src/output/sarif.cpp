// SARIF 2.1.0 (OASIS). See include/graphmend/output.hpp.
#include <fmt/format.h>

#include <map>

#include "graphmend/output.hpp"
#include "graphmend/rule.hpp"

namespace graphmend::output {

std::string uri_of(std::string_view path) {
    std::string out = path.starts_with('/') ? "file://" : "";
    for (const char c : path) {
        const auto u = static_cast<unsigned char>(c);
        if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
            out += c;
        } else {
            out += fmt::format("%{:02X}", u);
        }
    }
    return out;
}

namespace {

using nlohmann::json;

// error: a fixable site, what fails `check` (and --diff); note: fixed by `fix`; warning: the rest.
std::string_view level_of(SiteStatus status) {
    if (!has_fix_applied(status)) return "warning";
    return status == SiteStatus::Fixed || status == SiteStatus::FixedWhen ? "note" : "error";
}

json text(std::string_view t) { return {{"text", t}}; }

json region(const Position& start, const std::optional<Position>& end) {
    json r = {{"startLine", start.line}, {"startColumn", start.column}};
    if (end) r.update({{"endLine", end->line}, {"endColumn", end->column}});
    return r;
}

json location(const std::string& path, const json& reg) {
    return {{"physicalLocation", {{"artifactLocation", {{"uri", uri_of(path)}}}, {"region", reg}}}};
}

// The rules: the registry's, then any other code the sites name, then syntax-error if needed.
struct Rules {
    json list = json::array();
    std::map<std::string, std::size_t> index;

    void add(const std::string& code, const std::string& name, std::string_view summary, bool help) {
        if (index.contains(code)) return;
        json rule = {{"id", code}, {"name", name}, {"shortDescription", text(summary)}};
        if (help) rule["helpUri"] = fmt::format("{}/docs/rules/{}.md", kHomepage, code);  // graphmend rule CODE
        index[code] = list.size();
        list.push_back(rule);
    }
};

// A fixed site's fix on the original text, with the runtime blocks it calls when the file
// gains them (each fix stands alone); null when its change is not its own edits.
json fixes(const FileOutcome& o, std::size_t i, const Placer& placer) {
    if (!o.applied[i] || !own_edits(o, i)) return nullptr;
    std::vector<edits::Edit> all = o.sites[i].fix->edits;
    if (!o.sites[i].fix->runtime.empty() && o.runtime_edit) all.push_back(*o.runtime_edit);
    json replacements = json::array();
    for (const auto& e : all) {
        replacements.push_back({{"deletedRegion", region(placer.at(e.begin), placer.at(e.end))},
                                {"insertedContent", text(e.text)}});
    }
    const auto& s = o.sites[i];
    return json::array({{{"description", text(s.detail.empty() ? s.rule : s.detail)},
                         {"artifactChanges", json::array({{{"artifactLocation", {{"uri", uri_of(o.path)}}},
                                                           {"replacements", replacements}}})}}});
}

json site_result(const Results& results, const FileOutcome& o, std::size_t i, const Placer& placer, Rules& rules) {
    const auto& s = o.sites[i];
    const Range r = site_range(o, i, placer);
    const SiteStatus status = site_status(o, i, results.mode);
    json result = {{"ruleId", s.code},
                   {"ruleIndex", rules.index.at(s.code)},
                   {"level", level_of(status)},
                   {"message", text(fmt::format("{} [{}] {}", s.code, status_name(status), site_message(o, i)))},
                   {"locations", json::array({location(o.path, region(r.start, r.start.offset
                                                                                    ? std::optional<Position>(r.end)
                                                                                    : std::nullopt))})},
                   {"properties", {{"status", status_name(status)}, {"graphBreak", s.graph_break}}}};
    if (const auto condition = site_condition(o, i); !condition.empty()) result["properties"]["condition"] = condition;
    if (json f = fixes(o, i, placer); !f.is_null()) result["fixes"] = f;
    return result;
}

}  // namespace

json sarif_report(const Results& results) {
    Rules rules;
    for (const auto& rule : rules::registry()) {
        const auto& info = rule->info();
        rules.add(std::string(info.code), std::string(info.name), info.summary, true);
    }
    json out_results = json::array();
    json notifications = json::array();  // errors: the run did not succeed
    json notes = json::array();          // the analysis's notes (Project::notes), after the errors
    for (const std::string& e : results.read_errors) notifications.push_back({{"level", "error"}, {"message", text(e)}});
    for (std::size_t f = 0; f < results.outcomes.size(); ++f) {
        const FileOutcome& o = results.outcomes[f];
        const Placer placer(o);
        for (std::size_t i = 0; i < o.sites.size(); ++i) {
            rules.add(o.sites[i].code, o.sites[i].rule, o.sites[i].rule, false);
            out_results.push_back(site_result(results, o, i, placer, rules));
        }
        if (o.error && o.error_kind == FileError::Syntax) {
            rules.add("syntax-error", "syntax-error", "The file does not parse; graphmend leaves it unchanged", false);
            const Position at{o.error_at.line, placer.column(o.error_at.line, o.error_at.col), std::nullopt};
            out_results.push_back({{"ruleId", "syntax-error"},
                                   {"ruleIndex", rules.index.at("syntax-error")},
                                   {"level", "error"},
                                   {"message", text(error_message(o))},
                                   {"locations", json::array({location(o.path, region(at, std::nullopt))})}});
        } else if (o.error) {
            notifications.push_back({{"level", "error"}, {"message", text(*o.error)}});
        }
        if (!results.write_error(f).empty()) {
            notifications.push_back({{"level", "error"}, {"message", text(results.write_error(f))}});
        }
        for (const analysis::Note& n : o.notes) {
            const Position at{n.line, 1, std::nullopt};
            notes.push_back({{"level", "note"},
                             {"message", text(n.message)},
                             {"locations", json::array({location(o.path, region(at, std::nullopt))})}});
        }
    }
    json invocation = {{"executionSuccessful", notifications.empty()}};
    notifications.insert(notifications.end(), notes.begin(), notes.end());
    if (!notifications.empty()) invocation["toolExecutionNotifications"] = notifications;
    json driver = {{"name", "graphmend"}, {"version", kVersion}, {"informationUri", kHomepage}, {"rules", rules.list}};
    return {{"$schema", "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"},
            {"version", "2.1.0"},
            {"runs", json::array({{{"tool", {{"driver", driver}}},
                                   {"columnKind", "unicodeCodePoints"},
                                   {"invocations", json::array({invocation})},
                                   {"results", out_results}}})}};
}

}  // namespace graphmend::output

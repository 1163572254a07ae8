// Reports: see include/graphmend/output.hpp.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "graphmend/output.hpp"

namespace graphmend::output {

namespace {

std::string_view status(const FileOutcome& o, std::size_t i) {
    const auto& site = o.sites[i];
    if (o.applied[i]) return "fixed";
    if (!site.fix) return "refused";
    return site.fix->applicability == rules::Applicability::Unsafe ? "unsafe fix not applied (--unsafe-fixes)"
                                                                    : "not applied";
}

struct Tally {
    std::size_t files = 0, sites = 0, fixed = 0, errors = 0;

    void add(const FileOutcome& o) {
        ++files;
        sites += o.sites.size();
        fixed += static_cast<std::size_t>(std::count(o.applied.begin(), o.applied.end(), true));
        errors += o.error ? 1 : 0;
    }
};

std::map<std::string, Tally> by_project(const std::vector<FileOutcome>& outcomes) {
    std::map<std::string, Tally> out;
    for (const auto& o : outcomes) out[o.project].add(o);
    return out;
}

}  // namespace

std::string project_report(const std::vector<FileOutcome>& outcomes) {
    const auto projects = by_project(outcomes);
    if (projects.size() < 2) return {};
    std::string out;
    for (const auto& [project, t] : projects) {
        out += fmt::format("project {}: {} file{}, {} site{} found, {} fixed, {} refused{}\n", project, t.files,
                           t.files == 1 ? "" : "s", t.sites, t.sites == 1 ? "" : "s", t.fixed, t.sites - t.fixed,
                           t.errors ? fmt::format(", {} error{}", t.errors, t.errors == 1 ? "" : "s") : "");
    }
    return out;
}

std::string text_report(const FileOutcome& o) {
    std::string out;
    std::size_t fixed = 0;
    std::size_t refused = 0;
    for (std::size_t i = 0; i < o.sites.size(); ++i) {
        const auto& s = o.sites[i];
        const std::string_view st = status(o, i);
        out += fmt::format("{}:{}:{}: {} [{}] {}", o.path, s.where.line, s.where.col, s.code, st, s.what);
        if (o.applied[i] && s.graph_break.empty()) {
            // A rewrite that keeps behaviour where the original traced (an assert compiled to
            // _assert_async raises RuntimeError): no break to remove.
            out += fmt::format(": no graph break to remove; keeps the original exception ({}{}{})\n", s.rule,
                               s.detail.empty() ? "" : ": ", s.detail);
            ++fixed;
        } else if (o.applied[i]) {
            out += fmt::format(": removes graph break {} ({}{}{})\n", s.graph_break, s.rule, s.detail.empty() ? "" : ": ",
                               s.detail);
            ++fixed;
        } else {
            // An unsafe fix left out says what applying it would do (its detail).
            const std::string why = !s.reason.empty() ? s.reason
                                    : s.fix && s.fix->applicability == rules::Applicability::Unsafe && !s.detail.empty()
                                        ? "left as it is; the fix would give " + s.detail
                                        : "left as it is";
            out += fmt::format(": {}\n", why);
            ++refused;
        }
    }
    if (o.error) out += *o.error + "\n";
    out += fmt::format("{}: {} site{} found, {} fixed, {} refused{}{}\n", o.path, o.sites.size(),
                       o.sites.size() == 1 ? "" : "s", fixed, refused,
                       o.suppressed ? fmt::format(", {} suppressed", o.suppressed) : "", o.error ? " (error)" : "");
    return out;
}

nlohmann::json json_report(const std::vector<FileOutcome>& outcomes) {
    nlohmann::json files = nlohmann::json::array();
    std::size_t sites = 0;
    std::size_t fixed = 0;
    std::size_t errors = 0;
    for (const auto& o : outcomes) {
        nlohmann::json js = nlohmann::json::array();
        for (std::size_t i = 0; i < o.sites.size(); ++i) {
            const auto& s = o.sites[i];
            js.push_back({{"rule", s.rule},
                          {"code", s.code},
                          {"line", s.where.line},
                          {"col", s.where.col},
                          {"what", s.what},
                          {"graph_break", s.graph_break},
                          {"status", std::string(status(o, i))},
                          {"reason", s.reason},
                          {"detail", s.detail}});
            ++sites;
            fixed += o.applied[i] ? 1 : 0;
        }
        errors += o.error ? 1 : 0;
        files.push_back({{"path", o.path},
                         {"project", o.project},
                         {"changed", o.changed()},
                         {"error", o.error ? nlohmann::json(*o.error) : nlohmann::json(nullptr)},
                         {"sites", js}});
    }
    nlohmann::json projects = nlohmann::json::array();
    for (const auto& [project, t] : by_project(outcomes)) {
        projects.push_back({{"project", project}, {"files", t.files}, {"sites", t.sites}, {"fixed", t.fixed},
                            {"refused", t.sites - t.fixed}, {"errors", t.errors}});
    }
    return {{"files", files},
            {"projects", projects},
            {"totals", {{"files", outcomes.size()}, {"sites", sites}, {"fixed", fixed}, {"refused", sites - fixed},
                        {"errors", errors}}}};
}

}  // namespace graphmend::output

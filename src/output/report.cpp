// Reports: see include/graphmend/output.hpp.
#include <fmt/format.h>

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

}  // namespace

std::string text_report(const FileOutcome& o) {
    std::string out;
    std::size_t fixed = 0;
    std::size_t refused = 0;
    for (std::size_t i = 0; i < o.sites.size(); ++i) {
        const auto& s = o.sites[i];
        const std::string_view st = status(o, i);
        out += fmt::format("{}:{}:{}: {} [{}] {}", o.path, s.where.line, s.where.col, s.code, st, s.what);
        if (o.applied[i]) {
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
    out += fmt::format("{}: {} site{} found, {} fixed, {} refused{}\n", o.path, o.sites.size(),
                       o.sites.size() == 1 ? "" : "s", fixed, refused, o.error ? " (error)" : "");
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
                         {"changed", o.changed()},
                         {"error", o.error ? nlohmann::json(*o.error) : nlohmann::json(nullptr)},
                         {"sites", js}});
    }
    return {{"files", files},
            {"totals", {{"files", outcomes.size()}, {"sites", sites}, {"fixed", fixed}, {"refused", sites - fixed},
                        {"errors", errors}}}};
}

}  // namespace graphmend::output

// `graphmend fix --verify PATH -- COMMAND`: verify every fix, keep only those whose break is
// gone and whose outputs and messages are kept, revert the others and say why. See
// include/graphmend/verify.hpp (run_fix_verify).
#include <map>
#include <set>

#include <fmt/format.h>

#include "graphmend/verify.hpp"
#include "internal.hpp"

namespace graphmend::verify {

namespace {

// A site the fixed copy got, as fix --verify decides on it.
struct Claimed {
    std::string file;  // relative to the target's root
    int line = 0;
    std::string code, what;
    std::vector<std::string> broke_at;  // "file:line [GB]" of the original's breaks it covers
    std::string why;                    // why it is reverted; empty: kept
    std::string condition;              // a fixed-when site's condition
    [[nodiscard]] std::string hold() const { return fmt::format("{}:{}:{}", file, line, code); }
};

std::vector<Claimed> claimed_sites(const Pair& pair) {
    std::vector<Claimed> out;
    if (!pair.fix_report.is_object()) return out;
    const fs::path mirror = fs::weakly_canonical(pair.mirror);
    for (const json& f : pair.fix_report.value("files", json::array())) {
        const fs::path rel = fs::path(f.value("path", "")).lexically_relative(mirror);
        for (const json& s : f.value("sites", json::array())) {
            const std::string status = s.value("status", "");
            if (status != "fixed" && status != "fixed-when") continue;
            Claimed c{rel.generic_string(), s.value("line", 0), s.value("code", ""), s.value("what", ""), {}, {}, {}};
            if (s["condition"].is_string()) c.condition = s["condition"].get<std::string>();
            out.push_back(std::move(c));
        }
    }
    return out;
}

// Outputs and messages kept, both runs ran: the verdict says nothing worse than a break left
// (which decide() judges site by site).
bool behaviour_kept(const json& report) {
    const std::string v = report.value("verdict", "");
    return v == "ok" || v == "fix-failed";
}

// Decides on the claimed sites `which` (all when empty) from one joined report: reverted where
// its break stayed or a break appeared inside it, and, when `unproven` counts, where the command
// never made its break.
void decide(std::vector<Claimed>& sites, const json& report, bool unproven, const std::set<std::size_t>& which = {}) {
    for (std::size_t i = 0; i < sites.size(); ++i) {
        Claimed& c = sites[i];
        if (!c.why.empty() || (!which.empty() && !which.contains(i))) continue;
        bool covered = false;
        for (const json& b : report.value("breaks", json::array())) {
            if (!b["site"].is_object() || b.value("file", "") != c.file) continue;
            if (b["site"].value("line", 0) != c.line || b["site"].value("code", "") != c.code) continue;
            const std::string status = b.value("status", "");
            const std::string where = fmt::format("{}:{}", b.value("file", ""), b.value("line", 0));
            const std::string condition = c.condition.empty() ? "" : fmt::format(" (it is fixed when: {})", c.condition);
            if (status == "fixed-but-left" && c.why.empty()) {
                c.why = fmt::format("the graph break at {} stayed after the fix{}", where, condition);
            }
            if (status == "condition-unmet" && c.why.empty()) {
                c.why = fmt::format("the graph break at {} stayed: the fix's condition did not hold in this run{}", where,
                                    condition);
            }
            if (status == "new" && c.why.empty()) c.why = fmt::format("the fix made a graph break at {}", where);
            if (status == "removed") covered = true;
        }
        if (unproven && !covered && c.why.empty()) c.why = "the command made no graph break at this site: the fix is unproven";
    }
}

std::vector<std::string> holds(const std::vector<Claimed>& sites, const std::set<std::size_t>& also = {}) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < sites.size(); ++i) {
        if (!sites[i].why.empty() || also.contains(i)) out.push_back(sites[i].hold());
    }
    return out;
}

std::size_t kept_count(const std::vector<Claimed>& sites) {
    std::size_t n = 0;
    for (const Claimed& c : sites) n += c.why.empty() ? 1 : 0;
    return n;
}

// With the reverted sites held back, runs the rest together until it keeps behaviour and no kept
// fix leaves its break (a break can depend on the others: at most kMaxRounds). When behaviour
// changes, tries each remaining site alone (at most kMaxTrials) and keeps those that keep it
// and remove their break, then checks them together once more.
void confirm(const Options& opt, const Pair& base, const fs::path& work, std::vector<Claimed>& sites) {
    constexpr std::size_t kMaxTrials = 8;
    constexpr int kMaxRounds = 3;
    int trial = 0;
    auto attempt = [&](const std::set<std::size_t>& extra) {
        const Pair p = rerun_fixed(opt, base, work / fmt::format("trial-{}", ++trial), holds(sites, extra));
        return join(opt, p);
    };
    json together;
    for (int round = 0; round < kMaxRounds && kept_count(sites) > 0; ++round) {
        const std::size_t kept = kept_count(sites);
        together = attempt({});
        if (!behaviour_kept(together)) break;
        decide(sites, together, false);
        if (kept_count(sites) == kept) return;
    }
    if (kept_count(sites) == 0 || behaviour_kept(together)) return;
    std::vector<std::size_t> candidates;
    for (std::size_t i = 0; i < sites.size(); ++i) {
        if (sites[i].why.empty()) candidates.push_back(i);
    }
    const std::string changed = fmt::format("the fixed run fails or its outputs or messages differ ({})",
                                            together.value("verdict", ""));
    if (candidates.size() > kMaxTrials) {
        for (std::size_t i : candidates) sites[i].why = "with the other fixes, " + changed + "; too many to try one by one";
        return;
    }
    for (std::size_t i : candidates) {
        std::set<std::size_t> others(candidates.begin(), candidates.end());
        others.erase(i);
        const json alone = attempt(others);
        if (!behaviour_kept(alone)) {
            sites[i].why = "with this fix alone, " + changed;
        } else {
            decide(sites, alone, false, {i});
        }
    }
    if (kept_count(sites) > 0) {
        const json last = attempt({});
        if (!behaviour_kept(last)) {
            for (std::size_t i : candidates) {
                if (sites[i].why.empty()) sites[i].why = "the fixes that keep behaviour one by one do not keep it together";
            }
        }
    }
}

}  // namespace

int run_fix_verify(const Options& opt,
                   const std::function<int(const std::vector<std::string>& held, const Evidence& evidence)>& apply) {
    std::string error;
    const std::optional<Target> target = target_of(opt, error);
    if (!target) {
        fmt::print(stderr, "error: {}\n", error);
        return 2;
    }
    const WorkDir work(opt.keep);
    const Pair pair = run_pair(opt, *target, work.root() / "all");
    const json report = join(opt, pair);
    const std::string verdict = report.value("verdict", "");
    if (verdict == "error" || verdict == "original-failed" || verdict == "nothing-compiled") {
        fmt::print(stderr, "{}", text_report(report));
        fmt::print(stderr, "error: nothing written: the fixes could not be verified\n");
        return 2;
    }
    std::vector<Claimed> sites = claimed_sites(pair);
    decide(sites, report, true);
    confirm(opt, pair, work.root(), sites);
    std::vector<std::string> held;
    for (const Claimed& c : sites) {
        if (!c.why.empty()) held.push_back((target->root / c.hold()).string());
        if (!opt.quiet) {
            fmt::print(stderr, "{}:{}: {} {}: {}\n", c.file, c.line, c.code, c.what,
                       c.why.empty() ? "kept: its graph break is gone, outputs and messages kept" : "reverted: " + c.why);
        }
    }
    if (!opt.quiet) fmt::print(stderr, "fix --verify: {} of {} fixes kept\n", kept_count(sites), sites.size());
    Evidence evidence;
    for (const std::string& r : pair.evidence.roots) evidence.roots.push_back((target->root / r).string());
    for (const std::string& t : pair.evidence.data_tests) evidence.data_tests.push_back((target->root / t).string());
    for (const std::string& r : pair.evidence.data_reads) evidence.data_reads.push_back((target->root / r).string());
    for (const std::string& r : pair.evidence.data_operators) {
        evidence.data_operators.push_back((target->root / r).string());
    }
    return apply(held, evidence);
}

}  // namespace graphmend::verify

// verify's join: what Dynamo reported in each run, against graphmend's static report of the
// fixed copy. Statuses: docs/verify.md ("The join").
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "graphmend/output.hpp"
#include "graphmend/runtime_module.hpp"
#include "internal.hpp"

namespace graphmend::verify {

namespace {

// The string at `key` of what a run's record holds; "" when it is absent, null or no string (the
// hook writes null for what it could not learn, e.g. "torch" when the program never imported it).
std::string text_of(const json& j, const char* key) {
    if (!j.is_object()) return {};
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A site of the static report, in the terms the join needs.
struct StaticSite {
    std::string code, rule, status, reason, what, graph_break, condition;
    std::string help;  // what would remove its break (the site's help line), or ""
    int first = 0, last = 0;  // lines of its range
    // Lines the site covers: its range and the lines its fix's edits rewrite. An edit may lie
    // outside the range: the `.item()` read a line above the `if` that tests it (GM201) is
    // rewritten with the `if`, and Dynamo reports that break at the read's line.
    std::vector<std::pair<int, int>> spans;
};

using SitesByFile = std::map<std::string, std::vector<StaticSite>>;

std::string relative_to(const std::string& file, const fs::path& root) {
    if (file.empty() || root.empty()) return {};
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(fs::path(file), ec);
    const fs::path rel = (ec ? fs::path(file) : canonical).lexically_relative(root);
    if (rel.empty() || rel.native().starts_with("..")) return {};
    return rel.generic_string();
}

SitesByFile static_sites(const Pair& pair) {
    SitesByFile out;
    if (!pair.fix_report.is_object() || !pair.fix_report.contains("files")) return out;
    const fs::path mirror = fs::weakly_canonical(pair.mirror);
    for (const json& f : pair.fix_report["files"]) {
        const std::string rel = relative_to(f.value("path", ""), mirror);
        for (const json& s : f.value("sites", json::array())) {
            StaticSite site;
            site.code = s.value("code", "");
            site.rule = s.value("rule", "");
            site.status = s.value("status", "");
            site.reason = s.value("reason", "");
            site.help = s.contains("help") && s["help"].is_string() ? s["help"].get<std::string>() : "";
            site.what = s.value("what", "");
            site.graph_break = s.value("graph_break", "");
            site.condition = s["condition"].is_string() ? s["condition"].get<std::string>() : "";
            site.first = s["range"]["start"].value("line", 0);
            site.last = s["range"]["end"].value("line", site.first);
            site.spans.emplace_back(site.first, site.last);
            if (s.contains("fix") && s["fix"].is_object()) {
                for (const json& e : s["fix"].value("edits", json::array())) {
                    if (!e.contains("start") || !e.contains("end")) continue;
                    const int a = e["start"].value("line", 0), b = e["end"].value("line", a);
                    if (a > 0 && (a < site.first || b > site.last)) site.spans.emplace_back(a, b);
                }
            }
            out[rel].push_back(std::move(site));
        }
    }
    return out;
}

// The site whose smallest span (range or rewritten lines) holding `line` is the smallest, or null.
const StaticSite* site_at(const SitesByFile& sites, const std::string& file, int line) {
    const auto it = sites.find(file);
    if (it == sites.end()) return nullptr;
    const StaticSite* best = nullptr;
    int best_size = 0;
    for (const StaticSite& s : it->second) {
        for (const auto& [first, last] : s.spans) {
            if (line < first || line > last) continue;
            if (best == nullptr || last - first < best_size) {
                best = &s;
                best_size = last - first;
            }
        }
    }
    return best;
}

bool claims_fix(const StaticSite& s) { return s.status == "fixed" || s.status == "fixed-when"; }

// One break as the join keys it: file (relative to PATH's folder, or absolute outside it), line.
struct BreakKey {
    std::string file;
    int line = 0;
    bool inside = false;
    auto operator<=>(const BreakKey&) const = default;
};

struct Seen {
    int count = 0;
    int by_condition = 0;  // breaks at a runtime line marked kConditionUnmet: a fix's condition did not hold
    std::set<std::string> gbs, kinds, reasons, callables, actions;
    std::set<std::string> via;  // Dynamo's own sites, when the key is the project's frame that led there
};

std::string callable_name(const json& record, const json& b) {
    if (!b.contains("callable") || !b["callable"].is_number_integer()) return "";
    const int i = b["callable"];
    for (const json& c : record.value("callables", json::array())) {
        if (c.value("index", -1) == i) return text_of(c, "name");
    }
    return "";
}

// Whether line `line` of `rel` (relative to the original root) is the user's code: not in
// graphmend's runtime module, nor past the original file's last line (the runtime blocks and the
// import a fix appends). A break there belongs to the call of the helper that made it.
class UserLines {
public:
    explicit UserLines(fs::path root) : root_(std::move(root)) {}
    bool operator()(const std::string& rel, int line) {
        if (fs::path(rel).filename() == "_graphmend_runtime.py") return false;
        auto it = counts_.find(rel);
        if (it == counts_.end()) {
            std::ifstream in(root_ / rel, std::ios::binary);
            int n = 0;
            for (std::string l; std::getline(in, l);) ++n;
            it = counts_.emplace(rel, in.is_open() || n > 0 ? n : -1).first;
        }
        return it->second < 0 || line <= it->second;
    }

private:
    fs::path root_;
    std::map<std::string, int> counts_;
};

// Whether line `line` of file `file` (absolute) holds runtime_module::kConditionUnmet: the line of a
// runtime helper that runs the original control flow because a condition of the fix did not
// hold (GM201's `_graphmend_if` when the branch values differ in shape, or require grad).
class ConditionLines {
public:
    bool operator()(const std::string& file, int line) {
        auto it = files_.find(file);
        if (it == files_.end()) {
            std::vector<std::string> lines;
            std::ifstream in(file, std::ios::binary);
            for (std::string l; std::getline(in, l);) lines.push_back(std::move(l));
            it = files_.emplace(file, std::move(lines)).first;
        }
        const auto& lines = it->second;
        return line > 0 && static_cast<std::size_t>(line) <= lines.size() &&
               lines[static_cast<std::size_t>(line) - 1].find(runtime_module::kConditionUnmet) != std::string::npos;
    }

private:
    std::map<std::string, std::vector<std::string>> files_;
};

std::map<BreakKey, Seen> breaks_of(const Run& run, const std::vector<fs::path>& roots, UserLines& user_lines) {
    ConditionLines condition_lines;
    std::map<BreakKey, Seen> out;
    if (!run.record.is_object()) return out;
    for (const json& b : run.record.value("breaks", json::array())) {
        BreakKey key;
        const std::string file = b["file"].is_string() ? b["file"].get<std::string>() : "";
        key.line = b["line"].is_number_integer() ? b["line"].get<int>() : 0;
        std::string via;
        auto place = [&](const std::string& f, int line) {
            // graphmend's runtime module is no code of the project: a helper that falls back to
            // the original call breaks where the rewritten call is, as the library calls below.
            if (fs::path(f).filename() == runtime_module::kFileName) return false;
            for (const fs::path& root : roots) {
                if (std::string rel = relative_to(f, root); !rel.empty()) {
                    if (!user_lines(rel, line)) return false;
                    key = {rel, line, true};
                    return true;
                }
            }
            return false;
        };
        if (!place(file, key.line)) {
            // Dynamo's site lies in a library (logging, transformers) or in graphmend's runtime (a
            // helper that falls back to the original call): the innermost frame of the project on
            // the way there is where the code that breaks is called.
            const json stack = b.value("stack", json::array());
            bool placed = false;
            for (auto it = stack.rbegin(); it != stack.rend() && !placed; ++it) {
                if ((*it).size() == 2 && (*it)[0].is_string() && (*it)[1].is_number_integer()) {
                    placed = place((*it)[0].get<std::string>(), (*it)[1].get<int>());
                }
            }
            if (placed) {
                via = fmt::format("{}:{}", file, b["line"].is_number_integer() ? b["line"].get<int>() : 0);
            } else {
                key = {file.empty() ? "?" : file, key.line, false};
            }
        }
        Seen& seen = out[key];
        if (!via.empty()) seen.via.insert(via);
        seen.count += b.value("count", 1);
        // Dynamo's site, or a frame on the way there (a deferred message's fallback breaks inside
        // logging or print), on a marked line of graphmend's runtime.
        bool by_condition = !via.empty() && condition_lines(file, b["line"].is_number_integer() ? b["line"].get<int>() : 0);
        for (const json& frame : b.value("stack", json::array())) {
            if (by_condition || via.empty()) break;
            if (frame.size() == 2 && frame[0].is_string() && frame[1].is_number_integer()) {
                by_condition = condition_lines(frame[0].get<std::string>(), frame[1].get<int>());
            }
        }
        if (by_condition) seen.by_condition += b.value("count", 1);
        if (b["gb"].is_string()) seen.gbs.insert(b["gb"].get<std::string>());
        seen.kinds.insert(text_of(b, "kind"));
        seen.reasons.insert(text_of(b, "reason"));
        seen.actions.insert(text_of(b, "action").empty() ? "break" : text_of(b, "action"));
        if (std::string name = callable_name(run.record, b); !name.empty()) seen.callables.insert(name);
    }
    return out;
}

json list_of(const std::set<std::string>& s) {
    json out = json::array();
    for (const auto& x : s) {
        if (!x.empty()) out.push_back(x);
    }
    return out;
}

json break_entry(const BreakKey& key, const Seen& seen, const std::string& status) {
    return {{"status", status},     {"file", key.file},          {"line", key.line},
            {"gb", list_of(seen.gbs)}, {"kind", list_of(seen.kinds)}, {"reason", list_of(seen.reasons)},
            {"callables", list_of(seen.callables)}, {"action", list_of(seen.actions)},
            {"count_before", 0},    {"count_after", 0},          {"site", nullptr},
            {"via", list_of(seen.via)}};
}

json site_json(const StaticSite& s) {
    return {{"code", s.code},     {"rule", s.rule},     {"status", s.status}, {"reason", s.reason},
            {"what", s.what},     {"line", s.first},    {"graph_break", s.graph_break},
            {"condition", s.condition.empty() ? json(nullptr) : json(s.condition)},
            {"help", s.help.empty() ? json(nullptr) : json(s.help)}};
}

json breaks_json(const Pair& pair, json& totals) {
    const SitesByFile sites = static_sites(pair);
    const fs::path root = fs::weakly_canonical(pair.target.root);
    const fs::path mirror = fs::weakly_canonical(pair.mirror);
    UserLines user_lines(root);
    const auto before = breaks_of(pair.original, {root}, user_lines);
    const auto after = breaks_of(pair.fixed, {mirror, root}, user_lines);
    json out = json::array();
    for (const auto& [key, seen] : before) {
        const auto later = after.find(key);
        const StaticSite* site = key.inside ? site_at(sites, key.file, key.line) : nullptr;
        std::string status = !key.inside              ? "outside"
                             : site == nullptr        ? "unreported"
                             : !claims_fix(*site)     ? "refused"
                             : later == after.end()   ? "removed"
                             : site->status == "fixed-when" && later->second.by_condition == later->second.count
                                 ? "condition-unmet"
                                 : "fixed-but-left";
        json e = break_entry(key, seen, status);
        e["count_before"] = seen.count;
        if (later != after.end()) e["count_after"] = later->second.count;
        if (site != nullptr) e["site"] = site_json(*site);
        totals[status] = totals.value(status, 0) + 1;
        out.push_back(std::move(e));
    }
    for (const auto& [key, seen] : after) {
        if (before.contains(key)) continue;
        json e = break_entry(key, seen, "new");
        e["count_after"] = seen.count;
        if (const StaticSite* site = key.inside ? site_at(sites, key.file, key.line) : nullptr) e["site"] = site_json(*site);
        totals["new"] = totals.value("new", 0) + 1;
        out.push_back(std::move(e));
    }
    return out;
}

// Callables matched by (name, ordinal among those of that name).
json callables_json(const Pair& pair, json& totals) {
    using Key = std::pair<std::string, int>;
    std::map<Key, std::pair<json, json>> joined;
    std::vector<Key> order;
    auto add = [&](const Run& run, bool original) {
        std::map<std::string, int> seen;
        if (!run.record.is_object()) return;
        for (const json& c : run.record.value("callables", json::array())) {
            const std::string name = text_of(c, "name").empty() ? "?" : text_of(c, "name");
            const Key key{name, seen[name]++};
            if (!joined.contains(key)) order.push_back(key);
            (original ? joined[key].first : joined[key].second) = c;
        }
    };
    add(pair.original, true);
    add(pair.fixed, false);
    json out = json::array();
    int graphs_before = 0, graphs_after = 0;
    for (const Key& key : order) {
        const auto& [b, a] = joined[key];
        auto field = [](const json& c, const char* name) { return c.is_object() && c.contains(name) ? c[name] : json(nullptr); };
        // Dynamo's graph-break records made while this callable ran.
        auto breaks_in = [](const Run& run, const json& c) {
            if (!c.is_object()) return json(nullptr);
            int n = 0;
            for (const json& br : run.record.value("breaks", json::array())) {
                if (br["callable"] == c["index"]) n += br.value("count", 1);
            }
            return json(n);
        };
        json e = {{"name", key.first},
                  {"graphs_before", field(b, "graphs")},     {"graphs_after", field(a, "graphs")},
                  {"breaks_before", breaks_in(pair.original, b)}, {"breaks_after", breaks_in(pair.fixed, a)},
                  {"calls_before", field(b, "calls")},       {"calls_after", field(a, "calls")},
                  {"recompiles_before", field(b, "recompiles")}, {"recompiles_after", field(a, "recompiles")},
                  {"compile_s_before", field(b, "compile_s")}, {"compile_s_after", field(a, "compile_s")},
                  {"first_call_s_before", field(b, "first_call_s")}, {"first_call_s_after", field(a, "first_call_s")},
                  {"steady_s_before", field(b, "steady_s")}, {"steady_s_after", field(a, "steady_s")}};
        graphs_before += b.is_object() ? b.value("graphs", 0) : 0;
        graphs_after += a.is_object() ? a.value("graphs", 0) : 0;
        out.push_back(std::move(e));
    }
    totals["graphs_before"] = graphs_before;
    totals["graphs_after"] = graphs_after;
    return out;
}

int total_breaks(const Run& run) {
    int n = 0;
    if (!run.record.is_object()) return 0;
    for (const json& b : run.record.value("breaks", json::array())) n += b.value("count", 1);
    return n;
}

// The first line where two texts differ, as "line N: `a` / `b`"; empty when equal.
std::string first_difference(const std::string& a, const std::string& b) {
    if (a == b) return {};
    std::size_t line = 1, i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) {
        if (a[i] == '\n') ++line;
        ++i;
    }
    auto line_at = [](const std::string& s, std::size_t at) {
        const std::size_t start = s.rfind('\n', at == 0 ? 0 : at - 1);
        const std::size_t from = start == std::string::npos || at == 0 ? 0 : start + 1;
        const std::size_t end = s.find('\n', from);
        std::string out = s.substr(from, end == std::string::npos ? std::string::npos : end - from);
        return out.size() > 120 ? out.substr(0, 117) + "..." : out;
    };
    return fmt::format("line {}: `{}` before, `{}` after", line, line_at(a, i), line_at(b, i));
}

json messages_json(const Pair& pair) {
    const json none = json::array();
    const json& mb = pair.original.record.is_object() ? pair.original.record.value("messages", none) : none;
    const json& ma = pair.fixed.record.is_object() ? pair.fixed.record.value("messages", none) : none;
    std::string records_difference;
    if (mb != ma) {
        std::size_t i = 0;
        while (i < mb.size() && i < ma.size() && mb[i] == ma[i]) ++i;
        auto show = [](const json& m, std::size_t k) {
            return k < m.size() ? fmt::format("{} {}", text_of(m[k], "source"), text_of(m[k], "text")) : std::string("(none)");
        };
        records_difference = fmt::format("message {}: `{}` before, `{}` after", i + 1, show(mb, i), show(ma, i));
    }
    const std::string out_difference = first_difference(pair.original.stdout_text, pair.fixed.stdout_text);
    return {{"stdout", out_difference.empty() ? "same" : "different"},
            {"stdout_difference", out_difference},
            {"records", records_difference.empty() ? "same" : "different"},
            {"records_count", mb.size()},
            {"records_difference", records_difference},
            {"stderr", pair.original.stderr_text == pair.fixed.stderr_text ? "same" : "different"}};
}

json run_json(const Run& run) {
    const ProcessResult& p = run.process;
    json j = {{"exit_code", p.exit_code},  {"signal", p.signal},  {"timed_out", p.timed_out},
              {"wall_s", p.wall_s},        {"peak_rss_kb", p.peak_rss_kb}, {"record", run.record.is_object()},
              {"complete", run.record.is_object() ? run.record.value("complete", false) : false},
              {"error", p.started ? "" : p.error}};
    if (run.record.is_object()) j["torch"] = text_of(run.record, "torch");
    const std::string& err = run.stderr_text;
    j["stderr_tail"] = err.size() > 2000 ? err.substr(err.size() - 2000) : err;
    return j;
}

bool ran(const Run& run) {
    return run.process.started && run.process.exit_code == 0 && !run.process.timed_out && run.record.is_object();
}

std::string verdict_of(const Pair& pair, const json& report) {
    if (!pair.fix_error.empty()) return "error";
    if (!ran(pair.original)) return "original-failed";
    if (pair.original.record.value("callables", json::array()).empty()) return "nothing-compiled";
    if (!ran(pair.fixed)) return "fixed-failed";
    const json& t = report["totals"];
    if (t.value("fixed-but-left", 0) > 0 || t.value("new", 0) > 0) return "fix-failed";
    const json& m = report["messages"];
    if (m["stdout"] != "same" || m["records"] != "same") return "behaviour-changed";
    for (const json& c : report["outputs"]) {
        if (c.value("status", "") == "different" || c.value("status", "") == "missing") return "behaviour-changed";
    }
    if (!pair.compare_error.empty()) return "outputs-unchecked";
    return "ok";
}

}  // namespace

json join(const Options& opt, const Pair& pair) {
    json totals = {{"removed", 0},    {"condition-unmet", 0}, {"fixed-but-left", 0}, {"refused", 0},
                   {"unreported", 0}, {"outside", 0},         {"new", 0}};
    json report = {{"schema_version", 1},
                   {"tool", {{"name", "graphmend"}, {"version", std::string(output::kVersion)}}},
                   {"target", {{"path", pair.target.path.string()}, {"root", pair.target.root.string()},
                               {"mode", pair.target.mode == Target::Mode::Command    ? "command"
                                        : pair.target.mode == Target::Mode::Checkout ? "checkout"
                                                                                     : "file"},
                               {"command", pair.target.label}, {"backend", opt.backend}}},
                   {"runs", {{"original", run_json(pair.original)}, {"fixed", run_json(pair.fixed)}}}};
    report["callables"] = callables_json(pair, totals);
    report["breaks"] = breaks_json(pair, totals);
    totals["breaks_before"] = total_breaks(pair.original);
    totals["breaks_after"] = total_breaks(pair.fixed);
    report["totals"] = totals;
    report["outputs"] = pair.compare.is_object() ? pair.compare.value("calls", json::array()) : json::array();
    report["outputs_error"] = pair.compare_error;
    report["messages"] = messages_json(pair);
    if (pair.fixed.process.error == kNotRun) {
        for (const char* k : {"stdout", "records", "stderr"}) report["messages"][k] = "not-compared";
    }
    report["fix_error"] = pair.fix_error;
    report["verdict"] = verdict_of(pair, report);
    return report;
}

int exit_code_of(const json& report) {
    const std::string v = report.value("verdict", "error");
    if (v == "ok") return 0;
    if (v == "error" || v == "original-failed" || v == "nothing-compiled") return 2;
    return 1;
}

}  // namespace graphmend::verify

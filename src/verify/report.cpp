// verify's reports: text, JSON and SARIF of a joined report (join.cpp). See internal.hpp.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "graphmend/output.hpp"
#include "internal.hpp"

namespace graphmend::verify {

namespace {

std::string joined(const json& list, std::string_view sep = ", ") {
    std::vector<std::string> items;
    for (const json& x : list) items.push_back(x.is_string() ? x.get<std::string>() : x.dump());
    return fmt::format("{}", fmt::join(items, sep));
}

std::string number(const json& v) { return v.is_number() ? v.dump() : "-"; }

std::string seconds(const json& v) { return v.is_number() ? fmt::format("{:.3g}", v.get<double>()) : "-"; }

std::string run_line(const char* name, const json& run) {
    if (run.value("error", "") == kNotRun) return fmt::format("{}: {}", name, kNotRun);
    if (!run.value("error", "").empty()) return fmt::format("{}: did not start: {}", name, run.value("error", ""));
    std::string s = run.value("timed_out", false) ? fmt::format("{}: timed out after {:.1f} s", name, run.value("wall_s", 0.0))
                    : run.value("signal", 0) != 0 ? fmt::format("{}: killed by signal {}", name, run.value("signal", 0))
                                                  : fmt::format("{}: exit {}, {:.1f} s", name, run.value("exit_code", -1),
                                                                run.value("wall_s", 0.0));
    if (!run.value("record", false)) s += ", no record (the hook did not run, or the process ended without exiting)";
    return s;
}

// What a verdict means, for the last line.
std::string_view verdict_text(const std::string& v) {
    if (v == "ok") return "no fix left its break or made one; outputs and messages kept";
    if (v == "fix-failed") return "a fix left its break, or the fix added one";
    if (v == "behaviour-changed") return "outputs or messages differ after the fix";
    if (v == "original-failed") return "the original run failed: nothing to compare";
    if (v == "nothing-compiled") return "the command called no torch.compile'd code: nothing to measure";
    if (v == "fixed-failed") return "the run failed only after the fix";
    if (v == "outputs-unchecked") return "outputs could not be compared";
    return "error";
}


// The last `n` lines of `text`, each prefixed.
std::string tail_lines(const std::string& text, std::size_t n, std::string_view prefix) {
    std::vector<std::string> lines;
    std::size_t a = 0;
    while (a < text.size()) {
        const std::size_t b = text.find('\n', a);
        lines.push_back(text.substr(a, b == std::string::npos ? std::string::npos : b - a));
        if (b == std::string::npos) break;
        a = b + 1;
    }
    std::string out;
    for (std::size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) {
        out += fmt::format("{}{}\n", prefix, lines[i]);
    }
    return out;
}

// "a -> b" of two optional numbers.
std::string arrow(const json& before, const json& after, bool secs = false) {
    return fmt::format("{} -> {}", secs ? seconds(before) : number(before), secs ? seconds(after) : number(after));
}

std::string break_line(const json& b) {
    std::string site;
    if (b["site"].is_object()) {
        const json& s = b["site"];
        site = fmt::format("  {} {}", s.value("code", ""), s.value("rule", ""));
        if (!s.value("reason", "").empty() && b.value("status", "") == "refused") site += ": " + s.value("reason", "");
        if (s["condition"].is_string() && b.value("status", "") != "refused") {
            site += fmt::format(" (fixed when: {})", s["condition"].get<std::string>());
        }
    }
    std::string via;
    if (const json v = b.value("via", json::array()); !v.empty()) {
        via = fmt::format("; Dynamo's site {}{}", v[0].get<std::string>(),
                          v.size() > 1 ? fmt::format(" and {} more", v.size() - 1) : "");
    }
    std::string help;  // a break left with its site's help line
    if (b["site"].is_object() && b["site"].value("help", json()).is_string() &&
        (b.value("status", "") == "refused" || b.value("status", "") == "condition-unmet")) {
        help = fmt::format("  {:<14} help: {}\n", "", b["site"]["help"].get<std::string>());
    }
    return fmt::format("  {:<14} {}:{}  [{}] {}{}{}{}\n{}", b.value("status", ""), b.value("file", "?"),
                       b.value("line", 0), joined(b["gb"]), joined(b["kind"]), site,
                       b["callables"].empty() ? "" : fmt::format(" (in {})", joined(b["callables"])), via, help);
}

std::string outputs_lines(const json& r) {
    std::size_t equal = 0, gap = 0, different = 0;
    for (const json& c : r["outputs"]) {
        const std::string s = c.value("status", "");
        (s == "bit-equal" ? equal : s == "within-gap" ? gap : different) += 1;
    }
    std::string out = fmt::format("  outputs: {} calls bit-equal, {} within the compiled-vs-eager gap, {} different{}\n", equal,
                                  gap, different,
                                  r.value("outputs_error", "").empty() ? "" : " (" + r.value("outputs_error", "") + ")");
    for (const json& c : r["outputs"]) {
        if (c.value("status", "") == "different" || c.value("status", "") == "missing") {
            out += fmt::format("    {} call {}: {} {}\n", c.value("name", "?"), number(c["call"]), c.value("status", ""),
                               c.value("detail", ""));
        }
    }
    const json& m = r["messages"];
    out += fmt::format("  stdout: {}{}; warnings and log records: {} ({}){}\n", m.value("stdout", ""),
                       m.value("stdout_difference", "").empty() ? "" : " (" + m.value("stdout_difference", "") + ")",
                       m.value("records", ""), number(m["records_count"]),
                       m.value("records_difference", "").empty() ? "" : " (" + m.value("records_difference", "") + ")");
    return out;
}

}  // namespace

std::string text_report(const json& r) {
    std::string out;
    const json& t = r["target"];
    out += fmt::format("graphmend verify {}\n  command: {}\n", t.value("path", ""), t.value("command", ""));
    out += fmt::format("  {}\n  {}\n", run_line("original", r["runs"]["original"]), run_line("fixed   ", r["runs"]["fixed"]));
    if (!r.value("fix_error", "").empty()) out += fmt::format("  error: {}\n", r.value("fix_error", ""));
    for (const char* side : {"original", "fixed"}) {
        const json& run = r["runs"][side];
        const bool failed = !run.value("error", "").empty() || run.value("exit_code", 0) != 0 || run.value("timed_out", false);
        if (failed && !run.value("stderr_tail", "").empty()) {
            out += fmt::format("  the {} run's stderr ends:\n{}", side, tail_lines(run.value("stderr_tail", ""), 8, "    | "));
        }
    }
    if (!r["callables"].empty()) {
        bool compiled = false;  // the backend's compile time is known (--backend user)
        for (const json& c : r["callables"]) compiled = compiled || c["compile_s_before"].is_number();
        out += fmt::format("\n  {:<32} {:<10} {:<12} {}{}\n", "compiled callable", "FX graphs", "graph breaks",
                           "first call, steady call (s)", compiled ? "; compile (s)" : "");
        for (const json& c : r["callables"]) {
            out += fmt::format("  {:<32} {:<10} {:<12} {}, {}{}\n", c.value("name", "?"), arrow(c["graphs_before"], c["graphs_after"]),
                               arrow(c["breaks_before"], c["breaks_after"]), arrow(c["first_call_s_before"], c["first_call_s_after"], true),
                               arrow(c["steady_s_before"], c["steady_s_after"], true),
                               compiled ? "; " + arrow(c["compile_s_before"], c["compile_s_after"], true) : "");
        }
    }
    if (!r["breaks"].empty()) {
        out += "\n  graph breaks Dynamo reported, with what graphmend did:\n";
        for (const json& b : r["breaks"]) out += break_line(b);
    }
    out += "\n" + outputs_lines(r);
    const json& t2 = r["totals"];
    out += fmt::format("  total: FX graphs {}, graph breaks {}: {} removed, {} condition-unmet, {} fixed-but-left, "
                       "{} refused, {} unreported, {} outside, {} new\n",
                       arrow(t2["graphs_before"], t2["graphs_after"]), arrow(t2["breaks_before"], t2["breaks_after"]),
                       number(t2["removed"]), number(t2.value("condition-unmet", json(0))), number(t2["fixed-but-left"]),
                       number(t2["refused"]), number(t2["unreported"]), number(t2["outside"]), number(t2["new"]));
    out += fmt::format("  verdict: {}: {}\n", r.value("verdict", ""), verdict_text(r.value("verdict", "")));
    return out;
}

json sarif_report(const std::vector<json>& reports) {
    // Verify's own findings get rule ids of their own; a removed or refused break is reported
    // under the code of the site that covers it.
    struct Own {
        const char* status;
        const char* id;
        const char* name;
        const char* text;
        const char* level;
    };
    static const Own own[] = {
        {"unreported", "GMV001", "unreported-graph-break", "a graph break Dynamo reported where graphmend reported no site", "warning"},
        {"fixed-but-left", "GMV002", "fix-left-graph-break", "a site graphmend fixed still breaks the graph", "error"},
        {"new", "GMV003", "graph-break-after-fix", "a graph break only the fixed code makes", "error"},
    };
    json rules = json::array();
    for (const Own& o : own) rules.push_back({{"id", o.id}, {"name", o.name}, {"shortDescription", {{"text", o.text}}}});
    json results = json::array();
    std::set<std::string> seen_codes;
    for (const json& r : reports) {
        const std::string root = r["target"].value("root", "");
        for (const json& b : r.value("breaks", json::array())) {
            const std::string status = b.value("status", "");
            if (status == "outside") continue;
            std::string id, level = "note";
            for (const Own& o : own) {
                if (status == o.status) {
                    id = o.id;
                    level = o.level;
                }
            }
            if (id.empty()) {
                if (!b["site"].is_object()) continue;
                id = b["site"].value("code", "");
                level = status == "refused" ? "warning" : "note";
                if (!seen_codes.contains(id)) {
                    seen_codes.insert(id);
                    rules.push_back({{"id", id}, {"name", b["site"].value("rule", "")},
                                     {"helpUri", fmt::format("{}/docs/rules/{}.md", output::kHomepage, id)}});
                }
            }
            const std::string file = (fs::path(root) / b.value("file", "")).string();
            results.push_back(
                {{"ruleId", id},
                 {"level", level},
                 {"message", {{"text", fmt::format("graph break [{}] {}: {}", joined(b["gb"]), joined(b["kind"]), status)}}},
                 {"locations", json::array({{{"physicalLocation", {{"artifactLocation", {{"uri", output::uri_of(file)}}},
                                                                   {"region", {{"startLine", std::max(1, b.value("line", 1))}}}}}}})},
                 {"properties", {{"status", status}, {"callables", b["callables"]}}}});
        }
    }
    return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
            {"version", "2.1.0"},
            {"runs", json::array({{{"tool", {{"driver", {{"name", "graphmend verify"},
                                                          {"version", std::string(output::kVersion)},
                                                          {"rules", rules}}}}},
                                   {"results", results}}})}};
}

bool deliver(const Options& opt, const json& report, const std::vector<json>& sarif_of) {
    std::string text;
    if (opt.output_format == "json") {
        text = report.dump(2) + "\n";
    } else if (opt.output_format == "sarif") {
        text = sarif_report(sarif_of).dump(2) + "\n";
    } else {
        if (!opt.quiet || report.value("verdict", "ok") != "ok") {
            const std::string t = report.contains("checkouts") ? std::string() : text_report(report);
            if (opt.output_file.empty()) {
                std::fputs(t.c_str(), stderr);
                return true;
            }
            text = t;
        }
    }
    if (opt.output_file.empty()) {
        std::fputs(text.c_str(), stdout);
        return true;
    }
    std::ofstream out(opt.output_file, std::ios::binary);
    out << text;
    if (!out) {
        fmt::print(stderr, "error: cannot write {}\n", opt.output_file);
        return false;
    }
    return true;
}

}  // namespace graphmend::verify

// A folder of checkouts: one child `graphmend verify CHECKOUT --output-format json` per checkout,
// -j at once on this machine (batch.hpp) or through Ray (src/verify/python/_graphmend_verify_ray.py).
// Both executors turn a finished child into a result the same way (outcome_of), so their
// results are the same. See internal.hpp.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "graphmend/batch.hpp"
#include "internal.hpp"

namespace graphmend::verify {

namespace {

// The flags a child verify gets: the batch's own, less those of the batch itself.
std::vector<std::string> child_flags(const Options& opt) {
    std::vector<std::string> a = {"--output-format", "json", "--backend", opt.backend, "--calls", std::to_string(opt.calls)};
    if (!opt.python.empty()) a.insert(a.end(), {"--python", opt.python});
    if (!opt.device.empty()) a.insert(a.end(), {"--device", opt.device});
    if (opt.tiny) a.push_back("--tiny");
    if (opt.repeat > 1) a.insert(a.end(), {"--repeat", std::to_string(opt.repeat)});
    if (opt.unsafe_fixes) a.push_back("--unsafe-fixes");
    if (!opt.eager_gap) a.push_back("--no-eager-gap");
    if (opt.timeout_s > 0) a.insert(a.end(), {"--timeout", fmt::format("{}", opt.timeout_s)});
    return a;
}

// A child's time limit: both runs, and a minute for the rest.
double child_timeout(const Options& opt) { return opt.timeout_s > 0 ? 2 * opt.timeout_s + 60 : 0; }

std::string short_counts(const json& r) {
    const json& t = r["totals"];
    return fmt::format(
        "graphs {} -> {}, breaks {} -> {} ({} removed, {} condition-unmet, {} fixed-but-left, {} refused, {} unreported, "
        "{} new)",
        t.value("graphs_before", 0), t.value("graphs_after", 0), t.value("breaks_before", 0), t.value("breaks_after", 0),
        t.value("removed", 0), t.value("condition-unmet", 0), t.value("fixed-but-left", 0), t.value("refused", 0),
        t.value("unreported", 0), t.value("new", 0));
}

}  // namespace

// One checkout's result from what its child left: exit status, time, memory, stdout (the JSON
// report), the end of stderr.
BatchOutcome outcome_of(const std::string& name, int exit_code, int signal, bool timed_out, double wall_s,
                        long peak_rss_kb, const std::string& out, const std::string& err_tail, const std::string& error) {
    BatchOutcome o;
    o.wall_s = wall_s;
    o.peak_rss_kb = peak_rss_kb;
    json report;
    try {
        if (!out.empty()) report = json::parse(out);
    } catch (const json::exception&) {
    }
    o.data = {{"checkout", name}, {"exit_code", exit_code}, {"wall_s", wall_s}, {"peak_rss_kb", peak_rss_kb},
              {"report", report}};
    if (!error.empty() || timed_out || signal != 0 || !report.is_object()) {
        o.status = timed_out ? "timeout" : "error";
        const std::string why = !error.empty() ? error
                                : timed_out    ? "timed out"
                                : signal != 0  ? fmt::format("killed by signal {}", signal)
                                               : fmt::format("exit {}, no report: {}", exit_code, err_tail);
        o.line = fmt::format("{}: {}", name, why.substr(0, why.find('\n') == std::string::npos ? why.size() : why.find('\n')));
        o.data["error"] = why;
        return o;
    }
    o.status = report.value("verdict", "error");
    o.line = fmt::format("{}: {}: {}", name, o.status, short_counts(report));
    return o;
}

namespace {

std::vector<BatchOutcome> run_local(const Options& opt, const std::vector<fs::path>& checkouts,
                                    const std::function<void(std::size_t, const BatchOutcome&)>& on_done) {
    std::vector<BatchJob> jobs;
    for (const fs::path& c : checkouts) {
        jobs.push_back({c.string(), [&opt, c] {
                            ProcessSpec spec;
                            spec.argv = {opt.self, "verify", c.string()};
                            const auto flags = child_flags(opt);
                            spec.argv.insert(spec.argv.end(), flags.begin(), flags.end());
                            spec.stdout_to_pipe = true;
                            spec.timeout_s = child_timeout(opt);
                            const fs::path err = fs::temp_directory_path() /
                                                 fmt::format("graphmend-verify-{}-{}.stderr", ::getpid(), std::hash<std::string>{}(c.string()));
                            spec.stderr_path = err.string();
                            const ProcessResult r = run_process(spec);
                            std::ifstream in(err);
                            std::stringstream s;
                            s << in.rdbuf();
                            std::error_code ec;
                            fs::remove(err, ec);
                            std::string tail = s.str();
                            if (tail.size() > 2000) tail = tail.substr(tail.size() - 2000);
                            if (r.interrupted) {  // stopped by SIGINT: whatever its child reported is cut short
                                BatchOutcome o{"interrupted", c.string() + ": interrupted", r.wall_s, r.peak_rss_kb,
                                               {{"checkout", c.string()}, {"error", "interrupted"}}};
                                return o;
                            }
                            return outcome_of(c.string(), r.exit_code, r.signal, r.timed_out, r.wall_s, r.peak_rss_kb, r.out,
                                              tail, r.started ? "" : r.error);
                        }});
    }
    BatchOptions bo;
    bo.jobs = opt.jobs;
    bo.progress = opt.output_format == "text" && !opt.quiet;
    bo.on_done = on_done;
    return run_batch(jobs, bo);
}

std::vector<BatchOutcome> run_ray(const Options& opt, const std::vector<fs::path>& checkouts,
                                  const std::function<void(std::size_t, const BatchOutcome&)>& on_done, std::string& error);

}  // namespace

int run_batch_verify(const Options& given, const std::vector<fs::path>& checkouts) {
    // A batch always has a time limit per run: one checkout that hangs must not hold a slot.
    constexpr double kDefaultRunLimit = 600;
    Options opt = given;
    if (opt.timeout_s <= 0) opt.timeout_s = kDefaultRunLimit;
    const auto t0 = std::chrono::steady_clock::now();
    auto on_done = [&opt](std::size_t, const BatchOutcome& o) {
        if (opt.output_format == "text" && (!opt.quiet || o.status != "ok")) BatchProgress::print_line(o.line);
    };
    std::string error;
    const std::vector<BatchOutcome> outcomes =
        opt.executor == "ray" ? run_ray(opt, checkouts, on_done, error) : run_local(opt, checkouts, on_done);
    if (!error.empty()) {
        fmt::print(stderr, "error: {}\n", error);
        return 2;
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    json totals = {{"checkouts", outcomes.size()}, {"graphs_before", 0}, {"graphs_after", 0}, {"breaks_before", 0},
                   {"breaks_after", 0}, {"removed", 0}, {"condition-unmet", 0}, {"fixed-but-left", 0}, {"refused", 0},
                   {"unreported", 0},
                   {"outside", 0}, {"new", 0}, {"wall_s", wall}, {"peak_rss_kb", 0}};
    std::map<std::string, int> statuses;
    json list = json::array();
    std::vector<json> reports;
    int code = 0;
    for (const BatchOutcome& o : outcomes) {
        ++statuses[o.status];
        totals["peak_rss_kb"] = std::max(totals["peak_rss_kb"].get<long>(), o.peak_rss_kb);
        json entry = o.data.is_object() ? o.data : json::object();
        entry["status"] = o.status;
        // Every entry has the schema's keys (docs/verify-report.schema.json), also one a batch
        // never started (interrupted) or whose child left no report.
        const std::pair<const char*, json> defaults[] = {{"checkout", o.line.substr(0, o.line.find(": "))},
                                                         {"exit_code", -1}, {"wall_s", o.wall_s},
                                                         {"peak_rss_kb", o.peak_rss_kb}, {"report", nullptr}};
        for (const auto& [key, value] : defaults) {
            if (!entry.contains(key)) entry[key] = value;
        }
        if (entry.contains("report") && entry["report"].is_object()) {
            const json& t = entry["report"]["totals"];
            for (const char* k : {"graphs_before", "graphs_after", "breaks_before", "breaks_after", "removed",
                                  "condition-unmet", "fixed-but-left", "refused", "unreported", "outside", "new"}) {
                totals[k] = totals[k].get<long>() + t.value(k, 0L);
            }
            reports.push_back(entry["report"]);
            code = std::max(code, exit_code_of(entry["report"]));
        } else {
            code = std::max(code, 2);
        }
        list.push_back(std::move(entry));
    }
    totals["statuses"] = statuses;
    const json report = {{"schema_version", 1}, {"checkouts", list}, {"totals", totals}, {"executor", opt.executor},
                         {"jobs", opt.jobs}};
    if (opt.output_format == "text") {
        std::string by_status;
        for (const auto& [s, n] : statuses) by_status += fmt::format("{}{} {}", by_status.empty() ? "" : ", ", n, s);
        fmt::print(stderr,
                   "total: {} checkouts ({}); graphs {} -> {}, breaks {} -> {}: {} removed, {} condition-unmet, "
                   "{} fixed-but-left, {} refused, {} unreported, {} outside, {} new; {:.1f} s\n",
                   outcomes.size(), by_status, totals["graphs_before"].get<long>(), totals["graphs_after"].get<long>(),
                   totals["breaks_before"].get<long>(), totals["breaks_after"].get<long>(), totals["removed"].get<long>(),
                   totals["condition-unmet"].get<long>(), totals["fixed-but-left"].get<long>(), totals["refused"].get<long>(), totals["unreported"].get<long>(),
                   totals["outside"].get<long>(), totals["new"].get<long>(), wall);
        if (!opt.output_file.empty() && !deliver(opt, report, reports)) return 2;
    } else if (!deliver(opt, report, reports)) {
        return 2;
    }
    return code;
}

namespace {

std::vector<BatchOutcome> run_ray(const Options& opt, const std::vector<fs::path>& checkouts,
                                  const std::function<void(std::size_t, const BatchOutcome&)>& on_done, std::string& error) {
    const WorkDir work("");
    write_python_files(work.root() / "py");
    ProcessSpec spec;
    spec.argv = {python_of(opt), "-m", "_graphmend_verify_ray", "--graphmend", opt.self, "--jobs", std::to_string(opt.jobs)};
    // Without --timeout no time limit, as for run_local's children.
    if (child_timeout(opt) > 0) spec.argv.insert(spec.argv.end(), {"--timeout", fmt::format("{}", child_timeout(opt))});
    if (!opt.ray_address.empty()) spec.argv.insert(spec.argv.end(), {"--address", opt.ray_address});
    for (const fs::path& c : checkouts) spec.argv.push_back(c.string());
    spec.argv.push_back("--");
    const std::vector<std::string> flags = child_flags(opt);
    spec.argv.insert(spec.argv.end(), flags.begin() + 2, flags.end());  // less --output-format json: Ray's own
    // py/ first, the caller's PYTHONPATH after it: the module gives each child the caller's back.
    std::string pythonpath = (work.root() / "py").string();
    if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0') pythonpath += ":" + std::string(old);
    spec.env_set = {{"PYTHONPATH", pythonpath}};
    spec.stdout_to_pipe = true;
    const ProcessResult r = run_process(spec);
    if (!r.started || (r.exit_code != 0 && r.exit_code != 130)) {
        error = !r.started ? r.error
                : r.exit_code == 3 ? "graphmend verify --executor ray needs Ray: pip install 'graphmend[ray]'"
                                   : fmt::format("the Ray executor failed (exit {})", r.exit_code);
        return {};
    }
    std::vector<BatchOutcome> out(checkouts.size());
    std::vector<bool> seen(checkouts.size(), false);
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        try {
            const json j = json::parse(line);
            const std::size_t i = j.value("index", 0UL);
            if (i >= out.size()) continue;
            out[i] = outcome_of(checkouts[i].string(), j.value("exit_code", -1), j.value("signal", 0),
                                j.value("timed_out", false), j.value("wall_s", 0.0), j.value("peak_rss_kb", 0L),
                                j.value("stdout", ""), j.value("stderr_tail", ""), j.value("error", ""));
            seen[i] = true;
        } catch (const json::exception&) {
        }
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (!seen[i]) out[i] = {"interrupted", checkouts[i].string() + ": interrupted", 0, 0, {{"checkout", checkouts[i].string()}}};
        on_done(i, out[i]);
    }
    return out;
}

}  // namespace

}  // namespace graphmend::verify

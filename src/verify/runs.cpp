// verify's runs: the fixed copy, the two runs of the command and the comparison of their
// outputs. See internal.hpp and docs/verify.md ("How a run goes").
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "internal.hpp"

namespace graphmend::verify {

namespace {

std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

json read_json(const fs::path& p) {
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) return nullptr;
    try {
        return json::parse(read_text(p));
    } catch (const json::exception&) {
        return nullptr;
    }
}

// `graphmend fix` over the mirror, in place: its JSON report, or the error. `held`: FILE:LINE:CODE
// relative to the mirror's root; `evidence`: FILE:LINE the same way (traced_lines).
json fix_mirror(const Options& opt, const Target& target, const fs::path& mirror, const fs::path& report,
                const std::vector<std::string>& held, const Evidence& evidence, std::string& error) {
    ProcessSpec spec;
    spec.argv = {opt.self, "fix", "--output-format", "json", "--output-file", report.string(), "--quiet"};
    if (opt.unsafe_fixes) spec.argv.push_back("--unsafe-fixes");
    spec.argv.insert(spec.argv.end(), opt.fix_flags.begin(), opt.fix_flags.end());
    for (const std::string& h : held) {
        spec.argv.push_back("--hold-site");
        spec.argv.push_back((mirror / h).string());
    }
    for (const std::string& r : evidence.roots) {
        spec.argv.push_back("--scope-root");
        spec.argv.push_back((mirror / r).string());
    }
    for (const std::string& t : evidence.data_tests) {
        spec.argv.push_back("--data-test");
        spec.argv.push_back((mirror / t).string());
    }
    for (const std::string& r : evidence.data_reads) {
        spec.argv.push_back("--data-read");
        spec.argv.push_back((mirror / r).string());
    }
    for (const std::string& r : evidence.data_operators) {
        spec.argv.push_back("--data-operator");
        spec.argv.push_back((mirror / r).string());
    }
    spec.argv.push_back(fs::is_regular_file(target.path) ? (mirror / target.path.filename()).string()
                                                         : mirror.string());
    spec.stdout_path = (report.parent_path() / "fix.stdout").string();
    spec.stderr_path = (report.parent_path() / "fix.stderr").string();
    const ProcessResult r = run_process(spec);
    json out = read_json(report);
    if (!r.started || out.is_null() || r.exit_code > 1) {
        error = !r.started ? r.error
                           : fmt::format("graphmend fix exited {}: {}", r.exit_code,
                                         read_text(report.parent_path() / "fix.stderr"));
    }
    return out;
}

Run run_once(const Options& opt, const Target& target, const fs::path& py, const fs::path& dir, bool original,
             const std::optional<std::pair<fs::path, fs::path>>& redirect) {
    fs::create_directories(dir);
    Run run;
    ProcessSpec spec;
    spec.argv = target.argv;
    spec.env_set = run_env(opt, py, dir, original, redirect);
    spec.stdout_path = (dir / "stdout").string();
    spec.stderr_path = (dir / "stderr").string();
    spec.timeout_s = opt.timeout_s;
    run.process = run_process(spec);
    run.record = read_json(dir / "record.json");
    run.stdout_text = read_text(dir / "stdout");
    run.stderr_text = read_text(dir / "stderr");
    run.outputs = dir / "outputs.pt";
    return run;
}

// The Python of the runs (the hook records sys.executable), else --python's.
std::string compare_python(const Options& opt, const Run& run) {
    if (run.record.is_object() && run.record.contains("executable") && run.record["executable"].is_string()) {
        const std::string exe = run.record["executable"];
        if (!exe.empty()) return exe;
    }
    return python_of(opt);
}

void compare(const Options& opt, const fs::path& py, Pair& pair) {
    std::error_code ec;
    if (!fs::is_regular_file(pair.original.outputs, ec) || !fs::is_regular_file(pair.fixed.outputs, ec)) {
        pair.compare_error = "a run saved no outputs";
        return;
    }
    ProcessSpec spec;
    spec.argv = {compare_python(opt, pair.original), "-m", "_graphmend_verify_compare",
                 pair.original.outputs.string(), pair.fixed.outputs.string()};
    spec.env_set = {{"PYTHONPATH", py.string()}, {"PYTHONDONTWRITEBYTECODE", "1"}};
    spec.env_unset = {"GRAPHMEND_VERIFY_RECORD"};
    spec.stdout_to_pipe = true;
    spec.stderr_path = (pair.original.outputs.parent_path().parent_path() / "compare.stderr").string();
    const ProcessResult r = run_process(spec);
    try {
        if (r.started && r.exit_code == 0) pair.compare = json::parse(r.out);
    } catch (const json::exception&) {
    }
    if (pair.compare.is_null()) {
        pair.compare_error = r.started ? fmt::format("the comparison failed (exit {}): {}", r.exit_code,
                                                     read_text(spec.stderr_path))
                                       : r.error;
    }
}

std::pair<fs::path, fs::path> redirect_of(const Pair& pair) {
    return {fs::weakly_canonical(pair.target.root), fs::weakly_canonical(pair.mirror)};
}

}  // namespace

std::map<std::string, std::string> run_env(const Options& opt, const fs::path& py, const fs::path& out,
                                           bool original, const std::optional<std::pair<fs::path, fs::path>>& redirect) {
    std::string pythonpath = py.string();
    if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0') pythonpath += ":" + std::string(old);
    std::map<std::string, std::string> env = {
        {"PYTHONPATH", pythonpath},
        {"PYTHONDONTWRITEBYTECODE", "1"},  // the user's folders get no __pycache__ from verify
        {"GRAPHMEND_VERIFY_RECORD", (out / "record.json").string()},
        {"GRAPHMEND_VERIFY_OUTPUTS", (out / "outputs.pt").string()},
        {"GRAPHMEND_VERIFY_BACKEND", opt.backend == "count" ? "count" : "user"},
        {"GRAPHMEND_VERIFY_CALLS", std::to_string(opt.calls)},
    };
    if (original && opt.eager_gap) env["GRAPHMEND_VERIFY_EAGER_GAP"] = "1";
    if (redirect) env["GRAPHMEND_VERIFY_REDIRECT"] = json::array({{redirect->first, redirect->second}}).dump();
    return env;
}

Evidence traced_lines(const Run& original, const fs::path& root) {
    std::set<std::string> roots, tests, reads, operators;
    if (!original.record.is_object()) return {};
    std::error_code ec;
    const fs::path base = fs::weakly_canonical(root, ec);
    const auto add = [&](std::set<std::string>& out, const json& file, const json& line) {
        if (!file.is_string() || !line.is_number_integer() || line.get<long long>() <= 0) return;
        const fs::path rel = fs::weakly_canonical(fs::path(file.get<std::string>()), ec).lexically_relative(base);
        if (rel.empty() || rel.native().starts_with("..") || rel.extension() != ".py") return;
        out.insert(fmt::format("{}:{}", rel.generic_string(), line.get<long long>()));
    };
    for (const json& c : original.record.value("callables", json::array())) {
        if (c.is_object()) add(roots, c.value("file", json()), c.value("line", json()));
    }
    for (const json& b : original.record.value("breaks", json::array())) {
        if (!b.is_object()) continue;
        add(roots, b.value("file", json()), b.value("line", json()));
        for (const json& frame : b.value("stack", json::array())) {
            if (frame.is_array() && frame.size() == 2) add(roots, frame[0], frame[1]);
        }
        // GB0170, "Data-dependent branching": Dynamo met a jump on a tensor at this line.
        if (b.value("gb", json()) == "GB0170") add(tests, b.value("file", json()), b.value("line", json()));
        // GB0124 (`.item()`, `int()`, `float()` on a tensor) and GB0109 (`.tolist()`): Dynamo
        // read a tensor's value into Python at this line.
        if (b.value("gb", json()) == "GB0124" || b.value("gb", json()) == "GB0109") {
            add(reads, b.value("file", json()), b.value("line", json()));
        }
        // GB0033, a data-dependent operator (`aten._local_scalar_dense`): a tensor index or
        // builtin min/max read as a Python number at this line.
        if (b.value("gb", json()) == "GB0033") add(operators, b.value("file", json()), b.value("line", json()));
    }
    return {{roots.begin(), roots.end()},
            {tests.begin(), tests.end()},
            {reads.begin(), reads.end()},
            {operators.begin(), operators.end()}};
}

Pair run_pair(const Options& opt, const Target& target, const fs::path& work, const std::vector<std::string>& held) {
    Pair pair;
    pair.target = target;
    const fs::path py = work / "py";
    write_python_files(py);
    pair.mirror = work / "fixed-copy";
    make_mirror(target, pair.mirror);
    // The original runs first: the frames Dynamo traced in it are entry points of the fix's
    // compiled scope (a library whose compile call is in the user's script, outside PATH).
    pair.original = run_once(opt, target, py, work / "original", true, std::nullopt);
    pair.evidence = traced_lines(pair.original, target.root);
    pair.fix_report =
        fix_mirror(opt, target, pair.mirror, work / "fix-report.json", held, pair.evidence, pair.fix_error);
    if (const ProcessResult& p = pair.original.process; !p.started || p.timed_out || p.interrupted || p.exit_code != 0) {
        // Nothing to compare against (verdict original-failed): the fixed run would only take
        // as long again, a whole --timeout when the original ran past it.
        pair.fixed.process.error = kNotRun;
        return pair;
    }
    pair.fixed = run_once(opt, target, py, work / "fixed", false, redirect_of(pair));
    compare(opt, py, pair);
    return pair;
}

Pair rerun_fixed(const Options& opt, const Pair& base, const fs::path& work, const std::vector<std::string>& held) {
    Pair pair;
    pair.target = base.target;
    pair.original = base.original;
    const fs::path py = work / "py";
    write_python_files(py);
    pair.mirror = work / "fixed-copy";
    make_mirror(base.target, pair.mirror);
    pair.evidence = base.evidence;
    pair.fix_report = fix_mirror(opt, base.target, pair.mirror, work / "fix-report.json", held, pair.evidence,
                                 pair.fix_error);
    pair.fixed = run_once(opt, base.target, py, work / "fixed", false, redirect_of(pair));
    compare(opt, py, pair);
    return pair;
}

}  // namespace graphmend::verify

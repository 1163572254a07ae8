// The parts of `graphmend verify` (include/graphmend/verify.hpp; docs/verify.md): the work
// folder and the fixed copy (workdir.cpp), the runs (runs.cpp), the join (join.cpp), the
// reports (report.cpp), batches (batch_verify.cpp).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graphmend/process.hpp"
#include "graphmend/verify.hpp"

namespace graphmend::verify {

namespace fs = std::filesystem;
using nlohmann::json;

// --- workdir.cpp ---------------------------------------------------------------------------

/// The work folder: --keep DIR (made, kept) or a new temporary folder, removed on destruction.
class WorkDir {
public:
    explicit WorkDir(const std::string& keep);
    ~WorkDir();
    WorkDir(const WorkDir&) = delete;
    WorkDir& operator=(const WorkDir&) = delete;
    [[nodiscard]] const fs::path& root() const { return root_; }

private:
    fs::path root_;
    bool keep_ = false;
};

/// What verify runs: how COMMAND (or a driver) is started, and which folder of the user's files
/// the fixed run replaces.
struct Target {
    enum class Mode { Command, Checkout, File } mode = Mode::Command;
    fs::path path;                  // PATH, absolute and canonical
    fs::path root;                  // the folder the fixed copy stands for: PATH, or a file's folder
    std::vector<std::string> argv;  // the command each run starts
    std::string label;              // the command as the report shows it
};

/// What PATH and COMMAND ask for (verify.cpp); nullopt with `error` set when neither fits.
std::optional<Target> target_of(const Options& opt, std::string& error);

/// The Python that runs the drivers and the compare step: --python, else $VIRTUAL_ENV/bin/python,
/// else `python3`.
std::string python_of(const Options& opt);

/// Writes the embedded Python files (src/verify/python/) into `dir`.
void write_python_files(const fs::path& dir);

/// Copies PATH's Python files into `mirror` (the same relative paths; a file PATH: that file
/// only); every other regular file becomes a symbolic link to the original, so that code that
/// reads a file next to its module still finds it. Hidden folders, __pycache__ and virtual
/// environments are left out. Returns the files copied (relative paths).
std::vector<std::string> make_mirror(const Target& target, const fs::path& mirror);

/// Whether `p` is a Hub-style checkout: a folder with a config.json.
bool is_checkout(const fs::path& p);

/// The checkouts under a folder that is none: folders with a config.json, not looked into
/// further, sorted by path. Empty when `p` holds none.
std::vector<fs::path> find_checkouts(const fs::path& p);

// --- runs.cpp ------------------------------------------------------------------------------

/// What one run of the command left.
struct Run {
    ProcessResult process;
    json record;          // the hook's record.json (null when it wrote none)
    std::string stdout_text;
    std::string stderr_text;
    fs::path outputs;     // outputs.pt
};

/// Both runs, the static report of the fixed copy and the comparison of outputs.
struct Pair {
    Target target;
    fs::path mirror;      // the fixed copy's root
    /// What Dynamo showed in the original run under the target, for the fix (traced_lines;
    /// FILE:LINE relative to the target's root).
    Evidence evidence;
    json fix_report;      // `graphmend fix --output-format json` over the fixed copy
    std::string fix_error;
    Run original;
    Run fixed;
    json compare;         // _graphmend_verify_compare's output (null when it could not run)
    std::string compare_error;
};

/// The `error` of a fixed run left out because the original run failed.
inline constexpr const char* kNotRun = "not run: the original run failed";

/// The environment of a run: PYTHONPATH with `py` first, the GRAPHMEND_VERIFY_* variables.
std::map<std::string, std::string> run_env(const Options& opt, const fs::path& py, const fs::path& out,
                                           bool original, const std::optional<std::pair<fs::path, fs::path>>& redirect);

/// Runs the command on the original, fixes the mirror in place with this binary (`fix
/// --output-format json`, the traced frames as --scope-root), runs the command on the fixed copy
/// and compares (the fixed run only when the original exited 0). `held` (fix
/// --verify): sites whose fixes are left out, as FILE:LINE:CODE relative to the mirror's root.
/// Never throws for a failing run: the failure is in the Pair.
Pair run_pair(const Options& opt, const Target& target, const fs::path& work, const std::vector<std::string>& held = {});

/// What Dynamo showed in `original` under `root` (files under it only, FILE:LINE relative to
/// it): `roots`, the frames it traced (its callables' `def` lines, its break sites and their
/// stacks' frames; the fix's --scope-root), and `data_tests`, the lines of its data-dependent
/// branches (GB0170; the fix's --data-test), and `data_reads`, the lines where it read a
/// tensor's value into Python (GB0124, GB0109; the fix's --data-read), and `data_operators`, the
/// lines of its data-dependent operators (GB0033; the fix's --data-operator).
Evidence traced_lines(const Run& original, const fs::path& root);

/// Runs only the fixed side again over a new mirror (fix --verify's trials), keeping `base`'s
/// original run.
Pair rerun_fixed(const Options& opt, const Pair& base, const fs::path& work, const std::vector<std::string>& held);

// --- join.cpp ------------------------------------------------------------------------------

/// The joined report (docs/verify.md, "Report schema"): callables, breaks with a status,
/// outputs, messages, totals, verdict.
json join(const Options& opt, const Pair& pair);

/// The exit code of a joined report (include/graphmend/verify.hpp, run_verify).
int exit_code_of(const json& report);

// --- report.cpp ----------------------------------------------------------------------------

/// The human report of one target.
std::string text_report(const json& report);
/// SARIF 2.1.0 of one or several joined reports.
json sarif_report(const std::vector<json>& reports);
/// Writes `report` as opt.output_format asks: text on stderr, json and sarif on stdout or
/// --output-file. Returns false when the file could not be written (message printed).
bool deliver(const Options& opt, const json& report, const std::vector<json>& sarif_of);

// --- batch_verify.cpp ----------------------------------------------------------------------

/// A folder of checkouts: one child `graphmend verify CHECKOUT --output-format json` each,
/// -j at once or through Ray.
int run_batch_verify(const Options& opt, const std::vector<fs::path>& checkouts);

}  // namespace graphmend::verify

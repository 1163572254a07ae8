// `graphmend verify` and `graphmend fix --verify` (src/verify/; docs/verify.md).
//
// verify runs the user's code twice, in fresh processes: once as it is, once with a fixed copy of
// PATH loaded in its place (the user's files are never written), each with graphmend's hook on
// PYTHONPATH (src/verify/python/: a sitecustomize that wraps torch.compile and records Dynamo's
// graph breaks, FX graphs per compiled callable, outputs, warnings and log records). It then
// joins what Dynamo reported with graphmend's static report: each break of the original run is
// removed, fixed-but-left, refused, unreported or outside PATH, and each break only the fixed
// run has is new. Outputs are compared (bit-equal, within the original's compiled-vs-eager gap,
// different), and stdout and the messages too.
//
// Paths are as given (UTF-8 bytes), lines 1-based, as Dynamo reports them. The graphmend binary
// never loads torch: everything torch-related runs in the user's Python (Options::python).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace graphmend::verify {

/// The flags of `verify` (and of `fix --verify`, which shares them).
struct Options {
    std::string path;                  // PATH: a file, a package, a checkout, a folder of checkouts
    std::vector<std::string> command;  // after `--`: the user's command; empty: a driver (docs/verify.md)
    std::string python;                // --python; empty: $VIRTUAL_ENV/bin/python, else python3 on PATH
    std::string backend = "count";     // --backend: count (FX graphs run as traced), or the user's (inductor, ...)
    std::string device;                // --device for the drivers: cpu (default), cuda
    bool tiny = false;                 // --tiny: the checkout driver shrinks the config
    unsigned calls = 3;                // --calls: saved outputs per compiled callable
    unsigned repeat = 1;               // --repeat: calls a driver makes (steady-state time needs 2 or more)
    double timeout_s = 0;              // --timeout: seconds per run of COMMAND; 0: none
    unsigned jobs = 1;                 // -j: checkouts verified at once (a folder of checkouts)
    std::string executor = "local";    // --executor local | ray
    std::string ray_address;           // --ray-address: an existing cluster; empty: a local instance
    std::string output_format = "text";  // text (stderr) | json | sarif (stdout or --output-file)
    std::string output_file;
    std::string keep;                  // --keep DIR: the work folder, kept (default: a temporary one, removed)
    bool unsafe_fixes = false;         // the fixed copy gets unsafe fixes too
    bool eager_gap = true;             // the original run measures its compiled-vs-eager gap
    bool quiet = false;
    std::string self;                  // this binary's path, for the child runs (main sets it)
    /// Configuration flags for the `fix` of the fixed copy (--config, --select, ...), as given.
    std::vector<std::string> fix_flags;
};

/// `graphmend verify`: one target (PATH with a COMMAND, a checkout, a file) or a folder of
/// checkouts (a batch). Prints the report (text on stderr; json, sarif on stdout or
/// --output-file). Returns 0 when every fix removed its break and behaviour is kept, 1 for a
/// finding (a break a fix left, a break the fix added, outputs or messages that differ, a run
/// that failed only after the fix), 2 for an error (PATH missing, no Python, the original run
/// failing or timing out, an unreadable record).
int run_verify(const Options& opt);

/// What Dynamo showed in the original run of `fix --verify`, as PATH:LINE of the user's files:
/// the frames it traced (`fix --scope-root`: entry points of the compiled scope) and the lines
/// of its data-dependent branches (GB0170, `fix --data-test`).
struct Evidence {
    std::vector<std::string> roots;
    std::vector<std::string> data_tests;
    /// The lines where it read a tensor's value into Python (GB0124, GB0109; `fix --data-read`).
    std::vector<std::string> data_reads;
    /// The lines of its data-dependent operators (GB0033; `fix --data-operator`).
    std::vector<std::string> data_operators;
};

/// `graphmend fix --verify PATH -- COMMAND`: verifies every fix of PATH as run_verify does, then
/// decides per fixed site: kept where the break it covers is gone in the fixed run and outputs
/// and messages are kept (with the other kept fixes); reverted, with the reason printed, where
/// the break stayed, a break appeared inside it, the command made no break there, or behaviour
/// changed. `apply` then writes the user's files (a `fix` session) with the reverted sites held
/// back, given as PATH:LINE:CODE, and what Dynamo showed in the original run (Evidence); its
/// exit code is returned. Nothing is written when the original run fails (exit 2).
int run_fix_verify(const Options& opt,
                   const std::function<int(const std::vector<std::string>& held, const Evidence& evidence)>& apply);

}  // namespace graphmend::verify

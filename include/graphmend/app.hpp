// graphmend's command line (src/app/command_line.cpp) and what its commands do (the session
// of a `fix` or `check` run: src/app/session.cpp, inputs.cpp, delivery.cpp), as functions a
// test calls without a subprocess; src/app/main.cpp only joins the two.
//
// Human reports go to stderr, diffs and `-` output to stdout, machine reports (--output-format
// json|sarif|github) to stdout or --output-file. Exit codes (output::exit_code): 0 nothing to
// report; 1 a finding (check: a fixable site; a syntax error); 2 a usage, read, write or
// internal error, or a malformed configuration.
#pragma once

#include <iosfwd>
#include <string>
#include <variant>
#include <vector>

#include "graphmend/config_cli.hpp"
#include "graphmend/verify.hpp"

namespace graphmend::app {

/// The flags of `fix` and `check` (`check` leaves the fix-only ones as they are).
struct Options {
    std::vector<std::string> paths;
    std::string output;
    std::string report_json;
    std::string output_format = "text";
    std::string output_file;
    bool diff = false;
    bool unsafe_fixes = false;
    bool quiet = false;
    bool statistics = false;
    bool show_fixes = false;
    bool exit_zero = false;
    bool exit_non_zero_on_fix = false;
    bool write_through_links = false;
    unsigned threads = 0;  // 0: one per hardware thread
    config::CliFlags config;
    std::string stdin_filename;    // --stdin-filename: the path stdin's text stands for
    std::vector<std::string> held_sites;  // --hold-site PATH:LINE:CODE (fix --verify): fixes held back
    std::vector<std::string> scope_roots;  // --scope-root PATH:LINE (verify): functions Dynamo traced
    std::vector<std::string> data_reads;   // --data-read PATH:LINE (verify): Dynamo's scalar reads (GB0124, GB0109)
    std::vector<std::string> data_operators;  // --data-operator PATH:LINE (verify): Dynamo's GB0033 breaks
    std::vector<std::string> data_tests;   // --data-test PATH:LINE (verify): Dynamo's data-dependent branches
    std::string runtime = "auto";  // auto: the module for files found in a folder, inline otherwise

    [[nodiscard]] bool from_stdin() const { return paths.size() == 1 && paths[0] == "-"; }
};

enum class Command { Fix, Check, Rule, Verify };

/// What a command line asks for.
struct Invocation {
    Command command = Command::Check;
    Options options;         // fix, check
    std::string rule;        // rule: the code or name of the rule whose page is printed
    bool all_rules = false;  // rule --all
    /// verify, and fix --verify: its flags, PATH and the command after `--`.
    verify::Options verify;
    bool fix_verify = false;  // fix --verify
};

/// Parses a command line (argv[0] is the program's name, shown by --help). Returns what it asks
/// for, or the exit code of a command line that ends the run itself: --help and --version
/// (printed to stdout, 0), and a usage error CLI11 finds (printed to stderr, 2).
std::variant<Invocation, int> parse_command_line(int argc, char** argv);

/// A `fix` (fix true) or `check` run over `opt.paths`, stdin's text read from `in`: finds and
/// reads the inputs, fixes them a group at a time, delivers each group's outputs (files
/// written, diffs and `-` output on stdout) and then the reports. Returns the exit code
/// (output::exit_code). Throws config::ConfigError for a malformed configuration; a usage
/// error is run_command's to find.
int run_session(const Options& opt, bool fix, std::istream& in);

/// What an invocation does: a rule's page, or a usage error (printed, 2) or a session, whose
/// malformed configuration or internal error is printed to stderr with exit code 2.
int run_command(const Invocation& invocation, std::istream& in);

}  // namespace graphmend::app

// The command line (CLI11): its commands and flags, read into an Invocation. See
// include/graphmend/app.hpp, and config_cli.hpp for the configuration's flags.
#include <algorithm>
#include <iterator>
#include <string_view>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "graphmend/app.hpp"
#include "graphmend/output.hpp"
#include "graphmend/rule.hpp"

namespace graphmend::app {

namespace {

constexpr const char* kRuntimeHelp =
    "where rewritten files get graphmend's runtime: module (an import of _graphmend_runtime.py at the project's "
    "root), inline (appended to each file), auto (default: module for the files of a folder given, else inline)";

constexpr unsigned kMaxThreads = 1024;
constexpr const char* kThreadsHelp =
    "files parsed and fixed in parallel (default 0: one thread per CPU); the output is the same for every count";

// The options `fix` and `check` share.
void add_common(CLI::App* cmd, Options& opt) {
    static const std::vector<std::string> formats(std::begin(output::kFormatNames), std::end(output::kFormatNames));
    cmd->add_option("paths", opt.paths, "files or folders (*.py, recursively); - reads stdin")->required();
    cmd->add_option("--stdin-filename", opt.stdin_filename,
                     "the path of the file read from stdin (-): its configuration, project and name in reports");
    cmd->add_option("--output-format", opt.output_format,
                    "text (default), concise, grouped (stderr); json, sarif, github (stdout or --output-file)")
        ->envname("GRAPHMEND_OUTPUT_FORMAT")
        ->check(CLI::IsMember(formats));
    cmd->add_option("--output-file", opt.output_file, "write the report here instead of stderr/stdout");
    cmd->add_option("--report-json", opt.report_json, "also write the JSON report to this file (- for stdout)");
    cmd->add_flag("--statistics", opt.statistics, "print the count of sites per code instead of each site");
    cmd->add_flag("--show-fixes", opt.show_fixes, "list the fixes per file after the report");
    cmd->add_flag("--exit-zero", opt.exit_zero, "exit 0 even when sites or syntax errors are found");
    cmd->add_flag("-q,--quiet", opt.quiet, "print only what fails the run: fixable sites (check, --diff) and errors");
    // The last --runtime wins (ruff's options override themselves): a pre-commit hook's `args`
    // come after its entry's `--runtime module` (.pre-commit-hooks.yaml).
    cmd->add_option("--runtime", opt.runtime, kRuntimeHelp)
        ->check(CLI::IsMember({"auto", "inline", "module"}))
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

void add_verify_flags(CLI::App* cmd, verify::Options& v);

// --scope-root PATH:LINE, of `fix` and `check`: the function whose body holds that line runs
// under torch.compile. `graphmend verify` passes the frames Dynamo traced in the original run,
// so that a library whose compile call lies outside PATH (the user's script) is analysed.
// --data-test PATH:LINE: Dynamo reported a data-dependent branch there (GB0170), so a test on
// that line reads tensor data where the values analysis cannot tell (an unannotated parameter).
// --data-read PATH:LINE: Dynamo reported reading a tensor's value into Python there (`.item()`,
// `int()`, `.tolist()`: GB0124, GB0109), so such a call on that line reads a tensor.
// --data-operator PATH:LINE: Dynamo reported a data-dependent operator there (GB0033: a tensor
// index or builtin min/max read as a Python number).
void add_scope_root(CLI::App* cmd, Options& opt) {
    cmd->add_option("--scope-root", opt.scope_roots,
                    "PATH:LINE: the function holding this line runs under torch.compile (verify passes the "
                    "frames Dynamo traced)")
        ->group("");
    cmd->add_option("--data-test", opt.data_tests,
                    "PATH:LINE: a test on this line reads tensor data (verify passes Dynamo's data-dependent "
                    "branches, GB0170)")
        ->group("");
    cmd->add_option("--data-read", opt.data_reads,
                    "PATH:LINE: a scalar read on this line (.item(), int(), .tolist()) reads a tensor (verify "
                    "passes Dynamo's GB0124 and GB0109 breaks)")
        ->group("");
    cmd->add_option("--data-operator", opt.data_operators,
                    "PATH:LINE: a tensor index or builtin min/max on this line reads a tensor (verify passes "
                    "Dynamo's GB0033 breaks)")
        ->group("");
}

// `graphmend fix`.
CLI::App* add_fix(CLI::App& app, Invocation& invocation) {
    Options& opt = invocation.options;
    auto* fix = app.add_subcommand("fix", "rewrite the sites graphmend can fix");
    add_common(fix, opt);
    fix->add_option("-o,--output", opt.output, "write the fixed file here (one input file only)");
    fix->add_flag("--diff", opt.diff, "print a unified diff and write nothing");
    auto* fix_unsafe = fix->add_flag("--unsafe-fixes", opt.unsafe_fixes, "also apply fixes marked unsafe");
    fix->add_flag("--exit-non-zero-on-fix", opt.exit_non_zero_on_fix, "exit 1 when a file was rewritten");
    fix->add_flag("--write-through-links", opt.write_through_links,
                  "rewrite the file a symbolic link points to, and hard-linked files in place (default: such files "
                  "are not rewritten, with an error)");
    fix->add_option("-j,--threads", opt.threads, kThreadsHelp)->check(CLI::Range(0u, kMaxThreads));
    config::add_cli_flags(*fix, opt.config, fix_unsafe);
    fix->add_flag("--verify", invocation.fix_verify,
                  "run the command after `--` before and after the fix; write only the fixes whose graph break is "
                  "gone and whose outputs and messages are kept (see `graphmend verify`)");
    add_verify_flags(fix, invocation.verify);
    fix->add_option("--hold-site", opt.held_sites, "PATH:LINE:CODE: leave this site's fix out (fix --verify uses it)")
        ->group("");
    add_scope_root(fix, opt);
    return fix;
}

// The flags `verify` and `fix --verify` share.
void add_verify_flags(CLI::App* cmd, verify::Options& v) {
    cmd->add_option("--python", v.python, "the Python of the drivers (default: $VIRTUAL_ENV/bin/python, else python3)");
    cmd->add_option("--backend", v.backend,
                    "count (default): each FX graph runs as traced; user (or inductor): the backend the code names")
        ->check(CLI::IsMember({"count", "user", "inductor"}));
    cmd->add_option("--calls", v.calls, "calls of each compiled callable whose outputs are compared (default 3)")
        ->check(CLI::Range(0u, 1000u));
    cmd->add_option("--timeout", v.timeout_s, "seconds each run may take (default: no limit; 600 for each run of a folder of checkouts)")->check(CLI::NonNegativeNumber);
    cmd->add_option("--keep", v.keep, "keep the work folder here (the fixed copy, records, outputs)");
    cmd->add_flag("!--no-eager-gap", v.eager_gap,
                  "do not run the original's calls again eagerly to measure its compiled-vs-eager gap");
}

// `graphmend verify`.
CLI::App* add_verify(CLI::App& app, Invocation& invocation) {
    verify::Options& v = invocation.verify;
    auto* cmd = app.add_subcommand(
        "verify", "run the code before and after the fix and list every graph break Dynamo makes (PATH -- COMMAND...)");
    cmd->add_option("path", v.path, "a file, package, checkout or folder of checkouts; the command follows `--`")
        ->required();
    cmd->add_option("--device", v.device, "the drivers' device: cpu (default), cuda");
    cmd->add_flag("--tiny", v.tiny, "a checkout's model is shrunk (fewer, smaller layers), as the sweep does");
    cmd->add_option("--repeat", v.repeat,
                    "calls of the model a checkout or file driver makes (default 1; 2 or more give a steady-state time)")
        ->check(CLI::Range(1u, 1000u));
    cmd->add_option("-j,--jobs", v.jobs, "checkouts verified at once (a folder of checkouts)")->check(CLI::Range(1u, 256u));
    cmd->add_option("--executor", v.executor, "local (default) or ray: where a folder of checkouts runs")
        ->check(CLI::IsMember({"local", "ray"}));
    cmd->add_option("--ray-address", v.ray_address, "an existing Ray cluster (default: a local instance)");
    cmd->add_option("--output-format", v.output_format, "text (default, stderr), json, sarif (stdout or --output-file)")
        ->check(CLI::IsMember({"text", "json", "sarif"}));
    cmd->add_option("--output-file", v.output_file, "write the report here");
    auto* unsafe = cmd->add_flag("--unsafe-fixes", v.unsafe_fixes, "the fixed copy gets unsafe fixes too");
    config::add_cli_flags(*cmd, invocation.options.config, unsafe);
    cmd->add_flag("-q,--quiet", v.quiet, "print the report only when a fix failed or behaviour changed");
    add_verify_flags(cmd, v);
    return cmd;
}

// `graphmend check`.
CLI::App* add_check(CLI::App& app, Options& opt) {
    auto* check = app.add_subcommand("check", "report the sites, write nothing");
    add_common(check, opt);
    auto* check_unsafe = check->add_flag("--unsafe-fixes", opt.unsafe_fixes, "count unsafe fixes as applied");
    check->add_flag("--write-through-links", opt.write_through_links,
                    "count symbolic links and hard-linked files as `fix --write-through-links` rewrites them "
                    "(default: as `fix` leaves them, not rewritten)");
    check->add_option("-j,--threads", opt.threads, kThreadsHelp)->check(CLI::Range(0u, kMaxThreads));
    config::add_cli_flags(*check, opt.config, check_unsafe);
    add_scope_root(check, opt);
    return check;
}

// `graphmend rule CODE|NAME` and `graphmend rule --all`: print rule pages, as `ruff rule`. The
// help's example is the first registered rule.
CLI::App* add_rule(CLI::App& app, Invocation& invocation) {
    const rules::RuleInfo& first = rules::registry().front()->info();
    auto* rule = app.add_subcommand(
        "rule", fmt::format("print a rule's page, by code ({}) or name ({})", first.code, first.name));
    auto* rule_arg = rule->add_option("rule", invocation.rule, "the rule's code or name");
    rule->add_flag("--all", invocation.all_rules, "print every rule's page")->excludes(rule_arg);
    rule->require_option(1);
    return rule;
}

// The edit distance between two words, counting a swap of neighbours as one edit (the optimal
// string alignment distance): `chekc` is one edit from `check`.
std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
            }
        }
    }
    return d[a.size()][b.size()];
}

// The error for a first argument that names no command (CLI11 says only "A subcommand is
// required"), as clap's for ruff: the word, and the closest command when it is close (one edit
// for a name of up to 4 letters, two for a longer one). Empty when the first argument that is
// not an option is a command, or there is none.
std::string unknown_command(const CLI::App& app, int argc, char** argv) {
    const auto commands = app.get_subcommands([](const CLI::App*) { return true; });
    for (int i = 1; i < argc; ++i) {
        const std::string_view word = argv[i];
        if (word.starts_with('-')) continue;  // graphmend's own options (--help, --version) take no value
        std::vector<std::string> names;
        const CLI::App* closest = nullptr;
        std::size_t best = 0;
        for (const CLI::App* command : commands) {
            if (command->check_name(std::string(word))) return {};
            names.push_back("`" + command->get_name() + "`");
            const std::size_t distance = edit_distance(word, command->get_name());
            if (distance <= (command->get_name().size() <= 4 ? 1u : 2u) && (!closest || distance < best)) {
                closest = command;
                best = distance;
            }
        }
        if (closest) return fmt::format("unknown command `{}` (did you mean `{}`?)", word, closest->get_name());
        return fmt::format("unknown command `{}`; the commands are {}", word, fmt::join(names, ", "));
    }
    return {};
}

// A `--` or verify flag where it means nothing, or `fix --verify` without what it needs.
std::string verify_usage(Invocation& invocation, bool dashes) {
    const bool fix = invocation.command == Command::Fix;
    if (invocation.command == Command::Verify) return {};
    if (!fix || !invocation.fix_verify) {
        if (dashes) return "a command after `--` is for `graphmend verify` and `graphmend fix --verify`";
        return {};
    }
    const Options& opt = invocation.options;
    if (invocation.verify.command.empty()) return "fix --verify needs the command that runs the code after `--`";
    if (opt.paths.size() != 1 || opt.from_stdin()) return "fix --verify takes one PATH (a file, package or checkout)";
    if (opt.diff || !opt.output.empty()) return "fix --verify writes the files in place: no --diff or -o";
    invocation.verify.path = opt.paths[0];
    invocation.verify.unsafe_fixes = opt.unsafe_fixes;
    invocation.verify.quiet = opt.quiet;
    return {};
}

}  // namespace

std::variant<Invocation, int> parse_command_line(int argc, char** argv) {
    CLI::App app{"graphmend: removes TorchDynamo graph breaks from PyTorch model sources"};
    app.set_version_flag("--version", fmt::format("graphmend {}", output::kVersion));  // CMakeLists.txt
    app.require_subcommand(1);
    Invocation invocation;
    auto* fix = add_fix(app, invocation);
    add_check(app, invocation.options);
    auto* rule = add_rule(app, invocation);
    auto* verify = add_verify(app, invocation);
    // What follows `--` is the command verify runs, not graphmend's.
    int own = argc;
    for (int i = 1; i < argc; ++i) {
        if (std::string_view(argv[i]) == "--") {
            own = i;
            break;
        }
    }
    for (int i = own + 1; i < argc; ++i) invocation.verify.command.emplace_back(argv[i]);
    try {
        app.parse(own, argv);
    } catch (const CLI::Success& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        // A word where the command goes: named, with the closest command (CLI11 would say only
        // that a subcommand is required).
        if (const std::string error = app.get_subcommands().empty() ? unknown_command(app, argc, argv) : "";
            !error.empty()) {
            fmt::print(stderr, "error: {}\nRun with --help for more information.\n", error);
            return 2;
        }
        app.exit(e);
        return 2;
    }
    invocation.command = rule->parsed()     ? Command::Rule
                         : verify->parsed() ? Command::Verify
                         : fix->parsed()    ? Command::Fix
                                            : Command::Check;
    if (const std::string error = verify_usage(invocation, own < argc); !error.empty()) {
        fmt::print(stderr, "error: {}\nRun with --help for more information.\n", error);
        return 2;
    }
    return invocation;
}

}  // namespace graphmend::app

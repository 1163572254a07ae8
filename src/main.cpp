// graphmend command line.
//
//   graphmend fix IN.py -o OUT.py        write a fixed copy
//   graphmend fix PATH...                 rewrite files and folders (*.py) in place, atomically
//   graphmend fix --diff PATH...          print a unified diff, write nothing
//   graphmend check PATH...               report sites, write nothing
//   graphmend rule GM101 | NAME | --all   print rule pages (docs/rules/), see rule_pages.hpp
//   --threads N (-j N)                    parse and fix N files at a time; 0, the default, is one
//                                         thread per CPU. Output is the same for every N.
//   --config, --isolated, --select, ...   configuration (ruff's flags; see config_cli.hpp)
//
// Reports go to stderr, diffs and `-` output to stdout. Exit codes: 0 every file was
// processed; 1 a file could not be processed (the others are still done); 2 usage error or a
// malformed configuration.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "graphmend/config_cli.hpp"
#include "graphmend/fixer.hpp"
#include "graphmend/output.hpp"
#include "graphmend/parallel.hpp"
#include "graphmend/rule_pages.hpp"

namespace {

struct Options {
    std::vector<std::string> paths;
    std::string output;
    std::string report_json;
    bool diff = false;
    bool unsafe_fixes = false;
    bool quiet = false;
    bool write_through_links = false;
    unsigned threads = 0;  // 0: one per hardware thread
    graphmend::config::CliFlags config;
};

graphmend::output::LinkPolicy links(const Options& opt) {
    return opt.write_through_links ? graphmend::output::LinkPolicy::WriteThrough : graphmend::output::LinkPolicy::Refuse;
}

void warn(const Options& opt, const std::vector<std::string>& warnings) {
    if (opt.quiet) return;
    for (const auto& w : warnings) fmt::print(stderr, "warning: {}\n", w);
}

int run(const Options& opt, bool write) {
    using namespace graphmend;
    std::vector<InputFile> inputs;
    bool failed = false;
    const bool from_stdin = opt.paths.size() == 1 && opt.paths[0] == "-";
    config::Resolver resolver(config::overrides(opt.config, opt.unsafe_fixes));  // throws ConfigError
    if (from_stdin) {
        inputs.push_back({"-", std::string(std::istreambuf_iterator<char>(std::cin), {}), resolver.for_file("-")});
    } else {
        config::Discovered found = config::discover(opt.paths, resolver);
        for (const auto& e : found.errors) fmt::print(stderr, "error: {}\n", e);
        failed = !found.errors.empty();
        warn(opt, found.warnings);
        std::vector<std::string> files = std::move(found.files);
        // Every configuration is read (and a malformed one stops the run) before any file.
        std::vector<std::shared_ptr<const FileSettings>> settings;
        for (const auto& f : files) settings.push_back(resolver.for_file(f));
        // Read in parallel; errors are reported in file order, as with one thread.
        std::vector<std::string> texts(files.size());
        std::vector<std::string> read_errors(files.size());
        graphmend::parallel_for(files.size(), opt.threads, [&](std::size_t i) {
            try {
                texts[i] = output::read_file(files[i]);
            } catch (const std::exception& e) {
                read_errors[i] = e.what();
            }
        });
        for (std::size_t i = 0; i < files.size(); ++i) {
            if (!read_errors[i].empty()) {
                fmt::print(stderr, "error: {}\n", read_errors[i]);
                failed = true;
                continue;
            }
            inputs.push_back({std::move(files[i]), std::move(texts[i]), std::move(settings[i])});
        }
    }
    warn(opt, resolver.take_warnings());
    const auto outcomes = fix_files(std::move(inputs), FixOptions{opt.unsafe_fixes, opt.threads});
    std::size_t changed = 0;
    for (const auto& o : outcomes) {
        warn(opt, o.warnings);
        if (!opt.quiet || o.error) fmt::print(stderr, "{}", output::text_report(o));
        if (o.error) failed = true;
        if (!o.changed()) {
            if (write && !opt.output.empty() && !o.error) {
                // -o always writes the (unchanged) result.
                try {
                    output::write_atomically(opt.output, o.fixed, links(opt));
                } catch (const std::exception& e) {
                    fmt::print(stderr, "error: {}\n", e.what());
                    failed = true;
                }
            } else if (write && from_stdin && !opt.diff) {
                fmt::print("{}", o.fixed);  // `fix -` echoes an unchanged file; `fix --diff -` prints no diff
            }
            continue;
        }
        ++changed;
        if (opt.diff) {
            fmt::print("{}", output::unified_diff(o.path, o.original, o.fixed));
            continue;
        }
        if (!write) continue;
        try {
            if (from_stdin && opt.output.empty()) {
                fmt::print("{}", o.fixed);
            } else {
                output::write_atomically(opt.output.empty() ? o.path : opt.output, o.fixed, links(opt));
            }
        } catch (const std::exception& e) {
            fmt::print(stderr, "error: {}\n", e.what());
            failed = true;
        }
    }
    if (outcomes.size() > 1 && !opt.quiet) {
        fmt::print(stderr, "{}", output::project_report(outcomes));
        fmt::print(stderr, "{} file{} checked, {} {}\n", outcomes.size(), outcomes.size() == 1 ? "" : "s", changed,
                   write && !opt.diff ? "rewritten" : "would be rewritten");
    }
    if (!opt.report_json.empty()) {
        try {
            output::write_atomically(opt.report_json, output::json_report(outcomes).dump(2) + "\n",
                                     output::LinkPolicy::WriteThrough);
        } catch (const std::exception& e) {
            fmt::print(stderr, "error: {}\n", e.what());
            failed = true;
        }
    }
    return failed ? 1 : 0;
}

constexpr unsigned kMaxThreads = 1024;
constexpr const char* kThreadsHelp =
    "files parsed and fixed in parallel (default 0: one thread per CPU); the output is the same for every count";

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"graphmend: removes TorchDynamo graph breaks from PyTorch model sources"};
    app.set_version_flag("--version", "graphmend " GRAPHMEND_VERSION);  // CMakeLists.txt project(VERSION)
    app.require_subcommand(1);
    Options opt;

    auto* fix = app.add_subcommand("fix", "rewrite the sites graphmend can fix");
    fix->add_option("paths", opt.paths, "files or folders (*.py, recursively); - reads stdin")->required();
    fix->add_option("-o,--output", opt.output, "write the fixed file here (one input file only)");
    fix->add_flag("--diff", opt.diff, "print a unified diff and write nothing");
    auto* fix_unsafe = fix->add_flag("--unsafe-fixes", opt.unsafe_fixes, "also apply fixes marked unsafe");
    fix->add_option("--report-json", opt.report_json, "write the report as JSON to this file");
    fix->add_flag("-q,--quiet", opt.quiet, "report only errors");
    fix->add_flag("--write-through-links", opt.write_through_links,
                  "rewrite the file a symbolic link points to, and hard-linked files in place (default: such files "
                  "are not rewritten, with an error)");
    fix->add_option("-j,--threads", opt.threads, kThreadsHelp)->check(CLI::Range(0u, kMaxThreads));
    graphmend::config::add_cli_flags(*fix, opt.config, fix_unsafe);

    auto* check = app.add_subcommand("check", "report the sites, write nothing");
    check->add_option("paths", opt.paths, "files or folders (*.py, recursively); - reads stdin")->required();
    auto* check_unsafe = check->add_flag("--unsafe-fixes", opt.unsafe_fixes, "count unsafe fixes as applied");
    check->add_option("--report-json", opt.report_json, "write the report as JSON to this file");
    check->add_flag("-q,--quiet", opt.quiet, "report only errors");
    check->add_option("-j,--threads", opt.threads, kThreadsHelp)->check(CLI::Range(0u, kMaxThreads));
    graphmend::config::add_cli_flags(*check, opt.config, check_unsafe);

    // `graphmend rule CODE|NAME` and `graphmend rule --all`: print rule pages, as `ruff rule`.
    std::string rule_code;
    bool rule_all = false;
    auto* rule = app.add_subcommand("rule", "print a rule's page, by code (GM101) or name (deferred-side-effect)");
    auto* rule_arg = rule->add_option("rule", rule_code, "the rule's code or name");
    rule->add_flag("--all", rule_all, "print every rule's page")->excludes(rule_arg);
    rule->require_option(1);

    try {
        app.parse(argc, argv);
    } catch (const CLI::Success& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return 2;
    }
    if (rule->parsed()) return graphmend::output::print_rule_pages(rule_code, rule_all);
    if (!opt.output.empty() && opt.paths.size() != 1) {
        fmt::print(stderr, "error: -o/--output takes exactly one input file\n");
        return 2;
    }
    if (!opt.output.empty() && opt.diff) {
        fmt::print(stderr, "error: --diff writes nothing; it cannot be combined with -o\n");
        return 2;
    }
    try {
        return run(opt, fix->parsed());
    } catch (const graphmend::config::ConfigError& e) {
        fmt::print(stderr, "error: {}\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        fmt::print(stderr, "internal error: {}\n", e.what());
        return 2;
    }
}

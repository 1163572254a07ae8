// graphmend command line.
//
//   graphmend fix IN.py -o OUT.py        write a fixed copy
//   graphmend fix PATH...                 rewrite files and folders (*.py) in place, atomically
//   graphmend fix --diff PATH...          print a unified diff, write nothing
//   graphmend check PATH...               report sites, write nothing
//   --threads N (-j N)                    parse and fix N files at a time; 0, the default, is one
//                                         thread per CPU. Output is the same for every N.
//   --runtime auto|inline|module          where rewritten files get the runtime helpers (README "The runtime")
//
// Reports go to stderr, diffs and `-` output to stdout. Exit codes: 0 every file was
// processed; 1 a file could not be processed (the others are still done); 2 usage error.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "graphmend/fixer.hpp"
#include "graphmend/output.hpp"
#include "graphmend/parallel.hpp"
#include "graphmend/runtime_module.hpp"

namespace {

struct Options {
    std::vector<std::string> paths;
    std::string output;
    std::string report_json;
    bool diff = false;
    bool unsafe_fixes = false;
    bool quiet = false;
    unsigned threads = 0;  // 0: one per hardware thread
    std::string runtime = "auto";  // auto: the module for files found in a folder, inline otherwise
};

// The runtime form of a file: `auto` is the module for the files of a folder given on the
// command line, and the inline blocks for a file given by itself.
graphmend::RuntimeForm runtime_form(const Options& opt, bool from_folder) {
    if (opt.runtime == "auto") return from_folder ? graphmend::RuntimeForm::Module : graphmend::RuntimeForm::Inline;
    return opt.runtime == "module" ? graphmend::RuntimeForm::Module : graphmend::RuntimeForm::Inline;
}

// The runtime modules the rewritten files import: a diff with --diff, a line in the report.
void show_runtime_modules(const std::vector<graphmend::runtime_module::Planned>& modules, const Options& opt,
                          bool write) {
    using namespace graphmend;
    for (const auto& m : modules) {
        if (!m.changed()) continue;
        if (opt.diff) {
            fmt::print("{}", m.existing ? output::unified_diff(m.path, *m.existing, runtime_module::text())
                                        : output::new_file_diff(m.path, runtime_module::text()));
        }
        if (opt.quiet) continue;
        fmt::print(stderr, "{}: runtime module {} ({} rewritten file{} import{} it)\n", m.path,
                   write && !opt.diff ? "written" : "would be written", m.importers, m.importers == 1 ? "" : "s",
                   m.importers == 1 ? "s" : "");
    }
}

int run(const Options& opt, bool write) {
    using namespace graphmend;
    std::vector<InputFile> inputs;
    bool failed = false;
    const bool from_stdin = opt.paths.size() == 1 && opt.paths[0] == "-";
    if (from_stdin) {
        inputs.push_back({"-", std::string(std::istreambuf_iterator<char>(std::cin), {})});
    } else {
        std::vector<std::string> files;
        std::vector<RuntimeForm> forms;
        for (const auto& p : opt.paths) {
            try {
                std::error_code ec;
                const RuntimeForm form = runtime_form(opt, std::filesystem::is_directory(p, ec));
                for (auto& f : output::collect_python_files({p})) {
                    files.push_back(std::move(f));
                    forms.push_back(form);
                }
            } catch (const std::exception& e) {
                fmt::print(stderr, "error: {}\n", e.what());
                failed = true;
            }
        }
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
            inputs.push_back({std::move(files[i]), std::move(texts[i]), forms[i]});
        }
    }
    auto outcomes = fix_files(std::move(inputs), FixOptions{opt.unsafe_fixes, opt.threads});
    // Before the files: a project whose module cannot be written is not written. Not for -o and stdin,
    // whose output is not in place.
    std::vector<runtime_module::Planned> modules;
    if (!from_stdin && opt.output.empty()) modules = runtime_module::plan(outcomes);
    if (write && !opt.diff) runtime_module::write(modules, outcomes);
    std::size_t changed = 0;
    for (const auto& o : outcomes) {
        if (!opt.quiet || o.error) fmt::print(stderr, "{}", output::text_report(o));
        if (o.error) failed = true;
        if (!o.changed()) {
            if (write && !opt.output.empty() && !o.error) {
                // -o always writes the (unchanged) result.
                try {
                    output::write_atomically(opt.output, o.fixed);
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
                output::write_atomically(opt.output.empty() ? o.path : opt.output, o.fixed);
            }
        } catch (const std::exception& e) {
            fmt::print(stderr, "error: {}\n", e.what());
            failed = true;
        }
    }
    show_runtime_modules(modules, opt, write);
    if (outcomes.size() > 1 && !opt.quiet) {
        fmt::print(stderr, "{}", output::project_report(outcomes));
        fmt::print(stderr, "{} file{} checked, {} {}\n", outcomes.size(), outcomes.size() == 1 ? "" : "s", changed,
                   write && !opt.diff ? "rewritten" : "would be rewritten");
    }
    if (!opt.report_json.empty()) {
        try {
            output::write_atomically(opt.report_json, output::json_report(outcomes).dump(2) + "\n");
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
constexpr const char* kRuntimeHelp =
    "where rewritten files get graphmend's runtime: module (an import of _graphmend_runtime.py at the project's "
    "root), inline (appended to each file), auto (default: module for the files of a folder given, else inline)";

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"graphmend: removes TorchDynamo graph breaks from PyTorch model sources"};
    app.set_version_flag("--version", "graphmend 0.1.0");
    app.require_subcommand(1);
    Options opt;

    auto* fix = app.add_subcommand("fix", "rewrite the sites graphmend can fix");
    fix->add_option("paths", opt.paths, "files or folders (*.py, recursively); - reads stdin")->required();
    fix->add_option("-o,--output", opt.output, "write the fixed file here (one input file only)");
    fix->add_flag("--diff", opt.diff, "print a unified diff and write nothing");
    fix->add_flag("--unsafe-fixes", opt.unsafe_fixes, "also apply fixes marked unsafe");
    fix->add_option("--report-json", opt.report_json, "write the report as JSON to this file");
    fix->add_flag("-q,--quiet", opt.quiet, "report only errors");
    fix->add_option("-j,--threads", opt.threads, kThreadsHelp)->check(CLI::Range(0u, kMaxThreads));
    fix->add_option("--runtime", opt.runtime, kRuntimeHelp)->check(CLI::IsMember({"auto", "inline", "module"}));

    auto* check = app.add_subcommand("check", "report the sites, write nothing");
    check->add_option("paths", opt.paths, "files or folders (*.py, recursively); - reads stdin")->required();
    check->add_flag("--unsafe-fixes", opt.unsafe_fixes, "count unsafe fixes as applied");
    check->add_option("--report-json", opt.report_json, "write the report as JSON to this file");
    check->add_flag("-q,--quiet", opt.quiet, "report only errors");
    check->add_option("-j,--threads", opt.threads, kThreadsHelp)->check(CLI::Range(0u, kMaxThreads));
    check->add_option("--runtime", opt.runtime, kRuntimeHelp)->check(CLI::IsMember({"auto", "inline", "module"}));

    try {
        app.parse(argc, argv);
    } catch (const CLI::Success& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return 2;
    }
    if (!opt.output.empty() && opt.paths.size() != 1) {
        fmt::print(stderr, "error: -o/--output takes exactly one input file\n");
        return 2;
    }
    if (opt.runtime == "module" && (!opt.output.empty() || opt.paths == std::vector<std::string>{"-"})) {
        fmt::print(stderr, "error: --runtime module needs files in place: it cannot be combined with -o or stdin\n");
        return 2;
    }
    if (!opt.output.empty() && opt.diff) {
        fmt::print(stderr, "error: --diff writes nothing; it cannot be combined with -o\n");
        return 2;
    }
    try {
        return run(opt, fix->parsed());
    } catch (const std::exception& e) {
        fmt::print(stderr, "internal error: {}\n", e.what());
        return 2;
    }
}

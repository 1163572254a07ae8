// A `fix` or `check` session, and what an invocation does: see include/graphmend/app.hpp.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "graphmend/config.hpp"
#include "graphmend/process.hpp"
#include "graphmend/rule_pages.hpp"
#include "session.hpp"

namespace graphmend::app {

namespace {

bool is_folder(const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_directory(path, ec);
}

// A usage error found before any file is read; empty when there is none.
std::string usage_error(const Options& opt, bool fix) {
    if (!opt.output.empty()) {
        if (opt.paths.size() != 1) return "-o/--output takes exactly one input file";
        if (opt.diff) return "--diff writes nothing; it cannot be combined with -o";
        if (!opt.from_stdin() && is_folder(opt.paths[0])) return "-o/--output takes one input file, not a folder";
        if (is_folder(opt.output)) return "-o/--output names the fixed file, not a folder";
    }
    if (!opt.stdin_filename.empty() && !opt.from_stdin()) return "--stdin-filename names stdin's text: give - as the path";
    if (opt.runtime == "module" && (!opt.output.empty() || opt.from_stdin())) {
        return "--runtime module needs files in place: it cannot be combined with -o or stdin";
    }
    const bool code_on_stdout = fix && (opt.diff || (opt.from_stdin() && opt.output.empty()));
    const bool machine = output::is_machine(*output::parse_format(opt.output_format));
    if (code_on_stdout && machine && opt.output_file.empty()) {
        return fmt::format("stdout carries the {}: write the {} report with --output-file",
                           opt.diff ? "diff" : "fixed code", opt.output_format);
    }
    if (opt.report_json == "-" && (code_on_stdout || (machine && opt.output_file.empty()))) {
        return fmt::format("stdout already carries the {}: give --report-json a file",
                           code_on_stdout ? (opt.diff ? "diff" : "fixed code") : opt.output_format + " report");
    }
    return {};
}

// What the groups delivered so far come to: what the reports are made of.
struct Delivered {
    std::vector<FileOutcome> outcomes;
    std::vector<bool> written;
    std::vector<std::string> write_errors;
    std::vector<runtime_module::Planned> modules;
};

// One group's outcomes, as fix_files gave them: its links refused, its runtime modules planned
// (and written by `fix`), its files delivered, and its texts released, all added to `out`.
void deliver_group(const Options& opt, bool fix, output::Mode mode, std::vector<FileOutcome> done,
                   output::Progress* progress, Delivered& out) {
    for (const auto& o : done) warn(opt, o.warnings);
    // Before the files: a project whose module cannot be written is not written. Not for -o and
    // stdin, whose output is not in place.
    // `fix --diff` shows what `fix` does, and `check` counts what it would write: a link left
    // as it is is an error of `fix` and `--diff`, and a warning of `check`.
    std::vector<std::string> link_errors(done.size());
    if (fix && !opt.from_stdin() && opt.output.empty()) {
        link_errors = refuse_links(opt, done, "not written: the file is a link (see the error below)");
    } else if (!fix && !opt.from_stdin()) {
        std::vector<std::string> refused =
            refuse_links(opt, done, "not applied: `fix` leaves a link as it is (see the warning above)");
        std::erase(refused, std::string());
        warn(opt, refused);
    }
    std::vector<runtime_module::Planned> planned;
    if (!opt.from_stdin() && opt.output.empty()) planned = runtime_module::plan(done, links(opt));
    if (fix && !opt.diff) runtime_module::write(planned, done, links(opt));
    const std::size_t first = out.written.size();
    if (progress) progress->finish();  // the line is erased before diffs and `-` output; shown again after
    deliver(opt, mode, done, out.written, out.write_errors);
    for (std::size_t i = 0; i < done.size(); ++i) {
        if (!link_errors[i].empty()) {
            out.write_errors[first + i] = link_errors[i];
        } else if (!out.write_errors[first + i].empty()) {
            not_written(done[i], "not written: the write failed (see the error below)");
        }
    }
    if (fix && !opt.diff) {
        const auto from = out.written.begin() + static_cast<std::ptrdiff_t>(first);
        runtime_module::settle(planned, done, std::vector<bool>(from, out.written.end()));
    }
    for (auto& m : planned) out.modules.push_back(std::move(m));
    for (auto& o : done) {
        o.release_texts();
        out.outcomes.push_back(std::move(o));
    }
}

}  // namespace

int run_session(const Options& opt, bool fix, std::istream& in) {
    std::vector<std::string> read_errors;
    std::vector<Pending> pending = find_inputs(opt, in, read_errors);
    if (!opt.output.empty() && pending.size() + read_errors.size() != 1) {
        fmt::print(stderr, "error: -o/--output takes exactly one input file; {} found\n",
                   pending.size() + read_errors.size());
        return 2;
    }
    std::optional<output::Progress> progress;
    std::size_t files_before = 0;  // of the groups fixed before this one, for the progress line
    FixOptions fix_options{opt.unsafe_fixes, opt.threads, {}};
    if (!opt.quiet && ::isatty(STDERR_FILENO) != 0) {
        progress.emplace(stderr);
        fix_options.progress = [&](std::string_view stage, std::size_t done, std::size_t) {
            progress->update(stage, files_before + done, pending.size());
        };
    }
    const auto mode = !fix ? output::Mode::Check : opt.diff ? output::Mode::Diff : output::Mode::Fix;
    std::vector<std::string> paths;
    for (const Pending& p : pending) paths.push_back(p.path);
    // Groups that can be fixed apart are read, fixed and delivered one at a time: only one
    // group's texts and trees are held (a batch of Hub checkouts holds one checkout at a time).
    const auto groups = opt.from_stdin() ? std::vector<std::vector<std::size_t>>{{0}}
                                         : in_batches(independent_groups(paths), paths);
    Delivered delivered;
    for (const auto& group : groups) {
        std::vector<FileOutcome> done = fix_files(read_inputs(opt, pending, group, read_errors), fix_options);
        take_read_errors(done, read_errors);
        files_before += group.size();
        deliver_group(opt, fix, mode, std::move(done), progress ? &*progress : nullptr, delivered);
    }
    if (progress) progress->finish();
    auto& modules = delivered.modules;
    std::sort(modules.begin(), modules.end(),
              [](const runtime_module::Planned& a, const runtime_module::Planned& b) { return a.path < b.path; });
    output::Results results{delivered.outcomes, mode, std::move(delivered.written), std::move(delivered.write_errors),
                            std::move(read_errors)};
    show_runtime_modules(modules, opt, fix);
    const output::Emit emit{*output::parse_format(opt.output_format), opt.output_file, opt.report_json, opt.quiet,
                            opt.statistics, opt.show_fixes};
    const bool reported = output::emit_reports(results, emit);
    const int code = output::exit_code(results, {opt.exit_zero, opt.exit_non_zero_on_fix});
    return reported ? code : 2;
}

namespace {

// This binary, for verify's child runs (`graphmend fix` over the fixed copy).
std::string self_path() {
    std::error_code ec;
    const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("graphmend") : p.string();
}

// The configuration flags as the fixed copy's `fix` gets them (--extend-exclude's globs are
// relative to the working folder, which names the user's files, not the copy: left out).
std::vector<std::string> config_flags(const config::CliFlags& f) {
    std::vector<std::string> out;
    std::error_code ec;
    if (!f.config.empty()) out.insert(out.end(), {"--config", std::filesystem::absolute(f.config, ec).string()});
    if (f.isolated) out.push_back("--isolated");
    auto codes = [&](const char* flag, const std::vector<std::string>& list) {
        for (const auto& c : list) out.insert(out.end(), {flag, c});
    };
    codes("--select", f.select);
    codes("--extend-select", f.extend_select);
    codes("--ignore", f.ignore);
    if (f.no_respect_gitignore) out.push_back("--no-respect-gitignore");
    if (f.no_unsafe_fixes) out.push_back("--no-unsafe-fixes");
    if (!f.extend_exclude.empty()) {
        fmt::print(stderr, "warning: --extend-exclude is not applied to verify's fixed copy (its globs name the "
                           "working folder's files)\n");
    }
    return out;
}

int run_verify_command(const Invocation& invocation, std::istream& in) {
    verify::Options v = invocation.verify;
    v.self = self_path();
    v.fix_flags = config_flags(invocation.options.config);
    verify::install_interrupt_handler();
    if (invocation.command == Command::Verify) return verify::run_verify(v);
    return verify::run_fix_verify(v, [&](const std::vector<std::string>& held, const verify::Evidence& evidence) {
        Options opt = invocation.options;
        opt.held_sites.insert(opt.held_sites.end(), held.begin(), held.end());
        opt.scope_roots.insert(opt.scope_roots.end(), evidence.roots.begin(), evidence.roots.end());
        opt.data_tests.insert(opt.data_tests.end(), evidence.data_tests.begin(), evidence.data_tests.end());
        opt.data_reads.insert(opt.data_reads.end(), evidence.data_reads.begin(), evidence.data_reads.end());
        opt.data_operators.insert(opt.data_operators.end(), evidence.data_operators.begin(),
                                  evidence.data_operators.end());
        return run_session(opt, true, in);
    });
}

}  // namespace

int run_command(const Invocation& invocation, std::istream& in) {
    if (invocation.command == Command::Rule) return output::print_rule_pages(invocation.rule, invocation.all_rules);
    try {
        if (invocation.command == Command::Verify || invocation.fix_verify) return run_verify_command(invocation, in);
    } catch (const config::ConfigError& e) {
        fmt::print(stderr, "error: {}\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        fmt::print(stderr, "internal error: {}\n", e.what());
        return 2;
    }
    const Options& opt = invocation.options;
    const bool fix = invocation.command == Command::Fix;
    if (const std::string error = usage_error(opt, fix); !error.empty()) {
        fmt::print(stderr, "error: {}\n", error);
        return 2;
    }
    try {
        return run_session(opt, fix, in);
    } catch (const config::ConfigError& e) {
        fmt::print(stderr, "error: {}\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        fmt::print(stderr, "internal error: {}\n", e.what());
        return 2;
    }
}

}  // namespace graphmend::app

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
//   --runtime auto|inline|module          where rewritten files get the runtime helpers (README "The runtime")
//
// Human reports go to stderr, diffs and `-` output to stdout, machine reports (--output-format
// json|sarif|github) to stdout or --output-file. Exit codes (output::exit_code): 0 nothing to
// report; 1 a finding (check: a fixable site; a syntax error); 2 a usage, read, write or
// internal error, or a malformed configuration.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "graphmend/config.hpp"
#include "graphmend/config_cli.hpp"
#include "graphmend/fixer.hpp"
#include "graphmend/output.hpp"
#include "graphmend/rule_pages.hpp"
#include "graphmend/runtime_module.hpp"

namespace {

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
    graphmend::config::CliFlags config;
    std::string stdin_filename;    // --stdin-filename: the path stdin's text stands for
    std::string runtime = "auto";  // auto: the module for files found in a folder, inline otherwise

    [[nodiscard]] bool from_stdin() const { return paths.size() == 1 && paths[0] == "-"; }
};

graphmend::output::LinkPolicy links(const Options& opt) {
    return opt.write_through_links ? graphmend::output::LinkPolicy::WriteThrough : graphmend::output::LinkPolicy::Refuse;
}

void warn(const Options& opt, const std::vector<std::string>& warnings) {
    if (opt.quiet) return;
    for (const auto& w : warnings) fmt::print(stderr, "warning: {}\n", w);
}

bool is_folder(const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_directory(path, ec);
}

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
    std::fflush(stdout);
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
    const bool machine = graphmend::output::is_machine(*graphmend::output::parse_format(opt.output_format));
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

// The files found, in order, each physical file once (as ruff dedupes its paths): a second path
// to the same file (given twice, or through a link to a folder) is warned about and dropped, so
// the first path decides how the file is taken (named by itself, or found in a folder).
void keep_once_each(graphmend::config::Discovered& found) {
    std::map<std::pair<dev_t, ino_t>, std::string> seen;
    std::vector<std::string> files;
    std::vector<bool> named;
    for (std::size_t k = 0; k < found.files.size(); ++k) {
        std::string& f = found.files[k];
        struct stat st {};
        if (::stat(f.c_str(), &st) == 0) {
            const auto [it, fresh] = seen.emplace(std::pair{st.st_dev, st.st_ino}, f);
            if (!fresh) {
                found.warnings.push_back(fmt::format("{}: the same file as {}; checked once", f, it->second));
                continue;
            }
        }
        files.push_back(std::move(f));
        named.push_back(found.named[k]);
    }
    found.files = std::move(files);
    found.named = std::move(named);
}

// An input found but not read yet: its path, configuration and runtime form.
struct Pending {
    std::string path;
    std::shared_ptr<const graphmend::FileSettings> settings;
    graphmend::RuntimeForm runtime = graphmend::RuntimeForm::Inline;
    std::optional<std::string> text;  // stdin's, read at once
};

// The inputs: stdin, or the *.py files of the paths (config::discover: excludes, .gitignore),
// each with its configuration; what could not be found goes to `errors`. Every configuration
// is read (a malformed one throws config::ConfigError) before any file.
std::vector<Pending> find_inputs(const Options& opt, std::vector<std::string>& errors) {
    using namespace graphmend;
    config::Resolver resolver(config::overrides(opt.config, opt.unsafe_fixes));
    if (opt.from_stdin()) {
        // As ruff: --stdin-filename names the file for the configuration, the project and the report.
        const std::string path = opt.stdin_filename.empty() ? "-" : opt.stdin_filename;
        std::vector<Pending> in{{path, resolver.for_file(path), RuntimeForm::Inline,
                                 std::string(std::istreambuf_iterator<char>(std::cin), {})}};
        warn(opt, resolver.take_warnings());
        return in;
    }
    config::Discovered found = config::discover(opt.paths, resolver);
    for (auto& e : found.errors) errors.push_back(std::move(e));
    keep_once_each(found);
    warn(opt, found.warnings);
    std::vector<Pending> out;
    for (std::size_t k = 0; k < found.files.size(); ++k) {
        std::string& f = found.files[k];
        // A file named on the command line keeps the inline runtime (auto); one found in a folder
        // imports it, however a second path to it is spelled. A file reached through a symbolic
        // link (an HF cache snapshot) keeps it too: its text lives elsewhere (blobs/), where a
        // module written next to the link would not be found.
        std::error_code ec;
        const RuntimeForm form = runtime_form(opt, !found.named[k] && !std::filesystem::is_symlink(f, ec));
        auto settings = resolver.for_file(f);
        out.push_back({std::move(f), std::move(settings), form, std::nullopt});
    }
    warn(opt, resolver.take_warnings());
    return out;
}

// The inputs of `group`. A file is read by fix_files (InputFile::from_disk), as it parses it,
// and its text is held only while it is needed; stdin's text is read already, and `-o`'s file
// is read here (its output is written even when it is unchanged).
std::vector<graphmend::InputFile> read_inputs(const Options& opt, std::vector<Pending>& pending,
                                              const std::vector<std::size_t>& group,
                                              std::vector<std::string>& errors) {
    using namespace graphmend;
    std::vector<InputFile> inputs;
    for (const std::size_t k : group) {
        Pending& p = pending[k];
        if (p.text) {
            inputs.push_back({p.path, std::move(*p.text), p.settings, p.runtime});
        } else if (!opt.output.empty()) {
            try {
                inputs.push_back({p.path, syntax::read_file(p.path), p.settings, p.runtime});
            } catch (const std::exception& e) {
                errors.push_back(e.what());
            }
        } else {
            inputs.push_back({p.path, std::string(), p.settings, p.runtime, true});
        }
    }
    return inputs;
}

// Moves the outcomes of inputs that could not be read (FileError::Read) to `errors`: as a file
// read_inputs cannot read, they have no outcome.
void take_read_errors(std::vector<graphmend::FileOutcome>& outcomes, std::vector<std::string>& errors) {
    std::erase_if(outcomes, [&](graphmend::FileOutcome& o) {
        if (!o.error || o.error_kind != graphmend::FileError::Read) return false;
        errors.push_back(std::move(*o.error));
        return true;
    });
}

// A rewrite that is not written: the outcome is left as it was, and its fixes are reported as
// not applied, for `why`. A site is "fixed" only where its fix is in the file.
void not_written(graphmend::FileOutcome& o, const std::string& why) {
    o.fixed = o.original;
    o.imports_runtime = false;
    for (std::size_t s = 0; s < o.sites.size(); ++s) {
        if (!o.applied[s]) continue;
        o.applied[s] = false;
        o.sites[s].reason = why;
    }
}

// The files `fix` would rewrite in place but must not, being links (output::link_refusal):
// each is left unchanged before the runtime modules are planned, its fixes reported as not
// applied for `why`, and its message returned (per outcome, "" for the others). `check` asks
// too, so that it counts what `fix` would write.
std::vector<std::string> refuse_links(const Options& opt, std::vector<graphmend::FileOutcome>& outcomes,
                                      const std::string& why) {
    std::vector<std::string> errors(outcomes.size());
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
        auto& o = outcomes[i];
        if (o.error || !o.changed()) continue;
        errors[i] = graphmend::output::link_refusal(o.path, links(opt));
        if (!errors[i].empty()) not_written(o, why);
    }
    return errors;
}

// Prints diffs, `-` output, and writes files (fix); appends, per outcome, whether it was
// written and the failed write's message ("" for none).
void deliver(const Options& opt, graphmend::output::Mode mode, const std::vector<graphmend::FileOutcome>& outcomes,
             std::vector<bool>& written, std::vector<std::string>& write_errors) {
    using graphmend::output::Mode;
    for (const auto& o : outcomes) {
        bool wrote = false;
        std::string error;
        if (mode == Mode::Diff) {
            fmt::print("{}", graphmend::output::unified_diff(o.path, o.original, o.fixed));
        } else if (mode == Mode::Check) {
        } else if (opt.from_stdin() && opt.output.empty()) {
            // `fix -` echoes an unchanged file too. A stdout that cannot take it (a full disk, a
            // closed pipe) is a failed write: reported, not an internal error that drops the report.
            try {
                fmt::print("{}", o.fixed);
                if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) throw std::system_error(errno, std::generic_category());
                wrote = true;
            } catch (const std::exception& e) {
                error = fmt::format("-: the fixed text could not be written to stdout: {}", e.what());
                std::clearerr(stdout);
            }
        } else if (!o.error && (o.changed() || !opt.output.empty())) {  // -o always writes the result
            try {
                // In place, a file read from disk is written only if it is still what was read.
                if (opt.output.empty() && o.disk) {
                    graphmend::output::write_if_unchanged(o.path, o.fixed, *o.disk, links(opt));
                } else {
                    graphmend::output::write_atomically(opt.output.empty() ? o.path : opt.output, o.fixed, links(opt));
                }
                wrote = true;
            } catch (const std::exception& e) {
                error = e.what();
            }
        }
        written.push_back(wrote);
        write_errors.push_back(std::move(error));
    }
    std::fflush(stdout);
}

// Independent groups joined, in order, into batches of at least kBatchBytes of source (fixing
// groups together gives each the outcomes it gets alone: independent_groups): one analysis
// per batch instead of one per small group (a Hub checkout is two files), and trees of a few
// megabytes of source held at a time.
constexpr std::uintmax_t kBatchBytes = 4u << 20;

std::vector<std::vector<std::size_t>> in_batches(const std::vector<std::vector<std::size_t>>& groups,
                                                 const std::vector<std::string>& paths) {
    std::vector<std::vector<std::size_t>> out;
    std::uintmax_t bytes = kBatchBytes;  // the first group starts a batch
    for (const auto& group : groups) {
        if (bytes >= kBatchBytes) {
            out.emplace_back();
            bytes = 0;
        }
        for (const std::size_t i : group) {
            std::error_code ec;
            const std::uintmax_t size = std::filesystem::file_size(paths[i], ec);
            bytes += ec ? 0 : size;
            out.back().push_back(i);
        }
    }
    return out;
}

int run(const Options& opt, bool fix) {
    using namespace graphmend;
    std::vector<std::string> read_errors;
    std::vector<Pending> pending = find_inputs(opt, read_errors);
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
    std::vector<FileOutcome> outcomes;
    std::vector<bool> written;
    std::vector<std::string> write_errors;
    std::vector<runtime_module::Planned> modules;
    for (const auto& group : groups) {
        std::vector<FileOutcome> done = fix_files(read_inputs(opt, pending, group, read_errors), fix_options);
        take_read_errors(done, read_errors);
        files_before += group.size();
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
        const std::size_t first = written.size();
        if (progress) progress->finish();  // the line is erased before diffs and `-` output; shown again after
        deliver(opt, mode, done, written, write_errors);
        for (std::size_t i = 0; i < done.size(); ++i) {
            if (!link_errors[i].empty()) {
                write_errors[first + i] = link_errors[i];
            } else if (!write_errors[first + i].empty()) {
                not_written(done[i], "not written: the write failed (see the error below)");
            }
        }
        if (fix && !opt.diff) {
            runtime_module::settle(planned, done, std::vector<bool>(written.begin() + static_cast<std::ptrdiff_t>(first), written.end()));
        }
        for (auto& m : planned) modules.push_back(std::move(m));
        for (auto& o : done) {
            o.release_texts();
            outcomes.push_back(std::move(o));
        }
    }
    if (progress) progress->finish();
    std::sort(modules.begin(), modules.end(),
              [](const runtime_module::Planned& a, const runtime_module::Planned& b) { return a.path < b.path; });
    output::Results results{outcomes, mode, std::move(written), std::move(write_errors), std::move(read_errors)};
    show_runtime_modules(modules, opt, fix);
    const output::Emit emit{*output::parse_format(opt.output_format), opt.output_file, opt.report_json, opt.quiet,
                            opt.statistics, opt.show_fixes};
    const bool reported = output::emit_reports(results, emit);
    const int code = output::exit_code(results, {opt.exit_zero, opt.exit_non_zero_on_fix});
    return reported ? code : 2;
}

constexpr const char* kRuntimeHelp =
    "where rewritten files get graphmend's runtime: module (an import of _graphmend_runtime.py at the project's "
    "root), inline (appended to each file), auto (default: module for the files of a folder given, else inline)";

// The options `fix` and `check` share.
void add_common(CLI::App* cmd, Options& opt) {
    static const std::vector<std::string> formats(std::begin(graphmend::output::kFormatNames),
                                                  std::end(graphmend::output::kFormatNames));
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

constexpr unsigned kMaxThreads = 1024;
constexpr const char* kThreadsHelp =
    "files parsed and fixed in parallel (default 0: one thread per CPU); the output is the same for every count";

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"graphmend: removes TorchDynamo graph breaks from PyTorch model sources"};
    app.set_version_flag("--version", fmt::format("graphmend {}", graphmend::output::kVersion));  // CMakeLists.txt
    app.require_subcommand(1);
    Options opt;

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
    graphmend::config::add_cli_flags(*fix, opt.config, fix_unsafe);

    auto* check = app.add_subcommand("check", "report the sites, write nothing");
    add_common(check, opt);
    auto* check_unsafe = check->add_flag("--unsafe-fixes", opt.unsafe_fixes, "count unsafe fixes as applied");
    check->add_flag("--write-through-links", opt.write_through_links,
                    "count symbolic links and hard-linked files as `fix --write-through-links` rewrites them "
                    "(default: as `fix` leaves them, not rewritten)");
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
    if (rule->parsed()) return graphmend::output::print_rule_pages(rule_code, rule_all);
    if (const std::string error = usage_error(opt, fix->parsed()); !error.empty()) {
        fmt::print(stderr, "error: {}\n", error);
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

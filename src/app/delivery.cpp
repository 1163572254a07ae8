// Delivering a session's outcomes (diffs, `-` output, files written, links refused, runtime
// modules): see session.hpp.
#include <cerrno>
#include <cstdio>
#include <system_error>

#include <fmt/format.h>

#include "session.hpp"

namespace graphmend::app {

output::LinkPolicy links(const Options& opt) {
    return opt.write_through_links ? output::LinkPolicy::WriteThrough : output::LinkPolicy::Refuse;
}

void warn(const Options& opt, const std::vector<std::string>& warnings) {
    if (opt.quiet) return;
    for (const auto& w : warnings) fmt::print(stderr, "warning: {}\n", w);
}

void not_written(FileOutcome& o, const std::string& why) {
    o.fixed = o.original;
    o.imports_runtime = false;
    for (std::size_t s = 0; s < o.sites.size(); ++s) {
        if (!o.applied[s]) continue;
        o.applied[s] = false;
        o.sites[s].reason = why;
    }
}

std::vector<std::string> refuse_links(const Options& opt, std::vector<FileOutcome>& outcomes, const std::string& why) {
    std::vector<std::string> errors(outcomes.size());
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
        auto& o = outcomes[i];
        if (o.error || !o.changed()) continue;
        errors[i] = output::link_refusal(o.path, links(opt));
        if (!errors[i].empty()) not_written(o, why);
    }
    return errors;
}

void deliver(const Options& opt, output::Mode mode, const std::vector<FileOutcome>& outcomes,
             std::vector<bool>& written, std::vector<std::string>& write_errors) {
    using output::Mode;
    for (const auto& o : outcomes) {
        bool wrote = false;
        std::string error;
        if (mode == Mode::Diff) {
            fmt::print("{}", output::unified_diff(o.path, o.original, o.fixed));
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
                    output::write_if_unchanged(o.path, o.fixed, *o.disk, links(opt));
                } else {
                    output::write_atomically(opt.output.empty() ? o.path : opt.output, o.fixed, links(opt));
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

void show_runtime_modules(const std::vector<runtime_module::Planned>& modules, const Options& opt, bool write) {
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

}  // namespace graphmend::app

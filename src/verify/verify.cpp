// `graphmend verify`: which target PATH is, one pair of runs, the report. See
// include/graphmend/verify.hpp.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "internal.hpp"

namespace graphmend::verify {

namespace {

std::string shell_words(const std::vector<std::string>& argv) {
    std::vector<std::string> out;
    for (const std::string& a : argv) {
        const bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos;
        out.push_back(plain ? a : "'" + a + "'");
    }
    return fmt::format("{}", fmt::join(out, " "));
}

// The driver's flags that verify's own flags set.
void driver_flags(const Options& opt, std::vector<std::string>& argv, bool checkout) {
    if (checkout && opt.tiny) argv.push_back("--tiny");
    if (opt.repeat > 1) argv.insert(argv.end(), {"--calls", std::to_string(opt.repeat)});
    if (!opt.device.empty()) {
        argv.push_back("--device");
        argv.push_back(opt.device);
    }
}

}  // namespace

// What PATH and COMMAND ask for; an empty optional and `error` set when neither fits.
std::optional<Target> target_of(const Options& opt, std::string& error) {
    std::error_code ec;
    const fs::path given(opt.path);
    if (!fs::exists(given, ec)) {
        error = fmt::format("{}: no such file or folder", opt.path);
        return std::nullopt;
    }
    Target t;
    t.path = fs::weakly_canonical(fs::absolute(given), ec);
    t.root = fs::is_regular_file(t.path, ec) ? t.path.parent_path() : t.path;
    if (!opt.command.empty()) {
        t.mode = Target::Mode::Command;
        t.argv = opt.command;
    } else if (is_checkout(t.path)) {
        t.mode = Target::Mode::Checkout;
        t.argv = {python_of(opt), "-m", "_graphmend_verify_checkout", t.path.string()};
        driver_flags(opt, t.argv, true);
    } else if (fs::is_regular_file(t.path, ec) && t.path.extension() == ".py") {
        t.mode = Target::Mode::File;
        t.argv = {python_of(opt), "-m", "_graphmend_verify_file", t.path.string()};
        driver_flags(opt, t.argv, false);
    } else {
        error = fmt::format(
            "{}: give the command that runs it after `--` (graphmend verify PATH -- python sample.py), or a checkout "
            "(a folder with config.json), a file that defines Model and example_inputs(), or a folder of checkouts",
            opt.path);
        return std::nullopt;
    }
    t.label = shell_words(t.argv);
    return t;
}

int run_verify(const Options& opt) {
    std::error_code ec;
    if (opt.command.empty() && fs::is_directory(opt.path, ec) && !is_checkout(opt.path)) {
        const std::vector<fs::path> checkouts = find_checkouts(opt.path);
        if (!checkouts.empty()) return run_batch_verify(opt, checkouts);
    }
    std::string error;
    const std::optional<Target> target = target_of(opt, error);
    if (!target) {
        fmt::print(stderr, "error: {}\n", error);
        return 2;
    }
    const WorkDir work(opt.keep);
    const Pair pair = run_pair(opt, *target, work.root());
    const json report = join(opt, pair);
    if (!deliver(opt, report, {report})) return 2;
    return exit_code_of(report);
}

}  // namespace graphmend::verify

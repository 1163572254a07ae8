// The configuration flags: see include/graphmend/config_cli.hpp.
#include "graphmend/config_cli.hpp"

namespace graphmend::config {

namespace {

const CLI::Validator kSelector(
    [](std::string& s) { return valid_selector(s) ? std::string() : "unknown rule selector `" + s + "`"; }, "",
    "rule selector");

const CLI::Validator kGlob([](std::string& s) { return glob_error(s).value_or(std::string()); }, "", "glob");

// A list option, as ruff's: one value per occurrence, comma-separated (`--select GM1,GM2`), and
// occurrences accumulate (`--select GM1 --select GM2`). CLI11's vector options otherwise take
// every argument up to the next option, so `--ignore GM4 a.py b.py` read the paths as selectors
// (and `--extend-exclude 'x*' a.py` a path as a glob): a pre-commit hook's `args: [--ignore=GM4]`
// comes before the staged files.
void add_list(CLI::App& command, const std::string& name, std::vector<std::string>& into, const std::string& help,
              const CLI::Validator& each, const std::string& type_name) {
    command.add_option(name, into, help)
        ->expected(1)
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->delimiter(',')
        ->check(each)
        ->type_name(type_name);
}

void add_codes(CLI::App& command, const std::string& name, std::vector<std::string>& into, const std::string& help) {
    add_list(command, name, into, help, kSelector, "CODES");
}

}  // namespace

void add_cli_flags(CLI::App& command, CliFlags& flags, CLI::Option* unsafe_fixes) {
    auto* config = command.add_option("--config", flags.config,
                                      "read this configuration file for every input, and no other (its globs are "
                                      "relative to the working folder)")
                       ->type_name("PATH");
    command.add_flag("--isolated", flags.isolated, "read no configuration file")->excludes(config);
    add_codes(command, "--select", flags.select,
              "rules to run, as codes or prefixes, comma-separated (replaces the configuration's select)");
    add_codes(command, "--extend-select", flags.extend_select, "rules to run besides the selected ones");
    add_codes(command, "--ignore", flags.ignore, "rules not to run");
    add_list(command, "--extend-exclude", flags.extend_exclude,
             "globs of more files and folders to leave out of folder walks, comma-separated", kGlob, "GLOBS");
    command.add_flag("--no-respect-gitignore", flags.no_respect_gitignore,
                     "walk files and folders that .gitignore files exclude");
    command.add_flag("--no-unsafe-fixes", flags.no_unsafe_fixes,
                     "apply no unsafe fix, whatever the configuration says")
        ->excludes(unsafe_fixes);
}

Overrides overrides(const CliFlags& flags, bool unsafe_fixes) {
    Overrides out;
    const fs::path cwd = fs::current_path();
    if (!flags.select.empty()) out.rules.select = flags.select;
    out.rules.extend_select = flags.extend_select;
    out.rules.ignore = flags.ignore;
    for (const auto& glob : flags.extend_exclude) out.extend_exclude.push_back(FilePattern::relative_to(glob, cwd));
    if (unsafe_fixes) out.unsafe_fixes = true;
    if (flags.no_unsafe_fixes) out.unsafe_fixes = false;
    out.no_respect_gitignore = flags.no_respect_gitignore;
    out.config_file = flags.config;
    out.isolated = flags.isolated;
    return out;
}

}  // namespace graphmend::config

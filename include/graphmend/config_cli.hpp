// The configuration flags of `graphmend fix` and `graphmend check` (ruff's names).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "graphmend/config.hpp"

namespace graphmend::config {

struct CliFlags {
    std::string config;
    bool isolated = false;
    std::vector<std::string> select, extend_select, ignore, extend_exclude;
    bool no_respect_gitignore = false;
    bool no_unsafe_fixes = false;
};

/// Adds --config, --isolated, --select, --extend-select, --ignore, --extend-exclude,
/// --no-respect-gitignore and --no-unsafe-fixes to `command`; `unsafe_fixes` is its
/// --unsafe-fixes flag, which --no-unsafe-fixes excludes.
void add_cli_flags(CLI::App& command, CliFlags& flags, CLI::Option* unsafe_fixes);

/// The overrides the flags give (globs relative to the working folder).
Overrides overrides(const CliFlags& flags, bool unsafe_fixes);

}  // namespace graphmend::config

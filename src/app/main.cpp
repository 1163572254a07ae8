// graphmend command line.
//
//   graphmend fix IN.py -o OUT.py        write a fixed copy
//   graphmend fix PATH...                 rewrite files and folders (*.py) in place, atomically
//   graphmend fix --diff PATH...          print a unified diff, write nothing
//   graphmend check PATH...               report sites, write nothing
//   graphmend rule CODE | NAME | --all    print rule pages (docs/rules/), see rule_pages.hpp
//   --threads N (-j N)                    parse and fix N files at a time; 0, the default, is one
//                                         thread per CPU. Output is the same for every N.
//   --config, --isolated, --select, ...   configuration (ruff's flags; see config_cli.hpp)
//   --runtime auto|inline|module          where rewritten files get the runtime helpers (docs/runtime.md)
//
// The command line and the sessions are include/graphmend/app.hpp's (src/app/): reports,
// outputs and exit codes are described there.
#include <iostream>
#include <variant>

#include "graphmend/app.hpp"

int main(int argc, char** argv) {
    auto parsed = graphmend::app::parse_command_line(argc, argv);
    if (const int* code = std::get_if<int>(&parsed)) return *code;  // --help, --version, a usage error
    return graphmend::app::run_command(std::get<graphmend::app::Invocation>(parsed), std::cin);
}

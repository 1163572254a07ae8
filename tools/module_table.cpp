// graphmend_module_table: prints the table of nn.Module classes of a package, in the format
// of src/knowledge/module_table.txt (`module: Class Class ...`, modules in sorted order).
//
//   build/graphmend_module_table <site-packages>/transformers > src/knowledge/module_table.txt
//
// It runs graphmend's own analysis over every *.py file of the package given as one
// project, so a class is listed exactly when a run over the whole package finds it an
// nn.Module. Listed per module: the classes it defines and the module classes it imports
// (re-exports). Modules that nothing imports at run time (modular_*, convert_*, TF and Flax
// modeling files, tests) are left out. scripts/module_table.sh regenerates the shipped table.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "graphmend/analysis.hpp"
#include "graphmend/output.hpp"

using namespace graphmend;

namespace {

bool left_out(const std::string& module) {
    const auto dot = module.rfind('.');
    const std::string stem = dot == std::string::npos ? module : module.substr(dot + 1);
    return stem.starts_with("modular_") || stem.starts_with("convert_") || stem.starts_with("modeling_tf_") ||
           stem.starts_with("modeling_flax_") || module.find(".tests.") != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        fmt::print(stderr, "usage: {} PACKAGE_FOLDER...\n", argv[0]);
        return 2;
    }
    std::vector<analysis::SourceFile> files;
    for (const auto& path : output::collect_python_files(std::vector<std::string>(argv + 1, argv + argc))) {
        syntax::Tree tree = syntax::Tree::parse(syntax::read_file(path));
        if (tree.error()) continue;
        analysis::ModulePlace place = analysis::place_module(path);
        auto index = analysis::index_module(tree.root());
        files.push_back({path, std::move(place.module_name), place.is_package_init, std::move(tree), std::move(index),
                         std::move(place.project), place.isolated});
    }
    const analysis::Project project(std::move(files));
    std::map<std::string, std::vector<std::string>> table;
    for (std::size_t f = 0; f < project.files().size(); ++f) {
        const std::string& module = project.files()[f].module_name;
        if (left_out(module)) continue;
        for (const auto& dotted : project.exported_module_classes(f)) {
            table[module].push_back(dotted.substr(module.size() + 1));
        }
    }
    fmt::print("# nn.Module classes of {} ({} modules), made by tools/module_table.cpp; see analysis.hpp.\n",
               argc == 2 ? std::filesystem::path(argv[1]).filename().string() : "several packages", table.size());
    for (auto& [module, classes] : table) {
        std::sort(classes.begin(), classes.end());
        fmt::print("{}: {}\n", module, fmt::join(classes, " "));
    }
    return 0;
}

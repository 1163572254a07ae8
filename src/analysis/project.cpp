// Project: construction, the files it loads, and where each module sits (the module names
// imports resolve to). Name resolution is in resolve.cpp, nn.Module detection in
// module_classes.cpp, the compiled scope in scope.cpp. See include/graphmend/analysis.hpp.
#include <algorithm>
#include <filesystem>
#include <mutex>

#include "graphmend/analysis.hpp"

namespace graphmend::analysis {

using syntax::Node;

namespace {

bool is_torch_module(const std::string& dotted) { return dotted == "torch" || dotted.starts_with("torch."); }

}  // namespace

struct Project::LoadedTrees {
    std::mutex mutex;
    std::map<std::size_t, std::unique_ptr<syntax::Tree>> trees;
};

const syntax::Tree& Project::tree_of(std::size_t file) const {
    if (!files_[file].pruned) return files_[file].tree;
    const std::lock_guard<std::mutex> lock(loaded_->mutex);
    auto& tree = loaded_->trees[file];
    if (!tree) tree = std::make_unique<syntax::Tree>(syntax::Tree::parse(read_source(files_[file])));
    return *tree;
}

Project::Project(std::vector<SourceFile> files, Loader load)
    : files_(std::move(files)), load_(std::move(load)), loaded_(std::make_shared<LoadedTrees>()) {
    for (SourceFile& file : files_) {
        if (file.words.empty() && !file.on_disk) file.words = word_hashes(read_source(file));
    }
    register_modules();
    compute_module_classes();
    compute_scope();
    compute_notes();
    load_read_files();
    load_ = nullptr;
}

void Project::register_modules() {
    namespace fs = std::filesystem;
    std::vector<std::string> keys;
    for (const auto& f : files_) keys.push_back(fs::absolute(fs::path(f.path)).lexically_normal().string());
    by_path_.resize(files_.size());
    for (std::size_t i = 0; i < files_.size(); ++i) by_path_[i] = i;
    std::stable_sort(by_path_.begin(), by_path_.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
    for (const std::size_t i : by_path_) {
        const std::string& ns = namespace_of(i);
        // torch's own sources among the inputs (a tree that vendors or develops torch) are not
        // what the code imports by `torch...` in the sense that matters here: torch's classes
        // and functions are recognised by their dotted names (is_external_module_class, the
        // rules' torch.* tables), so `torch` stays external whatever the folder holds.
        if (!files_[i].isolated && is_torch_module(files_[i].module_name)) continue;
        by_module_.emplace(std::make_pair(ns, files_[i].module_name), i);
        // A script's sibling is importable by its bare name (`import utils` next to it).
        if (files_[i].isolated) {
            const auto dot = files_[i].module_name.find('.');
            if (dot != std::string::npos) by_module_.emplace(std::make_pair(ns, files_[i].module_name.substr(dot + 1)), i);
        }
    }
}

namespace {

// The identifier/attribute chains of a tree's expressions that name resolution can start
// from (Project::resolve_expr), each with its prefixes (`a`, `a.b`, `a.b.c`), outside import
// statements. Distinct, sorted.
std::set<std::string> expression_chains(const Node& root) {
    std::set<std::string> out;
    syntax::walk(root, [&](const Node& n) {
        if (n.is("import_statement") || n.is("import_from_statement") || n.is("future_import_statement")) {
            return false;
        }
        if (!n.is("identifier") && !n.is("attribute")) return true;
        const std::string chain = chain_text(n);
        if (chain.empty()) return true;  // `f().x`: not resolved; its parts are walked
        for (std::size_t dot = chain.find('.'); dot != std::string::npos; dot = chain.find('.', dot + 1)) {
            out.insert(chain.substr(0, dot));
        }
        out.insert(chain);
        return false;  // the chain's parts are in it
    });
    return out;
}

}  // namespace

void load_file(SourceFile& file) {
    if (!file.pruned) return;
    file.tree = syntax::Tree::parse(file.on_disk ? read_source(file) : std::move(file.text));
    file.text = std::string();
    file.on_disk.reset();
    file.pruned = false;
    // The same text gives the same names: only the nodes are filled in, so maps, and any
    // iterator into them, stay as they were.
    ModuleIndex fresh = index_module(file.tree.root());
    for (auto& [name, info] : file.index.classes) {
        const ClassInfo& now = fresh.classes.at(name);
        info.node = now.node;
        info.bases = now.bases;
        for (auto& [method, def] : info.methods) def = now.methods.at(method);
    }
    for (auto& [name, def] : file.index.functions) def = fresh.functions.at(name);
}

void Project::load(const std::vector<std::size_t>& wanted) {
    std::vector<std::size_t> pruned;
    for (const std::size_t f : wanted) {
        if (files_[f].pruned && std::find(pruned.begin(), pruned.end(), f) == pruned.end()) pruned.push_back(f);
    }
    if (pruned.empty()) return;
    if (load_) {
        load_(files_, pruned);
    } else {
        for (const std::size_t f : pruned) load_file(files_[f]);
    }
}

void Project::load_read_files() {
    // What the value analysis and the rules read besides the scope: the classes and functions
    // the scope's files name (a module attribute's class, a callee outside the scope), and
    // the classes those name in their __init__, with the bases of every class read.
    std::vector<std::size_t> wave;
    std::set<std::size_t> chased;
    // Loaded files whose classes' bases were walked: bases resolve by names only, so once is enough.
    std::set<std::size_t> based;
    static const std::map<std::string, ClassInfo> kNoClasses;
    for (const auto& [f, fns] : scope_nodes_) {
        chased.insert(f);
        for (const std::string& chain : expression_chains(files_[f].tree.root())) {
            const Symbol s = resolve_dotted(f, chain);
            if (s.kind == Symbol::Class || s.kind == Symbol::Function) wave.push_back(s.file);
        }
    }
    while (true) {
        for (std::size_t f = 0; f < files_.size(); ++f) {
            if (files_[f].pruned) continue;
            for (const auto& [name, info] : based.insert(f).second ? files_[f].index.classes : kNoClasses) {
                for (const auto& c : ancestors(f, name)) {
                    if (files_[c.first].pruned) wave.push_back(c.first);
                }
            }
            if (!chased.insert(f).second) continue;
            for (const auto& [name, info] : files_[f].index.classes) {
                const auto init = info.methods.find("__init__");
                if (init == info.methods.end()) continue;
                for (const std::string& chain : expression_chains(init->second)) {
                    const Symbol s = resolve_dotted(f, chain);
                    if (s.kind == Symbol::Class && files_[s.file].pruned) wave.push_back(s.file);
                }
            }
        }
        std::erase_if(wave, [&](std::size_t f) { return !files_[f].pruned; });
        if (wave.empty()) return;
        load(wave);
        wave.clear();
    }
}

const std::string& Project::namespace_of(std::size_t file) const {
    static const std::string kPackages;
    return files_[file].isolated ? files_[file].project : kPackages;
}

std::optional<std::size_t> Project::find_module(const std::string& ns, const std::string& dotted) const {
    if (!ns.empty()) {
        if (const auto it = by_module_.find({ns, dotted}); it != by_module_.end()) return it->second;
    }
    if (const auto it = by_module_.find({std::string(), dotted}); it != by_module_.end()) return it->second;
    return std::nullopt;
}

}  // namespace graphmend::analysis

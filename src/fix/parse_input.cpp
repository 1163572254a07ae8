// Reading and parsing one input: see parse_input.hpp.
#include "parse_input.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>

#include "lone_crs.hpp"

namespace graphmend::fix {

namespace {

std::string location(const std::string& path, syntax::LineCol where) {
    return fmt::format("{}:{}:{}", path, where.line, where.col);
}

}  // namespace

// The project folder written the way the file's path was given: the path minus the file's
// place inside the project ("tests/checkouts/alpha/modeling_alpha.py" -> "tests/checkouts/alpha").
std::string project_as_given(const std::string& path, const std::string& project) {
    namespace fs = std::filesystem;
    const std::string inside =
        fs::absolute(fs::path(path)).lexically_normal().lexically_relative(fs::path(project)).generic_string();
    if (inside.empty() || inside.starts_with("..") || !path.ends_with(inside)) return project;
    const std::string given = path.substr(0, path.size() - inside.size());
    if (given.empty()) return ".";
    return given.size() > 1 && given.back() == '/' ? given.substr(0, given.size() - 1) : given;
}

std::optional<analysis::SourceFile> parse_input(InputFile& input, FileOutcome& out, Suppressions* noqa,
                                                const analysis::DiskText* want, bool keep_trees) {
    out.path = input.path;
    out.runtime = input.runtime;
    std::string text;
    if (input.from_disk) {
        try {
            text = syntax::read_file(input.path);
        } catch (const std::runtime_error& e) {
            if (want) throw analysis::SourceChanged(e.what());
            out.error = e.what();
            out.error_kind = FileError::Read;
            return std::nullopt;
        }
        out.disk = analysis::DiskText::of(text);
        if (want && !want->same_bytes(*out.disk)) {
            throw analysis::SourceChanged(input.path + ": changed on disk while graphmend read it");
        }
    } else {
        text = std::move(input.text);
    }
    const bool only_crs = cr_only(text);
    if (text.find('\r') != std::string::npos) {
        const std::string before = only_crs || noqa == nullptr ? std::string() : text;
        if (syntax::lf_for_lone_crs(text) > 0) {
            if (out.disk) out.disk->lone_crs = true;
            out.cr_only = only_crs;
            for (std::size_t k = 0; k < before.size(); ++k) {
                if (before[k] != text[k]) out.lone_crs.push_back(static_cast<std::uint32_t>(k));
            }
        }
    }
    analysis::ModulePlace place = analysis::place_module(input.path);
    out.project = project_as_given(input.path, place.project);
    syntax::Tree tree = syntax::Tree::parse(std::move(text));
    const std::string& source = tree.source().text();
    if (const auto err = tree.error()) {
        out.original = source;
        out.error = fmt::format("{}: {}; file left unchanged", location(input.path, err->where), err->message);
        out.error_at = err->where;
        return std::nullopt;
    }
    if (noqa != nullptr) {
        *noqa = find_suppressions(tree, input.path);
        out.warnings = noqa->warnings;
        out.skip_rules = out.skip_rules || noqa->skip_file;
    }
    auto index = analysis::index_module(tree.root());
    std::vector<std::uint32_t> words = analysis::word_hashes(source);
    if (keep_trees) {
        out.original = source;
        std::optional<analysis::SourceFile> parsed(analysis::SourceFile{input.path, std::move(place.module_name),
                                                                        place.is_package_init, std::move(tree),
                                                                        std::move(index), std::move(place.project),
                                                                        place.isolated});
        parsed->words = std::move(words);
        return parsed;
    }
    // The tree is dropped at once and the file kept as its index, words and text, or where
    // its text is on disk (pruned): the project loads again the trees its analysis reads
    // (analysis::Project's constructor). One copy of each held text while the analysis
    // runs: it comes back to `original` after the rules. `fixed` is set by fix_one when
    // the file is rewritten, else to `original` at the end.
    index.forget_nodes();
    analysis::SourceFile file{input.path, std::move(place.module_name), place.is_package_init,
                              syntax::Tree::parse(std::string()), std::move(index), std::move(place.project),
                              place.isolated};
    file.pruned = true;
    if (out.disk) {
        file.on_disk = out.disk;
    } else {
        file.text = source;
    }
    file.words = std::move(words);
    tree = syntax::Tree::parse(std::string());  // the tree freed before the next file is read
    return file;
}

}  // namespace graphmend::fix

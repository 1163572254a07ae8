// The pipeline driver: see include/graphmend/fixer.hpp.
#include "graphmend/fixer.hpp"

#include "lone_effects.hpp"
#include "policy.hpp"

#include <dtl/dtl.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "graphmend/parallel.hpp"
#include "graphmend/runtime_module.hpp"
#include "graphmend/runtime_sources.hpp"
#include "graphmend/suppressions.hpp"

namespace graphmend {

using syntax::Node;

namespace {

// Passes of the fixed-point loop at most (ruff stops at 100; a nested `if` needs one
// pass per level).
constexpr int kMaxPasses = 4;

std::string_view runtime_source(const std::string& stem) {
    if (const runtime::Block* block = runtime::block_named(stem)) return block->source;
    throw std::logic_error("unknown runtime block: " + stem);
}

// The file's indentation unit: a tab, or the spaces of its first indented line.
std::string indent_unit(const analysis::SourceFile& file) {
    // The leading blanks of the first indented block's first statement (docstrings and
    // continuation lines do not count).
    const auto& src = file.tree.source();
    std::string unit;
    syntax::walk(file.tree.root(), [&](const Node& n) {
        if (!unit.empty()) return false;
        if (!n.is("block") || n.named_children().empty()) return true;
        const Node first = n.named_children()[0];
        const Node owner = n.parent();
        if (first.position().line == owner.position().line) return true;
        const std::string_view line = src.slice(src.line_start(first.position().line), first.begin());
        const std::string_view outer = src.slice(src.line_start(owner.position().line), owner.begin());
        if (line.size() > outer.size() && line.find_first_not_of(" \t") == std::string_view::npos) {
            unit = std::string(line.substr(outer.size()));
        }
        return unit.empty();
    });
    return unit.empty() ? "    " : unit;
}

// The runtime block in the file's line endings and indentation, without leading or
// trailing blank lines. The block is written with 4-space indentation.
std::string runtime_text(const std::string& stem, std::string_view eol, const std::string& indent) {
    std::string_view src = runtime_source(stem);
    while (!src.empty() && src.front() == '\n') src.remove_prefix(1);
    while (!src.empty() && src.back() == '\n') src.remove_suffix(1);
    std::string out;
    bool line_start = true;
    for (std::size_t i = 0; i < src.size(); ++i) {
        if (src[i] == '\n') {
            out += eol;
            line_start = true;
        } else if (line_start && src.substr(i).starts_with("    ")) {
            out += indent;
            i += 3;
        } else {
            line_start = false;
            out += src[i];
        }
    }
    return out;
}

edits::Edit runtime_edit(const analysis::SourceFile& file, const std::vector<std::string>& stems,
                         const std::vector<edits::Edit>& accepted) {
    const auto& source = file.tree.source();
    const std::string& text = source.text();
    const std::string eol(source.eol());
    std::string block;
    const std::string indent = indent_unit(file);
    for (const auto& stem : stems) block += runtime_text(stem, eol, indent) + eol;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> spans;
    for (const auto& e : accepted) spans.emplace_back(e.begin, std::max(e.end, e.begin + 1));
    if (const auto place = runtime_module::runtime_place(file.tree.root(), spans)) {
        return {*place, *place, block + eol + eol};
    }
    const bool ends_with_newline = !text.empty() && text.back() == '\n';
    const auto end = static_cast<std::uint32_t>(text.size());
    return {end, end, (ends_with_newline || text.empty() ? "" : eol) + eol + eol + block};
}

// The runtime block of `stem` the file holds, from its first marker line to the end of its
// end marker line, when its text is not this version's: an edit that writes this version's
// (in the file's line endings and indentation). nullopt when it is current or its end is
// not found (a block edited by hand is left alone).
std::optional<edits::Edit> stale_runtime_edit(const analysis::SourceFile& file, const std::string& stem) {
    const auto& source = file.tree.source();
    const std::string& text = source.text();
    const std::string current = runtime_text(stem, source.eol(), indent_unit(file));
    const std::string first = std::string(runtime::kMarker) + stem + " ";
    const std::string last = "# --- end of graphmend runtime: " + stem + " ---";
    std::size_t begin = std::string::npos;
    for (std::size_t at = text.find(first); at != std::string::npos; at = text.find(first, at + 1)) {
        if (at == 0 || text[at - 1] == '\n') {
            begin = at;
            break;
        }
    }
    if (begin == std::string::npos) return std::nullopt;
    const std::size_t end_at = text.find(last, begin);
    if (end_at == std::string::npos) return std::nullopt;
    const std::size_t end = end_at + last.size();
    if (std::string_view(text).substr(begin, end - begin) == current) return std::nullopt;
    return edits::Edit{static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(end), current};
}

// The Module form: `fixed` with the file's import of the runtime module naming every helper
// it uses (added, or extended in place).
std::string with_module_import(std::string fixed, const runtime_module::ImportForm& form, const std::string& indent,
                               FileOutcome& out) {
    const syntax::Tree tree = syntax::Tree::parse(fixed);
    if (tree.error()) return fixed;  // reported by the caller
    const auto edit = runtime_module::import_edit(tree, form, indent);
    out.imports_runtime = edit.has_value() || runtime_module::imports_module(tree.root());
    return edit ? edits::apply(fixed, {*edit}) : fixed;
}

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

std::string location(const std::string& path, syntax::LineCol where) {
    return fmt::format("{}:{}:{}", path, where.line, where.col);
}

// A site left out by the configuration or a comment.
struct Suppressed {
    std::uint32_t begin, end, line;
    std::string code;
};

// Keeps in `out.sites` the sites of selected rules that no noqa comment suppresses; counts
// the others and returns those a noqa comment suppresses.
std::vector<Suppressed> drop_suppressed(FileOutcome& out, const FileSettings* settings, const Suppressions& noqa) {
    std::vector<Suppressed> by_comment;
    std::erase_if(out.sites, [&](const rules::Site& site) {
        const bool selected = settings == nullptr || std::find(settings->selected.begin(), settings->selected.end(),
                                                               site.code) != settings->selected.end();
        const bool commented = noqa.suppresses(site.where.line, site.code);
        if (commented) by_comment.push_back({site.begin, site.end, site.where.line, site.code});
        out.suppressed += selected && !commented ? 0 : 1;
        return !selected || commented;
    });
    return by_comment;
}

// A site a noqa comment suppresses that one of `fix`'s edits would change, if any: a fix
// that rewrites a span holding one would silently rewrite it too.
const Suppressed* touches(const rules::Fix& fix, const std::vector<Suppressed>& suppressed) {
    for (const Suppressed& s : suppressed) {
        for (const edits::Edit& e : fix.edits) {
            const bool changes =
                e.begin == e.end ? s.begin < e.begin && e.begin < s.end : e.begin < s.end && s.begin < e.end;
            if (changes) return &s;
        }
    }
    return nullptr;
}

// The first `*` that the parse read as a space (syntax::normalize_grammar_gaps) inside one of
// `fix`'s edits: the rule built that edit from a tree without the `*`'s list_splat.
std::optional<std::uint32_t> over_starred_gap(const rules::Fix& fix, const std::vector<std::uint32_t>& starred) {
    for (const std::uint32_t at : starred) {
        for (const edits::Edit& e : fix.edits) {
            if (e.begin <= at && at < e.end) return at;
        }
    }
    return std::nullopt;
}

// What is left to do to a rewritten text once the project is gone (finish): the Module form's
// import, and the parse that checks the rewrite. Done then, the tree of the rewrite is never
// held next to the project's trees (a 50 MB file: one tree at a time).
struct Rewrite {
    std::optional<runtime_module::ImportForm> form;  // set: add or extend the import of the module
    std::string indent;                              // the file's indentation unit
};

// Runs the rules over one file of the project and applies its fixes to `out` (`out.fixed`,
// with what is left to do in `rewrite`). Reads only the (immutable) project and this file's
// tree: files are fixed in parallel.
void fix_one(const analysis::Project& project, const analysis::Values& values, std::size_t f,
             const FixOptions& options, const FileSettings* settings, const Suppressions& noqa, FileOutcome& out,
             std::optional<Rewrite>& rewrite) {
    if (out.skip_rules) return;
    const analysis::SourceFile& file = project.files()[f];
    rules::Claims claims;
    for (const auto& rule : rules::registry()) rule->claim(rules::Context{project, f, values}, claims);
    const rules::Context ctx{project, f, values, &claims};
    for (const auto& rule : rules::registry()) rule->check(ctx, out.sites);
    std::stable_sort(out.sites.begin(), out.sites.end(),
                     [](const rules::Site& a, const rules::Site& b) { return a.begin < b.begin; });
    const std::vector<Suppressed> suppressed = drop_suppressed(out, settings, noqa);
    out.applied.assign(out.sites.size(), false);
    const bool unsafe_fixes =
        settings != nullptr && settings->unsafe_fixes ? *settings->unsafe_fixes : options.unsafe_fixes;
    out.origin.assign(out.sites.size(), SiteOrigin::FirstPass);

    fix::refuse_abandoned_frames(out.sites, file.tree.root(), unsafe_fixes);
    {
        std::vector<bool> stays(out.sites.size());
        for (std::size_t s = 0; s < out.sites.size(); ++s) {
            const auto& fix = out.sites[s].fix;
            stays[s] = !fix || (fix->applicability == rules::Applicability::Unsafe && !unsafe_fixes);
        }
        driver::refuse_lone_effects(ctx, out.sites, stays);
    }

    std::vector<edits::Edit> accepted;
    std::vector<std::string> runtime;
    for (std::size_t s = 0; s < out.sites.size(); ++s) {
        rules::Site& site = out.sites[s];
        if (!site.fix) continue;
        if (site.fix->applicability == rules::Applicability::Unsafe && !unsafe_fixes) continue;
        if (const Suppressed* hidden = touches(*site.fix, suppressed)) {
            site.reason = fmt::format("its rewrite would change the {} site at line {}, which a noqa comment "
                                      "suppresses",
                                      hidden->code, hidden->line);
            site.fix.reset();
            continue;
        }
        if (const auto gap = over_starred_gap(*site.fix, file.tree.starred_gaps())) {
            site.reason = fmt::format("its rewrite would cover the starred operand at line {}, which the grammar "
                                      "(tree-sitter-python 0.23.6) reads only without its `*`",
                                      file.tree.source().position(*gap).line);
            site.fix.reset();
            continue;
        }
        const edits::Acceptance verdict = edits::accept(accepted, site.fix->edits);
        if (verdict.outcome == edits::Acceptance::Within && fix::retried_inside_rewrite(site)) {
            // A select inside another site's rewrite (a conditional expression or a tensor
            // `and` in a branch) is copied there as written, still breaking: the next pass
            // of the fixed-point loop rewrites it inside the new text.
            site.reason = fmt::format("inside the rewrite at line {}, which keeps it as written; rewritten in the "
                                      "next pass",
                                      file.tree.source().position(verdict.within).line);
            site.retry = true;
            site.fix.reset();
            continue;
        }
        if (verdict.outcome == edits::Acceptance::Within) {
            // Inside a span another fix rewrites, which turned it into its own form (a message
            // deferred with the test, a check gated by its branch).
            site.detail = fmt::format("as part of the rewrite at line {}",
                                      file.tree.source().position(verdict.within).line);
            out.applied[s] = true;
            continue;
        }
        if (verdict.outcome == edits::Acceptance::Overlaps) {
            site.reason = "its edit overlaps another site's fix";
            site.retry = true;
            site.fix.reset();
            continue;
        }
        for (const auto& stem : site.fix->runtime) {
            if (std::find(runtime.begin(), runtime.end(), stem) == runtime.end()) runtime.push_back(stem);
        }
        out.applied[s] = true;
    }
    if (accepted.empty()) return;
    // A file that imports the runtime module already keeps importing it, whatever the form asked.
    const bool module = out.runtime == RuntimeForm::Module || runtime_module::imports_module(file.tree.root());
    const auto form = module ? runtime_module::form_for(file) : std::nullopt;
    // A block the file already holds stays, unless an earlier graphmend wrote it: then it is
    // replaced by this version's (the fixes above may call helpers it lacks).
    if (!form) {
        for (const auto& stem : runtime) {
            if (!file.index.runtime_blocks.contains(stem)) continue;
            if (auto refresh = stale_runtime_edit(file, stem)) accepted.push_back(*refresh);
        }
    }
    std::erase_if(runtime, [&](const std::string& stem) { return file.index.runtime_blocks.contains(stem); });
    if (!runtime.empty() && !form) {
        accepted.push_back(runtime_edit(file, runtime, accepted));
        out.runtime_edit = accepted.back();
    }

    out.fixed = edits::apply(file.tree.source().text(), accepted);
    rewrite.emplace(Rewrite{form, form ? indent_unit(file) : std::string()});
}

// The rest of a rewrite (Rewrite): with `out.original` back, adds the Module form's import and
// parses the rewritten text; one that does not parse leaves the file unchanged, an internal error.
void finish(FileOutcome& out, const Rewrite& rewrite) {
    if (rewrite.form) out.fixed = with_module_import(std::move(out.fixed), *rewrite.form, rewrite.indent, out);
    const syntax::Tree reparsed = syntax::Tree::parse(out.fixed);
    if (const auto err = reparsed.error()) {
        out.error = fmt::format("{}: internal error: the rewritten file does not parse ({}:{}: {}); file left "
                                "unchanged",
                                out.path, err->where.line, err->where.col, err->message);
        out.error_kind = FileError::Internal;
        out.applied.assign(out.sites.size(), false);
        out.runtime_edit.reset();
        out.imports_runtime = false;
        std::string().swap(out.fixed);
    }
}


// A text whose lines end in a lone CR (classic Mac; CPython reads it), all or some of them:
// tree-sitter's grammar reads a `#` comment on to the next LF. Such a text is analysed and
// fixed with LF for each lone CR (syntax::lf_for_lone_crs: CR and LF are one byte each, so
// offsets are the same), and fix_files puts its CRs back (with_lone_crs): every byte outside
// a rewritten span is as it was. A text with no LF at all gets CRs in its rewrites too.
bool cr_only(std::string_view text) {
    return text.find('\r') != std::string_view::npos && text.find('\n') == std::string_view::npos;
}

// The lines of `text`, each with its '\n' (the last may have none).
std::vector<std::string> lines_with_ends(const std::string& text) {
    std::vector<std::string> lines;
    for (std::size_t start = 0; start < text.size();) {
        const std::size_t nl = text.find('\n', start);
        const std::size_t end = nl == std::string::npos ? text.size() : nl + 1;
        lines.push_back(text.substr(start, end - start));
        start = end;
    }
    return lines;
}

// `fixed`, a rewrite of `original` (both with LF for each lone CR), with a CR again at each
// LF it kept from `original` at one of the offsets `crs` (sorted). The kept bytes are those
// of the lines a line diff keeps, and, in a run of changed lines, those a byte diff of the
// run keeps (line by line when the run keeps its line count; for a text over kByteDiffLimit
// bytes, whose byte diff could take long, its common first and last bytes); a rewrite's own
// line ends stay LF, except one right after a CR, which
// is a CR too (a CR then an LF would be one line end, CRLF, where the rewrite had two).
constexpr std::size_t kByteDiffLimit = 64 * 1024;

std::string with_lone_crs(const std::string& original, const std::string& fixed, const std::vector<std::uint32_t>& crs) {
    const auto is_cr = [&](std::size_t offset) { return std::binary_search(crs.begin(), crs.end(), offset); };
    std::string out;
    out.reserve(fixed.size());
    enum Kind : char { Kept, Added, Cr };  // per byte of `out`: Cr, a lone CR put back
    std::vector<Kind> kinds;
    kinds.reserve(fixed.size());
    const auto put = [&](char c, Kind kind) {
        out += c;
        kinds.push_back(kind);
    };
    // One removed text and the text that replaced it, from `from` in `original`.
    const auto merge = [&](const std::string& removed, const std::string& added, std::size_t from) {
        if (removed.empty() || removed.size() + added.size() > kByteDiffLimit) {
            std::size_t head = 0;
            while (head < removed.size() && head < added.size() && removed[head] == added[head]) ++head;
            std::size_t tail = 0;
            while (tail < removed.size() - head && tail < added.size() - head &&
                   removed[removed.size() - 1 - tail] == added[added.size() - 1 - tail]) {
                ++tail;
            }
            for (std::size_t k = 0; k < added.size(); ++k) {
                const bool kept = k < head || k >= added.size() - tail;
                const std::size_t at = k < head ? k : removed.size() - (added.size() - k);
                const bool kept_cr = kept && added[k] == '\n' && is_cr(from + at);
                put(kept_cr ? '\r' : added[k], kept_cr ? Cr : kept ? Kept : Added);
            }
            return;
        }
        dtl::Diff<char, std::string> bytes(removed, added);
        bytes.compose();
        for (const auto& [c, info] : bytes.getSes().getSequence()) {
            if (info.type == dtl::SES_DELETE) continue;
            const bool kept = info.type == dtl::SES_COMMON;
            const bool kept_cr = kept && c == '\n' && is_cr(from + static_cast<std::size_t>(info.beforeIdx - 1));
            put(kept_cr ? '\r' : c, kept_cr ? Cr : kept ? Kept : Added);
        }
    };
    std::size_t run_start = 0;  // the offset in `original` of the run of lines removed
    std::vector<std::string> removed, added;
    // A run of changed lines: line by line when it keeps its line count (graphmend's rewrites
    // keep line numbers), else as one text.
    const auto flush = [&] {
        if (removed.size() == added.size()) {
            for (std::size_t k = 0; k < removed.size(); ++k) {
                merge(removed[k], added[k], run_start);
                run_start += removed[k].size();
            }
        } else {
            std::string gone, come;
            for (const auto& line : removed) gone += line;
            for (const auto& line : added) come += line;
            if (gone.empty()) {
                for (const char c : come) put(c, Added);
            } else {
                merge(gone, come, run_start);
            }
            run_start += gone.size();
        }
        removed.clear();
        added.clear();
    };
    dtl::Diff<std::string> lines(lines_with_ends(original), lines_with_ends(fixed));
    lines.compose();
    for (const auto& [line, info] : lines.getSes().getSequence()) {
        if (info.type == dtl::SES_DELETE) {
            removed.push_back(line);
        } else if (info.type == dtl::SES_ADD) {
            added.push_back(line);
        } else {
            flush();
            for (const char c : line) put(c, Kept);
            if (line.back() == '\n' && is_cr(run_start + line.size() - 1)) {
                out.back() = '\r';
                kinds.back() = Cr;
            }
            run_start += line.size();
        }
    }
    flush();
    for (std::size_t i = 0; i + 1 < out.size(); ++i) {
        if (kinds[i] != Cr || out[i + 1] != '\n') continue;
        if (kinds[i + 1] == Added) {
            out[i + 1] = '\r';
            kinds[i + 1] = Cr;
        } else {
            out[i] = '\n';  // a kept LF after a kept CR whose text between was removed: one byte changes
        }
    }
    return out;
}

// One pass of the pipeline over all files. Files whose `rules_on` entry is false, or with a
// skip-file comment, are parsed and analysed (they are part of the project) but get no rules.
// The first pass (empty `noqa`) finds each file's suppression comments; later passes, over
// rewritten texts with the same line numbers, use the first pass's. `expected`, in a later
// pass: per input read from disk, the file as the first pass read it; another is SourceChanged.
std::vector<FileOutcome> run_pass(std::vector<InputFile> inputs, const FixOptions& options,
                                  const std::vector<bool>* rules_on, std::vector<Suppressions>& noqa,
                                  const std::vector<std::optional<analysis::DiskText>>* expected = nullptr) {
    const std::size_t n = inputs.size();
    const bool first = noqa.empty();
    if (first) noqa.resize(n);
    std::vector<FileOutcome> outcomes(n);
    for (std::size_t i = 0; rules_on != nullptr && i < n; ++i) outcomes[i].skip_rules = !(*rules_on)[i];
    // 1. Parse and index every file (in parallel: each file is its own work).
    std::vector<std::optional<analysis::SourceFile>> parsed(n);
    std::atomic<std::size_t> done{0};
    const auto report = [&](std::string_view stage, std::size_t total) {
        if (options.progress) options.progress(stage, ++done, total);
    };
    parallel_for(n, options.threads, [&](std::size_t i) {
        FileOutcome& out = outcomes[i];
        out.path = inputs[i].path;
        out.runtime = inputs[i].runtime;
        std::string text;
        if (inputs[i].from_disk) {
            const analysis::DiskText* want = expected != nullptr && (*expected)[i] ? &*(*expected)[i] : nullptr;
            try {
                text = syntax::read_file(inputs[i].path);
            } catch (const std::runtime_error& e) {
                if (want) throw analysis::SourceChanged(e.what());
                out.error = e.what();
                out.error_kind = FileError::Read;
                report("parsed", n);
                return;
            }
            out.disk = analysis::DiskText::of(text);
            if (want && !want->same_bytes(*out.disk)) {
                throw analysis::SourceChanged(inputs[i].path + ": changed on disk while graphmend read it");
            }
        } else {
            text = std::move(inputs[i].text);
        }
        const bool only_crs = cr_only(text);
        if (text.find('\r') != std::string::npos) {
            const std::string before = only_crs || !first ? std::string() : text;
            if (syntax::lf_for_lone_crs(text) > 0) {
                if (out.disk) out.disk->lone_crs = true;
                out.cr_only = only_crs;
                for (std::size_t k = 0; k < before.size(); ++k) {
                    if (before[k] != text[k]) out.lone_crs.push_back(static_cast<std::uint32_t>(k));
                }
            }
        }
        analysis::ModulePlace place = analysis::place_module(inputs[i].path);
        out.project = project_as_given(inputs[i].path, place.project);
        syntax::Tree tree = syntax::Tree::parse(std::move(text));
        const std::string& source = tree.source().text();
        if (const auto err = tree.error()) {
            out.original = source;
            out.error = fmt::format("{}: {}; file left unchanged", location(inputs[i].path, err->where), err->message);
            out.error_at = err->where;
            report("parsed", n);
            return;
        }
        if (first) {
            noqa[i] = find_suppressions(tree, inputs[i].path);
            out.warnings = noqa[i].warnings;
            out.skip_rules = out.skip_rules || noqa[i].skip_file;
        }
        auto index = analysis::index_module(tree.root());
        std::vector<std::uint32_t> words = analysis::word_hashes(source);
        if (options.keep_trees) {
            out.original = source;
            parsed[i].emplace(analysis::SourceFile{inputs[i].path, std::move(place.module_name), place.is_package_init,
                                                   std::move(tree), std::move(index), std::move(place.project),
                                                   place.isolated});
            parsed[i]->words = std::move(words);
            report("parsed", n);
            return;
        }
        // The tree is dropped at once and the file kept as its index, words and text, or where
        // its text is on disk (pruned): the project loads again the trees its analysis reads
        // (analysis::Project's constructor). One copy of each held text while the analysis
        // runs: it comes back to `original` after the rules. `fixed` is set by fix_one when
        // the file is rewritten, else to `original` at the end.
        index.forget_nodes();
        analysis::SourceFile file{inputs[i].path, std::move(place.module_name), place.is_package_init,
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
        parsed[i].emplace(std::move(file));
        report("parsed", n);
    });
    // 2. The project-wide analysis, on this thread, in input order, over the trees of the
    // files it can reach; the others stay indexes (README, "Memory").
    std::vector<analysis::SourceFile> files;
    std::vector<std::size_t> input_of_file;
    for (std::size_t i = 0; i < n; ++i) {
        if (!parsed[i]) continue;
        input_of_file.push_back(i);
        files.push_back(std::move(*parsed[i]));
    }
    parsed.clear();
    std::vector<std::optional<Rewrite>> rewrites(n);
    {
        analysis::Project project(
            std::move(files), [&](std::vector<analysis::SourceFile>& all, const std::vector<std::size_t>& load) {
                parallel_for(load.size(), options.threads, [&](std::size_t k) { analysis::load_file(all[load[k]]); });
            });
        const analysis::Values values(project);
        // 3. Rules and fixes, per file (in parallel; each outcome is written by one thread only).
        done = 0;
        parallel_for(input_of_file.size(), options.threads, [&](std::size_t f) {
            const std::size_t i = input_of_file[f];
            fix_one(project, values, f, options, inputs[i].settings.get(), noqa[i], outcomes[i], rewrites[i]);
            report("fixed", input_of_file.size());
        });
        // A file read from disk, left as it was, without a site: its outcome holds no text.
        // The others' texts come back to their outcomes.
        for (std::size_t f = 0; f < input_of_file.size(); ++f) {
            FileOutcome& out = outcomes[input_of_file[f]];
            if (first) out.notes = project.notes(f);
            analysis::SourceFile& file = project.files()[f];
            if (out.disk && out.fixed.empty() && out.sites.empty() && !out.error) {
                std::string().swap(out.original);
                out.texts_on_disk = true;
            } else if (!options.keep_trees) {
                out.original = !file.pruned ? std::string(file.tree.source().text())
                               : file.on_disk ? analysis::read_source(file)
                                              : std::move(file.text);
            }
        }
    }
    // 4. The rewrites checked, once the project's trees are freed.
    parallel_for(n, options.threads, [&](std::size_t i) {
        if (rewrites[i]) finish(outcomes[i], *rewrites[i]);
    });
    // A rewritten text is never empty (a fix adds to it); an empty `fixed` is a file left as it was.
    for (FileOutcome& out : outcomes) {
        if (out.fixed.empty()) out.fixed = out.original;
    }
    return outcomes;
}

// Takes the sites a later pass fixed into the outcome of the passes before: a site the
// earlier pass refused on the same line, by the same rule, becomes fixed; a site found
// only now is added. Rewrites keep line counts, so lines match the original file's.
void merge_pass(FileOutcome& out, FileOutcome&& later) {
    out.fixed = std::move(later.fixed);
    out.imports_runtime = out.imports_runtime || later.imports_runtime;
    for (std::size_t s = 0; s < later.sites.size(); ++s) {
        if (!later.applied[s]) continue;
        rules::Site& site = later.sites[s];
        bool merged = false;
        for (std::size_t j = 0; j < out.sites.size() && !merged; ++j) {
            rules::Site& old = out.sites[j];
            if (out.applied[j] || old.code != site.code || old.where.line != site.where.line) continue;
            old.fix = std::move(site.fix);
            old.detail = site.detail;
            old.reason.clear();
            old.graph_break = site.graph_break;
            out.applied[j] = true;
            out.origin[j] = SiteOrigin::FixedLater;
            merged = true;
        }
        // A site kept as written inside another rewrite that moved it to another line (an
        // early return's rest, taken into the select's lambda): the refusal with its text.
        for (std::size_t j = 0; j < out.sites.size() && !merged; ++j) {
            rules::Site& old = out.sites[j];
            if (out.applied[j] || !old.retry || old.code != site.code || old.what != site.what) continue;
            old.fix = std::move(site.fix);
            old.detail = site.detail;
            old.reason.clear();
            old.retry = false;
            old.graph_break = site.graph_break;
            out.applied[j] = true;
            out.origin[j] = SiteOrigin::FixedLater;
            merged = true;
        }
        if (!merged) {
            out.sites.push_back(std::move(site));
            out.applied.push_back(true);
            out.origin.push_back(SiteOrigin::FoundLater);
        }
    }
    std::vector<std::size_t> order(out.sites.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const auto& x = out.sites[a].where;
        const auto& y = out.sites[b].where;
        return x.line != y.line ? x.line < y.line : x.col < y.col;
    });
    std::vector<rules::Site> sites;
    std::vector<bool> applied;
    std::vector<SiteOrigin> origin;
    for (std::size_t i : order) {
        sites.push_back(std::move(out.sites[i]));
        applied.push_back(out.applied[i]);
        origin.push_back(out.origin[i]);
    }
    out.sites = std::move(sites);
    out.applied = std::move(applied);
    out.origin = std::move(origin);
}

}  // namespace

TextLines TextLines::of(std::string_view text) {
    // A line ends at LF, and at a lone CR (not followed by LF), as CPython and fix_files read it.
    TextLines t;
    t.size = static_cast<std::uint32_t>(text.size());
    bool wide = false;
    for (std::uint32_t i = 0; i < text.size(); ++i) {
        wide = wide || static_cast<unsigned char>(text[i]) >= 0x80;
        const bool eol = text[i] == '\n' || (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n'));
        if (!eol && i + 1 != text.size()) continue;
        if (wide) t.wide.emplace(static_cast<std::uint32_t>(t.starts.size()), text.substr(t.starts.back(), i + 1 - t.starts.back()));
        wide = false;
        if (eol) t.starts.push_back(i + 1);
    }
    return t;
}

std::uint32_t TextLines::column(std::uint32_t line, std::uint32_t byte_col) const {
    if (line == 0 || line > starts.size() || byte_col == 0) return byte_col;
    const auto it = wide.find(line);
    if (it == wide.end()) return byte_col;  // ASCII: a byte is a column
    const std::string& bytes = it->second;
    const std::size_t end = std::min<std::size_t>(bytes.size(), byte_col - 1);
    std::uint32_t col = 1;
    for (std::size_t i = 0; i < end; ++i) {
        // Count the bytes that start a UTF-8 sequence (not continuation bytes 10xxxxxx).
        col += (static_cast<unsigned char>(bytes[i]) & 0xC0) != 0x80 ? 1 : 0;
    }
    return col + static_cast<std::uint32_t>(byte_col - 1 - end);  // past the line: as bytes
}

std::vector<std::vector<std::size_t>> independent_groups(const std::vector<std::string>& paths) {
    std::vector<std::vector<std::size_t>> groups;
    std::vector<std::size_t> all;
    std::set<std::string> closed;  // projects whose run of files ended
    std::string current;
    bool split = true;
    for (std::size_t i = 0; i < paths.size(); ++i) {
        all.push_back(i);
        const analysis::ModulePlace place = analysis::place_module(paths[i]);
        // A package file may be imported by every project: one group.
        if (!place.isolated || closed.contains(place.project)) split = false;
        if (!split) continue;
        if (groups.empty() || place.project != current) {
            if (!groups.empty()) closed.insert(current);
            current = place.project;
            groups.emplace_back();
        }
        groups.back().push_back(i);
    }
    if (split) return groups;
    if (all.empty()) return {};
    return {all};
}

namespace {

// fix_files's passes over the inputs; throws SourceChanged when an input read from disk is
// found changed when it is read again.
std::vector<FileOutcome> fix_all(std::vector<InputFile> inputs, const FixOptions& options) {
    std::vector<std::shared_ptr<const FileSettings>> settings;
    for (const InputFile& in : inputs) settings.push_back(in.settings);
    std::vector<Suppressions> noqa;
    std::vector<analysis::ModulePlace> places;
    for (const InputFile& in : inputs) places.push_back(analysis::place_module(in.path));
    std::vector<FileOutcome> outcomes = run_pass(std::move(inputs), options, nullptr, noqa);
    // ruff's fixed-point loop: a file that a pass rewrote and that still has refused sites
    // is run again over its rewritten text (a site refused because of another site inside
    // it, a nested `if`, can be fixed once that one is), until no pass fixes more.
    for (int pass = 1; pass < kMaxPasses; ++pass) {
        std::vector<bool> again(outcomes.size(), false);
        bool any = false;
        for (std::size_t i = 0; i < outcomes.size(); ++i) {
            const FileOutcome& o = outcomes[i];
            if (o.error || !o.changed()) continue;
            for (std::size_t s = 0; s < o.sites.size(); ++s) {
                if (!o.applied[s] && o.sites[s].retry) again[i] = true;
            }
            any = any || again[i];
        }
        if (!any) break;
        // The pass runs over the files its analysis can depend on: every package file (any
        // project may import a package) and the files of the folder projects with a file to
        // run again (a folder project is visible only to itself). A batch of checkouts then
        // re-analyses only the checkouts that need it, as their separate runs would.
        std::set<std::string> again_projects;
        for (std::size_t i = 0; i < outcomes.size(); ++i) {
            if (again[i]) again_projects.insert(places[i].project);
        }
        std::vector<std::size_t> subset;
        for (std::size_t i = 0; i < outcomes.size(); ++i) {
            if (outcomes[i].error_kind == FileError::Read && outcomes[i].error) continue;
            if (!places[i].isolated || again_projects.contains(places[i].project)) subset.push_back(i);
        }
        std::vector<InputFile> next;
        std::vector<bool> sub_again;
        std::vector<Suppressions> sub_noqa;
        std::vector<std::optional<analysis::DiskText>> expected;
        for (std::size_t i : subset) {
            const FileOutcome& o = outcomes[i];
            if (o.texts_on_disk) {
                next.push_back({o.path, std::string(), settings[i], o.runtime, true});
                expected.push_back(o.disk);
            } else {
                next.push_back({o.path, o.fixed, settings[i], o.runtime});
                expected.emplace_back();
            }
            sub_again.push_back(again[i]);
            sub_noqa.push_back(noqa[i]);
        }
        std::vector<FileOutcome> more = run_pass(std::move(next), options, &sub_again, sub_noqa, &expected);
        bool progress = false;
        for (std::size_t k = 0; k < subset.size(); ++k) {
            const std::size_t i = subset[k];
            if (!again[i] || more[k].error || !more[k].changed()) continue;
            merge_pass(outcomes[i], std::move(more[k]));
            progress = true;
        }
        if (!progress) break;
    }
    // A lone-CR file's texts, and the edits a report shows, in its own line endings. A file
    // with some lone CRs gets them back where its bytes were kept; its rewrites' lines end in LF.
    const auto to_cr = [](std::string& text) { std::replace(text.begin(), text.end(), '\n', '\r'); };
    for (FileOutcome& o : outcomes) {
        if (!o.lone_crs.empty() && !o.original.empty()) {
            std::string original = o.original;
            for (const std::uint32_t k : o.lone_crs) original[k] = '\r';
            o.fixed = o.fixed == o.original ? original : with_lone_crs(o.original, o.fixed, o.lone_crs);
            o.original = std::move(original);
        }
        o.lone_crs = {};
        if (!o.cr_only) continue;
        to_cr(o.fixed);
        to_cr(o.original);
        if (o.runtime_edit) to_cr(o.runtime_edit->text);
        for (rules::Site& site : o.sites) {
            if (!site.fix) continue;
            for (edits::Edit& e : site.fix->edits) to_cr(e.text);
        }
    }
    return outcomes;
}

}  // namespace

std::vector<FileOutcome> fix_files(std::vector<InputFile> inputs, const FixOptions& options) {
    const bool all_on_disk =
        std::all_of(inputs.begin(), inputs.end(), [](const InputFile& in) { return in.from_disk; });
    std::vector<InputFile> again;  // a second run's inputs: paths only
    if (all_on_disk) again = inputs;
    std::vector<std::string> paths;
    for (const InputFile& in : inputs) paths.push_back(in.path);
    std::string changed;
    // A file that changes on disk while the inputs are fixed: they are fixed again from the
    // start, from what is on disk then; inputs held in memory cannot be.
    for (int attempt = 0; attempt < (all_on_disk ? 2 : 1); ++attempt) {
        try {
            return fix_all(attempt == 0 ? std::move(inputs) : again, options);
        } catch (const analysis::SourceChanged& e) {
            changed = e.what();
        }
    }
    std::vector<FileOutcome> outcomes(paths.size());
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
        FileOutcome& o = outcomes[i];
        o.path = paths[i];
        o.project = project_as_given(o.path, analysis::place_module(o.path).project);
        o.error = fmt::format("{}: left as it was: {}", o.path, changed);
        o.error_kind = FileError::Read;
    }
    return outcomes;
}

}  // namespace graphmend

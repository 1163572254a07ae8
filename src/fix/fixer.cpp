// The pipeline driver: see include/graphmend/fixer.hpp.
#include "graphmend/fixer.hpp"

#include "lone_crs.hpp"
#include "parse_input.hpp"
#include "pass.hpp"
#include "lone_effects.hpp"
#include "policy.hpp"
#include "runtime_placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
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

// The sites `settings` holds back (fix --verify reverted them): refused, with its reason.
void hold_back(std::vector<rules::Site>& sites, const FileSettings* settings) {
    if (settings == nullptr || settings->held.empty()) return;
    for (rules::Site& site : sites) {
        for (const auto& [line, code] : settings->held) {
            if (site.where.line == line && site.code == code && site.fix) {
                site.fix.reset();
                site.reason = settings->held_reason;
            }
        }
    }
}

// GRAPHMEND_TEST_NOOP_FIX=CODE, for tests only (tests/python/test_verify.py): the fixes of the
// rule with that code keep their claim but change nothing, so the break stays and `fix --verify`
// has a fix to revert. Each edit is replaced by one that writes the byte it replaces.
void test_noop_fixes(std::vector<rules::Site>& sites, std::string_view text) {
    static const char* const code = std::getenv("GRAPHMEND_TEST_NOOP_FIX");
    if (code == nullptr || *code == '\0') return;
    for (rules::Site& site : sites) {
        if (!site.fix || site.code != code || site.begin >= text.size()) continue;
        site.fix->edits = {edits::Edit{site.begin, site.begin + 1, std::string(text.substr(site.begin, 1))}};
        site.fix->runtime.clear();
    }
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
    hold_back(out.sites, settings);
    test_noop_fixes(out.sites, file.tree.source().text());
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
        fix::refuse_lone_effects(ctx, out.sites, stays);
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
            if (auto refresh = fix::stale_runtime_edit(file, stem)) accepted.push_back(*refresh);
        }
    }
    std::erase_if(runtime, [&](const std::string& stem) { return file.index.runtime_blocks.contains(stem); });
    if (!runtime.empty() && !form) {
        accepted.push_back(fix::runtime_edit(file, runtime, accepted));
        out.runtime_edit = accepted.back();
    }

    out.fixed = edits::apply(file.tree.source().text(), accepted);
    rewrite.emplace(Rewrite{form, form ? fix::indent_unit(file) : std::string()});
}

// The rest of a rewrite (Rewrite): with `out.original` back, adds the Module form's import and
// parses the rewritten text; one that does not parse leaves the file unchanged, an internal error.
void finish(FileOutcome& out, const Rewrite& rewrite) {
    if (rewrite.form) out.fixed = fix::with_module_import(std::move(out.fixed), *rewrite.form, rewrite.indent, out);
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


}  // namespace

}  // namespace graphmend

namespace graphmend::fix {

// See pass.hpp.
std::vector<FileOutcome> run_pass(std::vector<InputFile> inputs, const FixOptions& options,
                                  const std::vector<bool>* rules_on, std::vector<Suppressions>& noqa,
                                  const std::vector<std::optional<analysis::DiskText>>* expected) {
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
        const analysis::DiskText* want = expected != nullptr && (*expected)[i] ? &*(*expected)[i] : nullptr;
        parsed[i] = fix::parse_input(inputs[i], outcomes[i], first ? &noqa[i] : nullptr, want, options.keep_trees);
        report("parsed", n);
    });
    // 2. The project-wide analysis, on this thread, in input order, over the trees of the
    // files it can reach; the others stay indexes (docs/measuring.md, "Memory").
    std::vector<analysis::SourceFile> files;
    std::vector<std::size_t> input_of_file;
    for (std::size_t i = 0; i < n; ++i) {
        if (!parsed[i]) continue;
        input_of_file.push_back(i);
        files.push_back(std::move(*parsed[i]));
        if (inputs[i].settings) {
            files.back().scope_roots = inputs[i].settings->scope_roots;
            files.back().data_tests = inputs[i].settings->data_tests;
            files.back().data_reads = inputs[i].settings->data_reads;
            files.back().data_operators = inputs[i].settings->data_operators;
        }
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

}  // namespace graphmend::fix

namespace graphmend {

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

}  // namespace graphmend

// The fixed-point loop: fix_files (include/graphmend/fixer.hpp) runs passes (pass.hpp) until no
// pass fixes more, then puts back a lone-CR file's line ends.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>

#include "graphmend/fixer.hpp"
#include "lone_crs.hpp"
#include "parse_input.hpp"
#include "pass.hpp"

namespace graphmend::fix {

namespace {

// Passes of the fixed-point loop at most (ruff stops at 100; a nested `if` needs one
// pass per level).
constexpr int kMaxPasses = 4;

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

}  // namespace graphmend::fix

namespace graphmend {

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
            return fix::fix_all(attempt == 0 ? std::move(inputs) : again, options);
        } catch (const analysis::SourceChanged& e) {
            changed = e.what();
        }
    }
    std::vector<FileOutcome> outcomes(paths.size());
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
        FileOutcome& o = outcomes[i];
        o.path = paths[i];
        o.project = fix::project_as_given(o.path, analysis::place_module(o.path).project);
        o.error = fmt::format("{}: left as it was: {}", o.path, changed);
        o.error_kind = FileError::Read;
    }
    return outcomes;
}

}  // namespace graphmend

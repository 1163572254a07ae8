// Report formats, exit codes, colour and progress, on hand-built FileOutcomes.
#include <cstdio>
#include <cstdlib>

#include <gtest/gtest.h>

#include "graphmend/output.hpp"

namespace {

using namespace graphmend;
using output::Mode;
using output::Results;

// Line 2 holds a two-byte character before its site: byte column 11, code-point column 10.
const std::string kText = "import torch\ns = '\xc3\xa9'; print(s)\ny = x.nonzero()\nif t: z = 1\n";

rules::Site site_at(const std::string& code, const std::string& rule, const std::string& needle) {
    rules::Site s;
    s.code = code;
    s.rule = rule;
    s.begin = static_cast<std::uint32_t>(kText.find(needle));
    s.end = s.begin + static_cast<std::uint32_t>(needle.size());
    const auto line_start = kText.rfind('\n', s.begin);
    s.where.line = 1 + static_cast<std::uint32_t>(std::count(kText.begin(), kText.begin() + s.begin, '\n'));
    s.where.col = s.begin - (line_start == std::string::npos ? 0 : static_cast<std::uint32_t>(line_start) + 1) + 1;
    s.what = needle.substr(0, needle.find('(')) + "(...)";
    return s;
}

// m.py: GM101 fixed (with a runtime block), GM401 refused, GM201 unsafe, in project "p".
FileOutcome model() {
    FileOutcome o;
    o.path = "m.py";
    o.project = "p";
    o.original = kText;
    rules::Site print = site_at("GM101", "deferred-side-effect", "print(s)");
    print.graph_break = "GB0059";
    print.fix = rules::Fix{{{print.begin, print.begin + 5, "_graphmend_print"}}, rules::Applicability::Safe,
                           {"deferred_effects"}};
    rules::Site nonzero = site_at("GM401", "data-dependent-shape", "x.nonzero()");
    nonzero.graph_break = "GB0036";
    nonzero.reason = "no select can express it";
    rules::Site branch = site_at("GM201", "predicated-control-flow", "if t: z = 1");
    branch.what = "if t";
    branch.graph_break = "GB0170";
    branch.detail = "z selected";
    branch.fix = rules::Fix{{{branch.begin, branch.end, "z = sel(t)"}}, rules::Applicability::Unsafe, {}};
    o.sites = {print, nonzero, branch};
    o.applied = {true, false, false};
    const auto end = static_cast<std::uint32_t>(kText.size());
    o.runtime_edit = edits::Edit{end, end, "# rt\n"};
    o.fixed = edits::apply(kText, {print.fix->edits[0], *o.runtime_edit});
    return o;
}

FileOutcome syntax_error() {
    FileOutcome o;
    o.path = "bad.py";
    o.project = "q";
    o.original = o.fixed = "def f(:\n";
    o.error = "bad.py:1:7: syntax error: missing ')'; file left unchanged";
    o.error_at = {1, 7};
    return o;
}

Results results(const std::vector<FileOutcome>& outcomes, Mode mode = Mode::Check) {
    return Results{outcomes, mode, std::vector<bool>(outcomes.size(), false),
                   std::vector<std::string>(outcomes.size()), {}};
}

TEST(Output, StatusesAndCodePointColumns) {
    const FileOutcome o = model();
    EXPECT_EQ(output::site_status(o, 0, Mode::Fix), output::SiteStatus::Fixed);
    // check and --diff write nothing: the site is fixable there, not fixed (ruff: "Would fix").
    EXPECT_EQ(output::site_status(o, 0, Mode::Check), output::SiteStatus::Fixable);
    EXPECT_EQ(output::site_status(o, 0, Mode::Diff), output::SiteStatus::Fixable);
    EXPECT_EQ(output::site_status(o, 1, Mode::Fix), output::SiteStatus::Refused);
    EXPECT_EQ(output::site_status(o, 2, Mode::Fix), output::SiteStatus::Unsafe);
    const output::Placer placer(o.original);
    const output::Range r = output::site_range(o, 0, placer);
    EXPECT_EQ(o.sites[0].where.col, 11u);  // bytes
    EXPECT_EQ(r.start.column, 10u);        // code points
    EXPECT_EQ(r.end.column, 18u);
    EXPECT_EQ(*r.start.offset, o.sites[0].begin);
    EXPECT_EQ(*r.end.offset, o.sites[0].end);
}

// A batch releases each file's texts once it is delivered (src/app/session.cpp): every report must
// place sites and edits as it did from the text, code-point columns included.
TEST(Output, ReleasedTextsPlaceEverySiteAndEditAsTheTextDid) {
    FileOutcome o = model();
    const std::string before = output::text_report(o, Mode::Fix) + output::concise_report(o, Mode::Fix);
    const output::Placer from_text(o.original);
    std::vector<output::Position> positions;
    for (std::uint32_t at = 0; at <= o.original.size() + 2; ++at) positions.push_back(from_text.at(at));
    const bool changed = o.changed();
    o.release_texts();
    EXPECT_TRUE(o.original.empty());
    EXPECT_TRUE(o.fixed.empty());
    EXPECT_EQ(o.changed(), changed);
    ASSERT_TRUE(o.lines.has_value());
    EXPECT_FALSE(o.lines->wide.empty());  // the model has a non-ASCII line
    const output::Placer from_lines(o);
    for (std::uint32_t at = 0; at < positions.size(); ++at) {
        const output::Position p = from_lines.at(at);
        EXPECT_EQ(p.line, positions[at].line) << at;
        EXPECT_EQ(p.column, positions[at].column) << at;
        EXPECT_EQ(p.offset, positions[at].offset) << at;
    }
    EXPECT_EQ(output::text_report(o, Mode::Fix) + output::concise_report(o, Mode::Fix), before);
}

TEST(Output, TextConciseGrouped) {
    const FileOutcome o = model();
    const std::string text = output::text_report(o, Mode::Fix);
    EXPECT_EQ(text.substr(0, text.find('\n')),
              "m.py:2:10: GM101 [fixed] print(...): removes graph break GB0059 (deferred-side-effect)");
    EXPECT_NE(text.find("m.py:4:1: GM201 [unsafe fix not applied (--unsafe-fixes)] if t: left as it is; the fix "
                        "would give z selected\n"),
              std::string::npos);
    EXPECT_TRUE(text.ends_with("m.py: 3 sites found, 1 fixed, 2 refused\n"));
    const std::string concise = output::concise_report(o, Mode::Fix);
    EXPECT_EQ(concise, text.substr(0, text.rfind("m.py: 3 sites")));
    EXPECT_EQ(output::grouped_report(o, Mode::Fix),
              "m.py:\n"
              "  2:10 GM101 [fixed] print(...): removes graph break GB0059 (deferred-side-effect)\n"
              "  3:5  GM401 [refused] x.nonzero(...): no select can express it\n"
              "  4:1  GM201 [unsafe fix not applied (--unsafe-fixes)] if t: left as it is; the fix would give z "
              "selected\n\n");
    EXPECT_EQ(output::grouped_report(syntax_error(), Mode::Fix),
              "bad.py:\n  1:7 syntax error: missing ')'; file left unchanged\n\n");
}

// check and --diff write nothing, so no format of theirs says "fixed".
TEST(Output, CheckAndDiffSayFixableNeverFixed) {
    const std::vector<FileOutcome> outcomes{model(), syntax_error()};
    const FileOutcome& o = outcomes[0];
    for (const Mode mode : {Mode::Check, Mode::Diff}) {
        const std::string text = output::text_report(o, mode);
        EXPECT_EQ(text.substr(0, text.find('\n')),
                  "m.py:2:10: GM101 [fixable] print(...): removes graph break GB0059 (deferred-side-effect)");
        EXPECT_TRUE(text.ends_with("m.py: 3 sites found, 1 fixable, 2 refused\n")) << text;
        EXPECT_EQ(output::findings_report(o, mode),
                  "m.py:2:10: GM101 [fixable] print(...): removes graph break GB0059 (deferred-side-effect)\n");
        EXPECT_TRUE(output::grouped_report(o, mode).starts_with("m.py:\n  2:10 GM101 [fixable] print(...)"));
        const Results r = results(outcomes, mode);
        const auto j = output::json_report(r);
        EXPECT_EQ(j["files"][0]["sites"][0]["status"], "fixable");
        EXPECT_EQ(j["files"][0]["sites"][0]["fix"]["applied"], false);  // nothing was written
        EXPECT_EQ(j["totals"]["fixed"], 0);
        EXPECT_EQ(j["totals"]["fixable"], 1);
        EXPECT_EQ(j["totals"]["codes"]["GM101"]["fixable"], 1);
        const auto sarif = output::sarif_report(r)["runs"][0]["results"][0];
        EXPECT_EQ(sarif["properties"]["status"], "fixable");
        EXPECT_EQ(sarif["message"]["text"].get<std::string>().rfind("GM101 [fixable] ", 0), 0u);
        std::string all = text + output::grouped_report(o, mode) + output::statistics_report(r) +
                          output::fixes_report(r) + output::batch_summary(r) + output::github_report(r);
        EXPECT_EQ(all.find("fixed"), std::string::npos) << all;
        EXPECT_EQ(output::exit_code(r, {}), 1);
    }
    // fix: the same site is fixed, and `applied` (its text was written or printed).
    const auto j = output::json_report(results(outcomes, Mode::Fix));
    EXPECT_EQ(j["files"][0]["sites"][0]["status"], "fixed");
    EXPECT_EQ(j["files"][0]["sites"][0]["fix"]["applied"], true);
    EXPECT_EQ(j["files"][0]["sites"][0]["condition"], nullptr);
    EXPECT_EQ(j["totals"]["fixed"], 1);
    EXPECT_EQ(j["totals"]["fixable"], 0);
}

// A fix that removes the break only under a condition is reported fixed-when / fixable-when,
// with its condition, in every format; the counts say how many.
TEST(Output, ConditionalFixesSayTheirCondition) {
    std::vector<FileOutcome> outcomes{model(), syntax_error()};
    FileOutcome& o = outcomes[0];
    o.sites[0].fix->condition = "no autograd, experts x rows per expert <= 64";
    const std::string fixed = output::text_report(o, Mode::Fix);
    EXPECT_EQ(fixed.substr(0, fixed.find('\n')),
              "m.py:2:10: GM101 [fixed-when] print(...): removes graph break GB0059 only when: no autograd, experts x "
              "rows per expert <= 64 (deferred-side-effect)");
    EXPECT_TRUE(fixed.ends_with("m.py: 3 sites found, 0 fixed, 1 fixed-when, 2 refused\n")) << fixed;
    const std::string check = output::text_report(o, Mode::Check);
    EXPECT_EQ(check.substr(0, check.find(']') + 1), "m.py:2:10: GM101 [fixable-when]");
    EXPECT_TRUE(check.ends_with("m.py: 3 sites found, 0 fixable, 1 fixable-when, 2 refused\n")) << check;
    EXPECT_EQ(output::findings_report(o, Mode::Check), check.substr(0, check.find('\n') + 1));

    const auto j = output::json_report(results(outcomes, Mode::Check));
    const auto& site = j["files"][0]["sites"][0];
    EXPECT_EQ(site["status"], "fixable-when");
    EXPECT_EQ(site["condition"], "no autograd, experts x rows per expert <= 64");
    EXPECT_EQ(site["fix"]["applied"], false);
    EXPECT_EQ(j["totals"]["fixable-when"], 1);
    EXPECT_EQ(j["totals"]["fixable"], 0);
    EXPECT_EQ(j["projects"][0]["codes"]["GM101"]["fixable-when"], 1);
    const auto jf = output::json_report(results(outcomes, Mode::Fix));
    EXPECT_EQ(jf["files"][0]["sites"][0]["status"], "fixed-when");
    EXPECT_EQ(jf["files"][0]["sites"][0]["fix"]["applied"], true);
    EXPECT_EQ(jf["totals"]["fixed-when"], 1);
    EXPECT_EQ(jf["totals"]["fixed"], 0);

    const auto sarif = output::sarif_report(results(outcomes, Mode::Check))["runs"][0]["results"][0];
    EXPECT_EQ(sarif["level"], "error");  // fixable: fails `check`
    EXPECT_EQ(sarif["properties"]["status"], "fixable-when");
    EXPECT_EQ(sarif["properties"]["condition"], "no autograd, experts x rows per expert <= 64");
    EXPECT_FALSE(output::sarif_report(results(outcomes, Mode::Check))["runs"][0]["results"][1]["properties"].contains(
        "condition"));
    EXPECT_EQ(output::sarif_report(results(outcomes, Mode::Fix))["runs"][0]["results"][0]["level"], "note");
    const std::string github = output::github_report(results(outcomes, Mode::Check));
    EXPECT_EQ(github.substr(0, github.find('\n')),
              "::error title=graphmend (GM101),file=m.py,line=2,col=10,endLine=2,endColumn=18::m.py:2:10: GM101 "
              "[fixable-when] print(...): removes graph break GB0059 only when: no autograd, experts x rows per expert "
              "<= 64 (deferred-side-effect)");
    EXPECT_TRUE(output::statistics_report(results(outcomes, Mode::Check))
                    .starts_with("1\tGM101\t[*] deferred-side-effect (0 fixable, 1 fixable-when, 0 refused, 0 unsafe)\n"));
    EXPECT_EQ(output::fixes_report(results(outcomes, Mode::Check)),
              "Would fix 1 site (1 fixable-when):\n- m.py:\n    1 × GM101 (deferred-side-effect)\n");
    EXPECT_EQ(output::exit_code(results(outcomes, Mode::Check), {}), 1);
    Results r = results(outcomes, Mode::Fix);
    EXPECT_TRUE(output::batch_summary(r).starts_with("project p: 1 file, 3 sites found, 0 fixed, 1 fixed-when, 2 "
                                                     "refused\n"));
    EXPECT_NE(output::batch_summary(r).find("(GM101: 1 fixed-when; GM201"), std::string::npos);

    // A rewrite that removes no break (an assert kept as _assert_async) has no condition to state.
    o.sites[0].graph_break.clear();
    EXPECT_EQ(output::site_status(o, 0, Mode::Fix), output::SiteStatus::Fixed);
    EXPECT_EQ(output::json_report(results(outcomes, Mode::Fix))["files"][0]["sites"][0]["condition"], nullptr);
}

TEST(Output, ColourOnlyWhenAsked) {
    const FileOutcome o = model();
    EXPECT_EQ(output::text_report(o, Mode::Fix).find('\x1b'), std::string::npos);
    const std::string coloured = output::text_report(o, Mode::Fix, output::Style{true});
    EXPECT_NE(coloured.find("\x1b[1;31mGM101\x1b[0m"), std::string::npos);
    EXPECT_NE(coloured.find("\x1b[32m[fixed]\x1b[0m"), std::string::npos);
    ::setenv("FORCE_COLOR", "1", 1);
    ::setenv("NO_COLOR", "1", 1);
    EXPECT_TRUE(output::colour_wanted(stderr));  // FORCE_COLOR wins, as in ruff
    ::unsetenv("FORCE_COLOR");
    EXPECT_FALSE(output::colour_wanted(stderr));
    ::unsetenv("NO_COLOR");
    std::FILE* file = std::tmpfile();
    EXPECT_FALSE(output::colour_wanted(file));  // not a terminal
    std::fclose(file);
}

TEST(Output, JsonSitesEditsAndTotals) {
    const std::vector<FileOutcome> outcomes{model(), syntax_error()};
    Results r = results(outcomes, Mode::Fix);
    r.written[0] = true;
    const auto j = output::json_report(r);
    EXPECT_EQ(j["schema_version"], 2);
    const auto& sites = j["files"][0]["sites"];
    ASSERT_EQ(sites.size(), 3u);
    EXPECT_EQ(sites[0]["status"], "fixed");
    EXPECT_EQ(sites[1]["status"], "refused");
    EXPECT_EQ(sites[2]["status"], "unsafe");
    EXPECT_EQ(sites[0]["col"], 10);
    EXPECT_EQ(sites[0]["applicability"], "safe");
    EXPECT_TRUE(sites[1]["applicability"].is_null());
    EXPECT_TRUE(sites[1]["fix"].is_null());
    EXPECT_EQ(sites[2]["applicability"], "unsafe");
    const auto& edit = sites[0]["fix"]["edits"][0];
    EXPECT_EQ(edit["start"]["offset"], outcomes[0].sites[0].begin);
    EXPECT_EQ(edit["end"]["column"], 15);
    EXPECT_EQ(edit["content"], "_graphmend_print");
    EXPECT_EQ(sites[0]["fix"]["runtime"], nlohmann::json::array({"deferred_effects"}));
    EXPECT_EQ(j["files"][0]["runtime_edit"]["content"], "# rt\n");
    EXPECT_EQ(j["files"][1]["error_kind"], "syntax");
    EXPECT_EQ(j["files"][1]["error_location"]["column"], 7);
    const auto& totals = j["totals"];
    EXPECT_EQ(totals["projects"], 2);
    EXPECT_EQ(totals["sites"], 3);
    EXPECT_EQ(totals["fixed"], 1);
    EXPECT_EQ(totals["refused"], 1);
    EXPECT_EQ(totals["unsafe"], 1);
    EXPECT_EQ(totals["failures"], 1);
    EXPECT_EQ(totals["rewritten"], 1);
    EXPECT_EQ(totals["codes"]["GM201"]["unsafe"], 1);
    EXPECT_EQ(totals["codes"]["GM401"]["rule"], "data-dependent-shape");
    EXPECT_EQ(j["projects"][0]["project"], "p");
}

TEST(Output, SiteInsideAnotherFixHasNoEditsOfItsOwn) {
    FileOutcome o = model();
    rules::Site inner = site_at("GM101", "deferred-side-effect", "z = 1");
    inner.fix = rules::Fix{{{inner.begin, inner.begin + 1, "w"}}, rules::Applicability::Safe, {}};
    o.sites.push_back(inner);
    o.applied = {true, false, true, true};  // the GM201 fix applied, and the inner site with it
    o.sites[2].fix->applicability = rules::Applicability::Safe;
    EXPECT_TRUE(output::own_edits(o, 2));
    EXPECT_FALSE(output::own_edits(o, 3));
    o.origin = {SiteOrigin::FirstPass, SiteOrigin::FirstPass, SiteOrigin::FixedLater, SiteOrigin::FirstPass};
    EXPECT_FALSE(output::own_edits(o, 2));  // its edits are in the later pass's text
    const auto j = output::json_report(results({o}));
    EXPECT_TRUE(j["files"][0]["sites"][2]["fix"]["edits"].is_null());
}

TEST(Output, SarifRulesResultsAndFixes) {
    const std::vector<FileOutcome> outcomes{model(), syntax_error()};
    const auto s = output::sarif_report(results(outcomes));
    EXPECT_EQ(s["version"], "2.1.0");
    const auto& run = s["runs"][0];
    const auto& driver = run["tool"]["driver"];
    EXPECT_EQ(driver["name"], "graphmend");
    EXPECT_EQ(driver["rules"][0]["id"], "GM101");
    EXPECT_EQ(driver["rules"][0]["helpUri"], "https://graphmend.invalid/docs/rules/GM101.md");
    const auto& res = run["results"];
    ASSERT_EQ(res.size(), 4u);
    EXPECT_EQ(res[0]["level"], "error");  // fixable: fails `check`
    EXPECT_EQ(res[1]["level"], "warning");
    EXPECT_EQ(res[2]["level"], "warning");
    EXPECT_EQ(res[3]["ruleId"], "syntax-error");
    EXPECT_EQ(driver["rules"][res[3]["ruleIndex"].get<int>()]["id"], "syntax-error");
    EXPECT_EQ(res[0]["locations"][0]["physicalLocation"]["region"]["startColumn"], 10);
    const auto& replacements = res[0]["fixes"][0]["artifactChanges"][0]["replacements"];
    ASSERT_EQ(replacements.size(), 2u);  // the site's edit and the runtime block it calls
    EXPECT_EQ(replacements[1]["insertedContent"]["text"], "# rt\n");
    EXPECT_FALSE(res[1].contains("fixes"));
    EXPECT_FALSE(res[2].contains("fixes"));  // unsafe, not applied
    EXPECT_EQ(run["invocations"][0]["executionSuccessful"], true);
    EXPECT_EQ(output::sarif_report(results(outcomes, Mode::Fix))["runs"][0]["results"][0]["level"], "note");
}

TEST(Output, GithubCommandsEscapeTheirValues) {
    FileOutcome o = model();
    o.path = "a,b:c.py";
    o.sites[1].reason = "two\nlines 100%";
    const std::string out = output::github_report(results({o}));
    EXPECT_EQ(out.substr(0, out.find('\n')),
              "::error title=graphmend (GM101),file=a%2Cb%3Ac.py,line=2,col=10,endLine=2,endColumn=18::a,b:c.py:2:10: "
              "GM101 [fixable] print(...): removes graph break GB0059 (deferred-side-effect)");
    EXPECT_NE(out.find("::warning title=graphmend (GM401),file=a%2Cb%3Ac.py,line=3,col=5,endLine=3,endColumn=16::"
                       "a,b:c.py:3:5: GM401 [refused] x.nonzero(...): two%0Alines 100%25\n"),
              std::string::npos);
    EXPECT_NE(output::github_report(results({syntax_error()}))
                  .find("::error title=graphmend (syntax error),file=bad.py,line=1,col=7::bad.py:1:7: syntax error"),
              std::string::npos);
}

TEST(Output, StatisticsAndShowFixes) {
    const std::vector<FileOutcome> outcomes{model(), syntax_error()};
    EXPECT_EQ(output::statistics_report(results(outcomes)),
              "1\tGM101\t[*] deferred-side-effect (1 fixable, 0 refused, 0 unsafe)\n"
              "1\tGM201\t[ ] predicated-control-flow (0 fixable, 0 refused, 1 unsafe)\n"
              "1\tGM401\t[ ] data-dependent-shape (0 fixable, 1 refused, 0 unsafe)\n"
              "1\t     \t[ ] syntax-error\n");
    EXPECT_TRUE(output::statistics_report(results(outcomes, Mode::Fix))
                    .starts_with("1\tGM101\t[*] deferred-side-effect (1 fixed, 0 refused, 0 unsafe)\n"));
    EXPECT_EQ(output::fixes_report(results(outcomes)), "Would fix 1 site:\n- m.py:\n    1 × GM101 (deferred-side-effect)\n");
    // fix: only files written count.
    EXPECT_EQ(output::fixes_report(results(outcomes, Mode::Fix)), "");
    Results written = results(outcomes, Mode::Fix);
    written.written[0] = true;
    EXPECT_EQ(output::fixes_report(written), "Fixed 1 site:\n- m.py:\n    1 × GM101 (deferred-side-effect)\n");
}

TEST(Output, BatchSummaryCountsProjectsCodesAndFailures) {
    const std::vector<FileOutcome> outcomes{model(), syntax_error()};
    Results r = results(outcomes, Mode::Fix);
    EXPECT_EQ(output::batch_summary(r),
              "project p: 1 file, 3 sites found, 1 fixed, 2 refused\n"
              "project q: 1 file, 0 sites found, 0 fixed, 0 refused, 1 error\n"
              "total: 2 projects, 2 files, 3 sites found (GM101: 1 fixed; GM201: 1 unsafe not applied; GM401: 1 "
              "refused), 1 failure\n"
              "2 files checked, 0 rewritten\n");  // m.py's write did not happen
    r.written[0] = true;
    EXPECT_TRUE(output::batch_summary(r).ends_with("2 files checked, 1 rewritten\n"));
}

TEST(Output, ExitCodes) {
    const FileOutcome fixable = model();
    FileOutcome refused = model();
    refused.applied = {false, false, false};
    refused.sites[0].fix.reset();
    refused.fixed = refused.original;
    const std::vector<FileOutcome> one_fixable{fixable};
    const std::vector<FileOutcome> one_refused{refused};
    const std::vector<FileOutcome> one_syntax{syntax_error()};
    EXPECT_EQ(output::exit_code(results(one_fixable), {}), 1);
    EXPECT_EQ(output::exit_code(results(one_fixable), {true, false}), 0);  // --exit-zero
    EXPECT_EQ(output::exit_code(results(one_refused), {}), 0);             // refused and unsafe alone pass
    EXPECT_EQ(output::exit_code(results(one_syntax), {}), 1);
    EXPECT_EQ(output::exit_code(results(one_syntax, Mode::Fix), {}), 1);
    EXPECT_EQ(output::exit_code(results(one_fixable, Mode::Diff), {}), 1);  // a file would change
    Results fixed = results(one_fixable, Mode::Fix);
    EXPECT_EQ(output::exit_code(fixed, {false, true}), 0);  // nothing written
    fixed.written[0] = true;
    EXPECT_EQ(output::exit_code(fixed, {}), 0);
    EXPECT_EQ(output::exit_code(fixed, {false, true}), 1);  // --exit-non-zero-on-fix
    fixed.write_errors[0] = "m.py: cannot replace: Permission denied";
    EXPECT_EQ(output::exit_code(fixed, {true, false}), 2);
    Results unread = results(one_refused);
    unread.read_errors.push_back("x.py: cannot read: Permission denied");
    EXPECT_EQ(output::exit_code(unread, {}), 2);
    FileOutcome internal = model();
    internal.error = "m.py: internal error: the rewritten file does not parse";
    internal.error_kind = FileError::Internal;
    EXPECT_EQ(output::exit_code(results({internal}), {}), 2);
    FileOutcome module = refused;  // its project's runtime module could not be written
    module.error = "m.py: the runtime module could not be written (...); file left unchanged";
    module.error_kind = FileError::Write;
    EXPECT_EQ(output::exit_code(results({module}, Mode::Fix), {true, false}), 2);
    module.error_kind = FileError::Project;  // a _graphmend_runtime.py graphmend did not write: a finding
    EXPECT_EQ(output::exit_code(results({module}, Mode::Fix), {}), 1);
    EXPECT_EQ(output::exit_code(results({module}, Mode::Fix), {true, false}), 0);
}

// `diff -u`'s output for a last line without a newline, which `patch` needs: a lone-CR file is
// one such line. A newline added or removed at the end is a change.
TEST(Output, UnifiedDiffMarksALastLineWithoutNewline) {
    EXPECT_EQ(output::unified_diff("m.py", "a\rb", "a\rc"),
              "--- a/m.py\n+++ b/m.py\n@@ -1,1 +1,1 @@\n-a\rb\n\\ No newline at end of file\n"
              "+a\rc\n\\ No newline at end of file\n");
    EXPECT_EQ(output::unified_diff("m.py", "a\nb", "a\nb\n"),
              "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n");
    EXPECT_EQ(output::unified_diff("m.py", "a\nb\nc", "x\nb\nc"),
              "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n-a\n+x\n b\n c\n\\ No newline at end of file\n");
}

TEST(Output, ProgressShowsAfterTheDelayAndIsErased) {
    char* buffer = nullptr;
    std::size_t size = 0;
    std::FILE* stream = ::open_memstream(&buffer, &size);
    auto now = std::chrono::steady_clock::time_point{};
    output::Progress progress(stream, [&] { return now; });
    progress.update("parsed", 1, 10);  // before the delay: nothing
    std::fflush(stream);
    EXPECT_EQ(size, 0u);
    now += std::chrono::milliseconds(600);
    progress.update("parsed", 2, 10);
    now += std::chrono::milliseconds(10);
    progress.update("parsed", 3, 10);  // within the interval: skipped
    progress.update("parsed", 10, 10);  // the last one always shows
    progress.finish();
    std::fclose(stream);
    EXPECT_EQ(std::string(buffer, size),
              "\r\x1b[2Kgraphmend: parsed 2 of 10 files\r\x1b[2Kgraphmend: parsed 10 of 10 files\r\x1b[2K");
    std::free(buffer);
}

TEST(Output, ProgressNeverShownLeavesNothing) {
    char* buffer = nullptr;
    std::size_t size = 0;
    std::FILE* stream = ::open_memstream(&buffer, &size);
    const auto start = std::chrono::steady_clock::time_point{};
    output::Progress progress(stream, [&] { return start + std::chrono::milliseconds(499); });
    progress.update("fixed", 1, 1);  // a run shorter than the delay
    progress.finish();
    std::fclose(stream);
    EXPECT_EQ(size, 0u);
    std::free(buffer);
}

TEST(Output, FormatNames) {
    EXPECT_EQ(output::parse_format("sarif"), output::Format::Sarif);
    EXPECT_EQ(output::parse_format("grouped"), output::Format::Grouped);
    EXPECT_FALSE(output::parse_format("full"));
    EXPECT_TRUE(output::is_machine(output::Format::Github));
    EXPECT_FALSE(output::is_machine(output::Format::Concise));
}

}  // namespace

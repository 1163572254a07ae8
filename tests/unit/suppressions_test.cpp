// Suppressions: `# noqa` parsing, `# graphmend: skip-file`, and what the driver does with
// them and with the rule selection of each file.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "graphmend/fixer.hpp"
#include "graphmend/suppressions.hpp"

using namespace graphmend;

namespace {

using Codes = std::vector<std::string>;

std::optional<Noqa> noqa(std::string_view comment) {
    bool malformed = false;
    return parse_noqa(comment, malformed);
}

TEST(Noqa, BareAndWithCodes) {
    ASSERT_TRUE(noqa("# noqa"));
    EXPECT_TRUE(noqa("# noqa")->all);
    EXPECT_TRUE(noqa("#NOQA because")->all);
    const auto n = noqa("# noqa: GM201, GM101");
    ASSERT_TRUE(n);
    EXPECT_FALSE(n->all);
    EXPECT_EQ(n->codes, (Codes{"GM201", "GM101"}));
    EXPECT_EQ(noqa("#noqa:GM201 GM101,GM301 trailing words")->codes, (Codes{"GM201", "GM101", "GM301"}));
    EXPECT_EQ(noqa("# NoQA : GM401")->codes, (Codes{"GM401"}));
    EXPECT_EQ(noqa("# type: ignore  # noqa: GM101")->codes, (Codes{"GM101"}));
}

TEST(Noqa, NotADirective) {
    EXPECT_FALSE(noqa("# this is fine"));
    EXPECT_FALSE(noqa("# noqabc"));
    EXPECT_FALSE(noqa("# see noqa docs"));
    bool malformed = false;
    EXPECT_FALSE(parse_noqa("# noqa:", malformed));
    EXPECT_TRUE(malformed);
    EXPECT_FALSE(parse_noqa("# noqa: , gm101", malformed));
    EXPECT_TRUE(malformed);
}

TEST(SkipFile, Spelling) {
    EXPECT_TRUE(is_skip_file("# graphmend: skip-file"));
    EXPECT_TRUE(is_skip_file("#GraphMend:skip-file  "));
    EXPECT_FALSE(is_skip_file("# graphmend: skip-file please"));
    EXPECT_FALSE(is_skip_file("# graphmend skip-file"));
}

TEST(Suppressions, OnlyRealCommentsCount) {
    const auto tree = syntax::Tree::parse(
        "s = '''\n# graphmend: skip-file\n'''\nt = \"# noqa\"\nu = 1  # noqa: GM101\n  # graphmend: skip-file\n"
        "v = 2  # graphmend: skip-file\nw = 3  # graphmend: typo\nx = 4  # noqa:\n");
    const Suppressions s = find_suppressions(tree, "m.py");
    EXPECT_TRUE(s.skip_file);  // line 6, the comment alone on its line
    EXPECT_EQ(s.noqa.size(), 1u);
    EXPECT_TRUE(s.suppresses(5, "GM101"));
    EXPECT_FALSE(s.suppresses(5, "GM201"));
    EXPECT_FALSE(s.suppresses(4, "GM101"));
    ASSERT_EQ(s.warnings.size(), 3u);
    EXPECT_EQ(s.warnings[0].rfind("m.py:7: `# graphmend: skip-file` applies only on a line of its own", 0), 0u);
    EXPECT_EQ(s.warnings[1].rfind("m.py:8: unknown directive", 0), 0u);
    // The example's codes come from the registry (its second rule, then its first).
    EXPECT_EQ(s.warnings[2], "m.py:9: `# noqa:` without codes (e.g. `# noqa: GM201, GM101`); ignored");
}

// The runtime's fallback lines carry a marker that verify reads; a fixed file holds them,
// and checking it again warns of nothing.
TEST(Suppressions, TheRuntimeMarkerIsNoUnknownDirective) {
    const auto tree = syntax::Tree::parse("def f(pred, a, b):\n    return a if pred else b  # graphmend: condition-unmet\n");
    const Suppressions s = find_suppressions(tree, "m.py");
    EXPECT_TRUE(s.warnings.empty());
    EXPECT_TRUE(s.noqa.empty());
}

TEST(Suppressions, AStringIsNoSkipFile) {
    const auto tree = syntax::Tree::parse("s = '''\n# graphmend: skip-file\n'''\n");
    EXPECT_FALSE(find_suppressions(tree, "m.py").skip_file);
}

const std::string kModel =
    "import torch\n"
    "\n"
    "\n"
    "class M(torch.nn.Module):\n"
    "    def forward(self, x):\n"
    "        print(x){}\n"
    "        if x.sum() > 0:\n"
    "            print(\"positive\"){}\n"
    "        return x\n";

FileOutcome fix(const std::string& text, std::shared_ptr<const FileSettings> settings = nullptr) {
    return fix_files({{"m.py", text, std::move(settings)}}, FixOptions{}).at(0);
}

std::string model(std::string_view first, std::string_view inner) {
    return fmt::format(fmt::runtime(kModel), first, inner);
}

TEST(Driver, NoSettingsAndNoCommentsFixEverything) {
    const auto out = fix(model("", ""));
    EXPECT_TRUE(out.changed());
    EXPECT_EQ(out.sites.size(), 3u);
    EXPECT_EQ(out.suppressed, 0u);
}

TEST(Driver, ANoqaSiteIsNeitherRewrittenNorReportedButCounted) {
    const auto out = fix(model("  # noqa: GM101", ""));
    ASSERT_EQ(out.sites.size(), 2u);  // the `if` and the print inside it
    EXPECT_EQ(out.sites[0].where.line, 7u);
    EXPECT_EQ(out.suppressed, 1u);
    EXPECT_NE(out.fixed.find("        print(x)  # noqa: GM101\n"), std::string::npos);
}

TEST(Driver, ANoqaForAnotherCodeSuppressesNothing) {
    const auto out = fix(model("  # noqa: E501", ""));
    EXPECT_EQ(out.sites.size(), 3u);
    EXPECT_EQ(out.suppressed, 0u);
}

TEST(Driver, AnEnclosingFixDoesNotRewriteASuppressedSite) {
    const auto out = fix(model("", "  # noqa"));
    ASSERT_EQ(out.sites.size(), 2u);
    EXPECT_EQ(out.suppressed, 1u);
    const rules::Site& branch = out.sites[1];
    EXPECT_EQ(branch.code, "GM201");
    EXPECT_FALSE(out.applied[1]);
    EXPECT_EQ(branch.reason, "its rewrite would change the GM101 site at line 8, which a noqa comment suppresses");
    EXPECT_NE(out.fixed.find("        if x.sum() > 0:\n            print(\"positive\")  # noqa\n"), std::string::npos);
}

TEST(Driver, UnselectedRulesAreLeftOutAndCounted) {
    auto settings = std::make_shared<FileSettings>();
    settings->selected = {"GM201"};
    const auto out = fix(model("", ""), settings);
    ASSERT_EQ(out.sites.size(), 1u);
    EXPECT_EQ(out.sites[0].code, "GM201");
    EXPECT_EQ(out.suppressed, 2u);
    EXPECT_NE(out.fixed.find("        print(x)\n"), std::string::npos);  // GM101's site, not selected
}

TEST(Driver, AHeldSiteIsReportedRefusedAndKeptAsWritten) {
    // fix --verify holds back a fix it could not prove (--hold-site PATH:LINE:CODE).
    auto settings = std::make_shared<FileSettings>();
    settings->selected = {"GM101", "GM201"};
    settings->held = {{6u, "GM101"}};
    settings->held_reason = "held back";
    const auto out = fix(model("", ""), settings);
    ASSERT_EQ(out.sites.size(), 3u);
    EXPECT_EQ(out.sites[0].code, "GM101");
    EXPECT_FALSE(out.applied[0]);
    EXPECT_EQ(out.sites[0].reason, "held back");
    EXPECT_NE(out.fixed.find("        print(x)\n"), std::string::npos);
    EXPECT_TRUE(out.applied[1]);  // the `if`, fixed as before
}

TEST(Driver, SkipFileGetsNoRulesButIsPartOfTheProject) {
    // The base class lives in a skipped file: the model file still sees it as an nn.Module.
    const std::string base = "# graphmend: skip-file\nimport torch\n\n\nclass Base(torch.nn.Module):\n"
                             "    def forward(self, x):\n        print(x)\n        return x\n";
    const std::string model_text = "from .base import Base\n\n\nclass M(Base):\n    def forward(self, x):\n"
                                   "        print(x)\n        return x\n";
    const auto out = fix_files({{"pkg/base.py", base}, {"pkg/model.py", model_text}}, FixOptions{});
    EXPECT_TRUE(out[0].sites.empty());
    EXPECT_FALSE(out[0].changed());
    ASSERT_EQ(out[1].sites.size(), 1u);
    EXPECT_TRUE(out[1].applied[0]);
}

}  // namespace

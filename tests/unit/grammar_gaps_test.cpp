// Valid Python that tree-sitter-python 0.23.6 reads as a syntax error, and the same-length
// normalisation that lets graphmend read it (issue 12): every case below compiles with CPython.
#include <gtest/gtest.h>

#include <string>

#include "graphmend/fixer.hpp"
#include "graphmend/syntax.hpp"

using namespace graphmend;

namespace {

const std::string kHead =
    "import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n";

FileOutcome fix_text(const std::string& text) { return fix_files({{"model.py", text}}, FixOptions{}).at(0); }

class ValidPython : public ::testing::TestWithParam<const char*> {};

TEST_P(ValidPython, ParsesWithoutErrorKeepingTextAndLength) {
    const std::string text = GetParam();
    const auto tree = syntax::Tree::parse(text);
    EXPECT_FALSE(tree.error().has_value()) << text;
    EXPECT_EQ(tree.source().text(), text);
    EXPECT_EQ(tree.root().end(), text.size());
    const auto out = fix_text(text);
    EXPECT_FALSE(out.error.has_value()) << *out.error;
    EXPECT_EQ(out.fixed, text);
}

INSTANTIATE_TEST_SUITE_P(
    GrammarGaps, ValidPython,
    ::testing::Values("x = a, *[1]\n", "x = a, *(1,)\n", "x = *[1], a\n", "x = a, *{1}, c\n",
                      "def f(g):\n    return *[None] * 3, *g\n", "for q in a, *[1]:\n    pass\n",
                      "def f():\n    x = (bar.\nbaz)\n    return x\n", "def f():\n    x = (bar +\nbaz)\n    return x\n",
                      "def f(a):\n    if a:\n        x = (bar.\n    baz)\n    return x\n",
                      "def f():\r\n    x = (bar.\r\nbaz)\r\n    return x\r\n",
                      "s = '*[1]'  # a, *[1]\nx = a, *[1]\n"));

TEST(GrammarGaps, TheNormalisedCopyHasTheSameLengthAndTouchesNoString) {
    const std::string text = "s = 'a, *[1]'\nx = a, *[1]\ny = [b, *[2]]\nz = 2 *(3)\n";
    const auto n = syntax::normalize_grammar_gaps(text);
    ASSERT_EQ(n.text.size(), text.size());
    ASSERT_EQ(n.starred.size(), 2u);
    EXPECT_EQ(n.starred[0], text.find("*[1]\ny"));
    EXPECT_EQ(n.starred[1], text.find("*[2]"));
    EXPECT_EQ(n.text.substr(0, 13), "s = 'a, *[1]'");
    EXPECT_NE(n.text.find("2 *(3)"), std::string::npos);
}

TEST(GrammarGaps, AJoinNeverHidesCodeBehindAComment) {
    const std::string text = "x = (a +  # c\nb)\n";
    EXPECT_EQ(syntax::normalize_grammar_gaps(text).joined, 0u);
}

TEST(GrammarGaps, InvalidPythonStaysASyntaxError) {
    EXPECT_TRUE(syntax::Tree::parse("x = a, *[1\n").error().has_value());
    EXPECT_TRUE(syntax::Tree::parse("x = (a.\n").error().has_value());
}

// A site elsewhere in the file is fixed; the file stays as written around the starred operand.
TEST(GrammarGaps, SitesAwayFromTheGapAreFixed) {
    const std::string text =
        kHead +
        "        print(\"sum\", x.sum())\n"
        "        y = x, *[x]\n"
        "        return y\n";
    const auto out = fix_text(text);
    ASSERT_FALSE(out.error.has_value()) << *out.error;
    ASSERT_TRUE(out.changed());
    EXPECT_NE(out.fixed.find("        y = x, *[x]\n"), std::string::npos);
}

// A rewrite whose span holds the starred operand is refused: the rule saw the tree without it.
// Without the `*`, the same `if` is fixed (the control).
TEST(GrammarGaps, ARewriteOverTheGapIsRefusedWithTheReason) {
    const std::string head = kHead + "        if x.sum() > 0:\n";
    const std::string starred = head + "            y = x * 2, *[x]\n        else:\n            y = x, *[x]\n        return y\n";
    const auto out = fix_text(starred);
    ASSERT_FALSE(out.error.has_value()) << *out.error;
    EXPECT_EQ(out.fixed, starred);
    ASSERT_EQ(out.sites.size(), 1u);
    EXPECT_EQ(out.sites[0].code, "GM201");
    EXPECT_NE(out.sites[0].reason.find("starred operand at line 8"), std::string::npos) << out.sites[0].reason;

    const std::string plain = head + "            y = x * 2, x\n        else:\n            y = x, x\n        return y\n";
    EXPECT_TRUE(fix_text(plain).changed());
}

}  // namespace

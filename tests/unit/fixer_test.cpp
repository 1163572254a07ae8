// Driver-level properties of a fix: the runtime block's indentation and line endings,
// idempotence, and files left alone.
#include <gtest/gtest.h>

#include <algorithm>

#include "graphmend/fixer.hpp"

using namespace graphmend;

namespace {

FileOutcome fix_one(const std::string& text) {
    auto out = fix_files({{"model.py", text}}, FixOptions{});
    return out.at(0);
}

const std::string kModel =
    "\"\"\"Docstring whose continuation lines\n"
    "  are indented by two spaces.\"\"\"\n"
    "import torch\n"
    "from torch import nn\n"
    "\n"
    "\n"
    "class Model(nn.Module):\n"
    "    def forward(self, x):\n"
    "        print(\"sum\", x.sum())\n"
    "        return x\n";

TEST(Fixer, RuntimeBlockUsesTheCodeIndentationNotTheDocstrings) {
    const auto out = fix_one(kModel);
    ASSERT_TRUE(out.changed());
    EXPECT_NE(out.fixed.find("\ndef _graphmend_print(*args, **kwargs):\n    _graphmend_rt.print_("), std::string::npos);
}

TEST(Fixer, RuntimeBlockFollowsCrlf) {
    std::string crlf;
    for (char c : kModel) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    const auto out = fix_one(crlf);
    ASSERT_TRUE(out.changed());
    for (std::size_t i = 0; i < out.fixed.size(); ++i) {
        if (out.fixed[i] == '\n') {
            ASSERT_TRUE(i > 0 && out.fixed[i - 1] == '\r') << "bare LF at byte " << i;
        }
    }
}

TEST(Fixer, SecondRunChangesNothing) {
    const auto first = fix_one(kModel);
    const auto second = fix_one(first.fixed);
    EXPECT_FALSE(second.changed());
    EXPECT_TRUE(second.sites.empty());
}

TEST(Fixer, SyntaxErrorIsReportedAndNothingIsRewritten) {
    const auto out = fix_one("class Model(nn.Module):\n    def forward(self, x:\n        print(x)\n");
    ASSERT_TRUE(out.error.has_value());
    EXPECT_EQ(out.error->rfind("model.py:", 0), 0u) << *out.error;
    EXPECT_FALSE(out.changed());
}

TEST(Fixer, FileWithoutSitesIsByteIdentical) {
    const std::string text = "import torch\r\n\tx = 1  # tab, CRLF\r\nprint(x)\r\n";
    const auto out = fix_one(text);
    EXPECT_EQ(out.fixed, text);
    EXPECT_TRUE(out.sites.empty());
}

}  // namespace

// A batch of folder projects (Hub checkouts) gives each file what its own run gives, also when
// one checkout needs a second pass of the fixed-point loop (a nested data-dependent `if`) and
// the later pass runs only over the checkouts that need it.
TEST(Fixer, BatchOfCheckoutsEqualsSeparateRunsWithLaterPasses) {
    const std::string nested =
        "import torch\n"
        "\n"
        "\n"
        "class M(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        if x.sum() > 0:\n"
        "            if x.mean() > 1:\n"
        "                y = x + 1\n"
        "            else:\n"
        "                y = x - 1\n"
        "        else:\n"
        "            y = x * 2\n"
        "        return y\n";
    const std::vector<InputFile> inputs{{"batch_ckA/modeling_a.py", nested},
                                        {"batch_ckB/modeling_b.py", kModel},
                                        {"batch_ckC/modeling_c.py", nested}};
    const auto together = fix_files(inputs, FixOptions{});
    ASSERT_EQ(together.size(), 3u);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const auto alone = fix_files({inputs[i]}, FixOptions{}).at(0);
        EXPECT_EQ(together[i].fixed, alone.fixed) << inputs[i].path;
        EXPECT_EQ(together[i].applied, alone.applied) << inputs[i].path;
        ASSERT_EQ(together[i].sites.size(), alone.sites.size()) << inputs[i].path;
        for (std::size_t s = 0; s < alone.sites.size(); ++s) {
            EXPECT_EQ(together[i].sites[s].reason, alone.sites[s].reason);
        }
    }
    // The nested `if` is fixed whole: the inner site in the second pass.
    EXPECT_EQ(std::count(together[0].applied.begin(), together[0].applied.end(), true), 2);
}

// A runtime block an earlier graphmend wrote is replaced by this version's when a new fix needs
// the block: the new fix may call helpers the old block lacks (found when GM501's sorted-slices
// form was added: `_graphmend_counts` would have been called but never defined).
TEST(Fixer, AStaleRuntimeBlockIsReplacedWhenANewFixNeedsIt) {
    const auto first = fix_one(kModel);
    ASSERT_TRUE(first.changed());
    const std::string helper = "def _graphmend_print(*args, **kwargs):\n";
    const auto at = first.fixed.find(helper);
    ASSERT_NE(at, std::string::npos);
    // The block as an older version might have written it (a helper missing), and a new site.
    std::string stale = first.fixed;
    stale.replace(at, helper.size(), "def _graphmend_print_old(*args, **kwargs):\n");
    const auto ret = stale.find("        return x\n");
    ASSERT_NE(ret, std::string::npos);
    stale.insert(ret, "        print(\"mean\", x.mean())\n");
    const auto second = fix_one(stale);
    ASSERT_FALSE(second.error.has_value()) << *second.error;
    EXPECT_NE(second.fixed.find(helper), std::string::npos);
    EXPECT_EQ(second.fixed.find("_graphmend_print_old"), std::string::npos);
    EXPECT_EQ(fix_one(second.fixed).fixed, second.fixed);
    // Once current, the block is left alone.
    const auto third = fix_one(first.fixed);
    EXPECT_EQ(third.fixed, first.fixed);
}

// GM201's select read again (a second run, the fixed-point loop's next pass) has its branches'
// values: `not lo` of a tensor it selects is still a data read, so the site refused for it in
// the first run is refused again and a second fix changes nothing (the fuzz run's input).
TEST(FixFiles, ASecondFixOfASelectsOutputChangesNothing) {
    const std::string text =
        syntax::read_file(std::string(GRAPHMEND_SOURCE_DIR) + "/tests/fuzz/seeds/select_then_data_read.py");
    const FileOutcome first = fix_files({{"m.py", text}}, FixOptions{}).at(0);
    ASSERT_NE(first.fixed, text);
    ASSERT_NE(first.fixed.find("_graphmend_if("), std::string::npos);
    const FileOutcome second = fix_files({{"m.py", first.fixed}}, FixOptions{}).at(0);
    EXPECT_EQ(second.fixed, first.fixed);
    ASSERT_EQ(second.sites.size(), 1u);
    EXPECT_FALSE(second.applied[0]);
    EXPECT_NE(second.sites[0].reason.find("a Python value read out of tensor data"), std::string::npos)
        << second.sites[0].reason;
}

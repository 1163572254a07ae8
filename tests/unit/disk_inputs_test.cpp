// Inputs read from disk (InputFile::from_disk, what `graphmend fix/check PATH` gives): the
// outcomes of the same texts held in memory, no text held for a file left as it was without a
// site, a file that changes on disk while it is fixed (fixed again from the start; an error for
// every file when it keeps changing), a file that cannot be read, a lone-CR file, and a rewrite
// written in place only over the bytes that were read.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "graphmend/fixer.hpp"
#include "graphmend/output.hpp"
#include "temp_tree.hpp"

namespace fs = std::filesystem;
using namespace graphmend;

namespace {

// A folder project: the forward's nested data-dependent tests need the fixed-point loop's
// second pass (the inner `if` is rewritten inside the outer one's rewrite), which reads the
// files left as they were again; base.py is loaded for its class's __init__; the other files
// are never loaded.
const std::vector<std::pair<std::string, std::string>> kFiles{
    {"model.py",
     "import torch\n"
     "from .base import Base\n"
     "from .helpers import double\n"
     "\n"
     "\n"
     "class Model(Base):\n"
     "    def forward(self, x):\n"
     "        if self.scale > 0:\n"
     "            if x.sum() > 0:\n"
     "                x = x + 1\n"
     "        return double(x)\n"},
    {"base.py",
     "import torch\n"
     "from torch import nn\n"
     "\n"
     "\n"
     "class Base(nn.Module):\n"
     "    def __init__(self):\n"
     "        super().__init__()\n"
     "        self.scale = nn.Parameter(torch.ones(1))\n"},
    {"helpers.py", "def double(x):\n    return x * 2\n"},
    {"unrelated.py", "import json\n\n\ndef load(p):\n    return json.load(open(p))\n"},
};

struct Project {
    TempTree tree;
    std::vector<std::string> paths;

    Project() {
        for (const auto& [name, text] : kFiles) {
            tree.write("reach/" + name, text);
            paths.push_back((tree.root / "reach" / name).string());
        }
    }
    [[nodiscard]] std::vector<InputFile> in_memory() const {
        std::vector<InputFile> inputs;
        for (std::size_t i = 0; i < paths.size(); ++i) inputs.push_back({paths[i], kFiles[i].second});
        return inputs;
    }
    [[nodiscard]] std::vector<InputFile> on_disk() const {
        std::vector<InputFile> inputs;
        for (const auto& p : paths) inputs.push_back({p, std::string(), nullptr, RuntimeForm::Inline, true});
        return inputs;
    }
};

void append(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::app) << text;
}

// The sites and rewrites of two runs are the same.
void expect_same_fixes(const std::vector<FileOutcome>& a, const std::vector<FileOutcome>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].changed(), b[i].changed()) << a[i].path;
        if (a[i].changed()) {
            EXPECT_EQ(a[i].fixed, b[i].fixed) << a[i].path;
        }
        EXPECT_EQ(a[i].applied, b[i].applied) << a[i].path;
        EXPECT_EQ(a[i].origin, b[i].origin) << a[i].path;
        ASSERT_EQ(a[i].sites.size(), b[i].sites.size()) << a[i].path;
        for (std::size_t s = 0; s < a[i].sites.size(); ++s) {
            EXPECT_EQ(a[i].sites[s].code, b[i].sites[s].code);
            EXPECT_EQ(a[i].sites[s].where.line, b[i].sites[s].where.line);
            EXPECT_EQ(a[i].sites[s].reason, b[i].sites[s].reason);
        }
    }
}

}  // namespace

TEST(DiskInputs, GiveTheOutcomesOfTheSameTextsInMemoryAndHoldOnlyTheTextsTheyNeed) {
    const Project project;
    const auto memory = fix_files(project.in_memory(), FixOptions{});
    const auto disk = fix_files(project.on_disk(), FixOptions{});
    expect_same_fixes(memory, disk);
    // The nested test is fixed by the second pass, which read the other files from disk again.
    ASSERT_EQ(disk[0].origin.size(), 2u);
    EXPECT_EQ(std::count(disk[0].origin.begin(), disk[0].origin.end(), SiteOrigin::FixedLater), 1);
    EXPECT_TRUE(disk[0].changed());
    EXPECT_EQ(disk[0].original, kFiles[0].second);
    for (std::size_t i = 1; i < disk.size(); ++i) {
        EXPECT_TRUE(disk[i].texts_on_disk) << disk[i].path;
        EXPECT_TRUE(disk[i].original.empty() && disk[i].fixed.empty()) << disk[i].path;
        EXPECT_FALSE(disk[i].error) << disk[i].path;
        ASSERT_TRUE(disk[i].disk);
        EXPECT_EQ(disk[i].disk->size, kFiles[i].second.size());
        EXPECT_FALSE(memory[i].texts_on_disk);
        EXPECT_EQ(memory[i].original, kFiles[i].second);
    }
}

TEST(DiskInputs, AFileChangedWhileTheyAreFixedIsFixedAgainFromWhatIsOnDisk) {
    const Project project;
    // base.py is loaded by the analysis after every file was parsed: it changes in between,
    // once. The second run reads it as it is then.
    std::atomic<int> changes{0};
    FixOptions options;
    options.progress = [&](std::string_view stage, std::size_t done, std::size_t total) {
        if (stage == "parsed" && done == total && changes.fetch_add(1) == 0) append(project.paths[1], "# edited\n");
    };
    const auto outcomes = fix_files(project.on_disk(), options);
    EXPECT_EQ(changes.load(), 3);  // the first run's first pass, the second run's two passes
    for (const auto& o : outcomes) EXPECT_FALSE(o.error) << *o.error;
    ASSERT_TRUE(outcomes[1].disk);
    EXPECT_EQ(outcomes[1].disk->size, kFiles[1].second.size() + 9);
    expect_same_fixes(fix_files(project.in_memory(), FixOptions{}), outcomes);
}

TEST(DiskInputs, AFileThatKeepsChangingIsAReadErrorForEveryFileAndNothingIsRewritten) {
    const Project project;
    FixOptions options;
    options.progress = [&](std::string_view stage, std::size_t done, std::size_t total) {
        if (stage == "parsed" && done == total) append(project.paths[1], "# edited\n");
    };
    const auto outcomes = fix_files(project.on_disk(), options);
    ASSERT_EQ(outcomes.size(), project.paths.size());
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
        EXPECT_EQ(outcomes[i].path, project.paths[i]);
        ASSERT_TRUE(outcomes[i].error);
        EXPECT_EQ(outcomes[i].error_kind, FileError::Read);
        EXPECT_NE(outcomes[i].error->find(project.paths[1] + ": changed on disk while graphmend read it"),
                  std::string::npos)
            << *outcomes[i].error;
        EXPECT_FALSE(outcomes[i].changed());
        EXPECT_TRUE(outcomes[i].sites.empty());
    }
}

TEST(DiskInputs, AFileThatCannotBeReadIsAReadErrorAndTheOthersAreFixed) {
    const Project project;
    auto inputs = project.on_disk();
    const std::string missing = (project.tree.root / "reach" / "missing.py").string();
    inputs.push_back({missing, std::string(), nullptr, RuntimeForm::Inline, true});
    const auto outcomes = fix_files(inputs, FixOptions{});
    ASSERT_EQ(outcomes.size(), inputs.size());
    ASSERT_TRUE(outcomes.back().error);
    EXPECT_EQ(outcomes.back().error_kind, FileError::Read);
    EXPECT_EQ(*outcomes.back().error, missing + ": cannot read: No such file or directory");
    expect_same_fixes(fix_files(project.in_memory(), FixOptions{}),
                      std::vector<FileOutcome>(outcomes.begin(), outcomes.end() - 1));
}

TEST(DiskInputs, ALoneCrFileIsFixedAsLfTextAndKeepsItsCrs) {
    TempTree tree;
    std::string text = kFiles[0].second;
    std::replace(text.begin(), text.end(), '\n', '\r');
    tree.write("cr/model.py", text);
    tree.write("cr/base.py", kFiles[1].second);
    tree.write("cr/helpers.py", kFiles[2].second);
    std::vector<InputFile> inputs;
    for (const char* name : {"model.py", "base.py", "helpers.py"}) {
        inputs.push_back({(tree.root / "cr" / name).string(), std::string(), nullptr, RuntimeForm::Inline, true});
    }
    const auto outcomes = fix_files(inputs, FixOptions{});
    ASSERT_FALSE(outcomes[0].error);
    ASSERT_TRUE(outcomes[0].changed());
    EXPECT_EQ(outcomes[0].original, text);
    EXPECT_EQ(outcomes[0].fixed.find('\n'), std::string::npos);
    EXPECT_EQ(std::count(outcomes[0].applied.begin(), outcomes[0].applied.end(), true), 2);
    // What a report shows is in the file's own lines and endings: its lines break at the CRs,
    // and the edits' texts hold no LF.
    const TextLines lines = TextLines::of(outcomes[0].original);
    EXPECT_EQ(lines.starts.size(), static_cast<std::size_t>(std::count(text.begin(), text.end(), '\r')) + 1);
    ASSERT_EQ(outcomes[0].sites.size(), 2u);
    EXPECT_EQ(outcomes[0].sites[0].where.line, 8u);
    EXPECT_EQ(outcomes[0].sites[1].where.line, 9u);
    for (const auto& site : outcomes[0].sites) {
        ASSERT_TRUE(site.fix);
        for (const auto& e : site.fix->edits) EXPECT_EQ(e.text.find('\n'), std::string::npos);
    }
    ASSERT_TRUE(outcomes[0].runtime_edit);
    EXPECT_EQ(outcomes[0].runtime_edit->text.find('\n'), std::string::npos);
}

TEST(DiskInputs, ARewriteIsWrittenOnlyOverTheBytesThatWereRead) {
    TempTree tree;
    const std::string path = (tree.root / "m.py").string();
    tree.write("m.py", "x = 1\n");
    const auto read = analysis::DiskText::of("x = 1\n");
    output::write_if_unchanged(path, "x = 2\n", read);
    EXPECT_EQ(syntax::read_file(path), "x = 2\n");
    // Edited since it was read: the edit stays.
    tree.write("m.py", "x = 1  # edited\n");
    try {
        output::write_if_unchanged(path, "x = 3\n", read);
        ADD_FAILURE() << "written over an edit";
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), path + ": changed on disk since graphmend read it; not written");
    }
    EXPECT_EQ(syntax::read_file(path), "x = 1  # edited\n");
    // Removed since it was read: not brought back.
    fs::remove(path);
    try {
        output::write_if_unchanged(path, "x = 3\n", read);
        ADD_FAILURE() << "a removed file written";
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), path + ": cannot read: No such file or directory; not written");
    }
    EXPECT_FALSE(fs::exists(path));
}

// A file with LF and lone-CR line ends (CPython ends a line at each; the grammar did not, and
// the file was a "1:1: syntax error"), and a "\r\r\n", which is two line ends: it is fixed as
// the text with LF for each lone CR is, its sites on CPython's lines, and its lone CRs outside
// the rewritten spans are written back.
TEST(DiskInputs, AFileWithSomeLoneCrsIsFixedOnPythonsLinesAndKeepsThem) {
    TempTree tree;
    std::string text = kFiles[0].second;  // lines 1-3 end in LF, line 4 in "\r\r\n", the rest in CR
    for (std::size_t at = 0, line = 1; (at = text.find('\n', at)) != std::string::npos; ++at, ++line) {
        if (line == 4) {
            text.replace(at, 1, "\r\r\n");
            at += 2;
        } else if (line > 4) {
            text[at] = '\r';
        }
    }
    tree.write("mixed/model.py", text);
    tree.write("mixed/base.py", kFiles[1].second);
    tree.write("mixed/helpers.py", kFiles[2].second);
    std::vector<InputFile> inputs;
    for (const char* name : {"model.py", "base.py", "helpers.py"}) {
        inputs.push_back({(tree.root / "mixed" / name).string(), std::string(), nullptr, RuntimeForm::Inline, true});
    }
    const auto outcomes = fix_files(inputs, FixOptions{});
    ASSERT_FALSE(outcomes[0].error) << *outcomes[0].error;
    ASSERT_TRUE(outcomes[0].changed());
    EXPECT_EQ(outcomes[0].original, text);
    ASSERT_EQ(outcomes[0].sites.size(), 2u);
    EXPECT_EQ(outcomes[0].sites[0].where.line, 9u);  // CPython's line: "\r\r\n" ends two
    EXPECT_EQ(outcomes[0].sites[1].where.line, 10u);
    EXPECT_EQ(TextLines::of(text).starts.size(), 13u);
    // As the same text with LF for each lone CR is fixed, with the CRs back where bytes were kept.
    std::string lf = text;
    syntax::lf_for_lone_crs(lf);
    inputs[0] = {inputs[0].path, lf, nullptr, RuntimeForm::Inline};
    const auto as_lf = fix_files(inputs, FixOptions{});
    std::string fixed = outcomes[0].fixed;
    syntax::lf_for_lone_crs(fixed);
    EXPECT_EQ(fixed, as_lf[0].fixed);
    const std::size_t first_site = outcomes[0].sites[0].begin;
    EXPECT_EQ(outcomes[0].fixed.substr(0, first_site), text.substr(0, first_site));
    EXPECT_NE(outcomes[0].fixed.find("\r        return double(x)\r"), std::string::npos);
}

// A long run of rewritten lines in a file with LF and lone-CR line ends (over the byte diff's
// limit as one text): the run is matched line by line, so every lone CR between its lines stays.
TEST(DiskInputs, ALongRunOfRewrittenLinesKeepsEachLoneCr) {
    std::string text = "import torch\n\n\nclass M(torch.nn.Module):\r    def forward(self, x):\r";
    for (int i = 0; i < 2000; ++i) text += "        print(x)  # " + std::string(40, 'p') + "\r";
    text += "        return x\r";
    const auto outcomes = fix_files({{"m.py", text, nullptr, RuntimeForm::Inline}}, FixOptions{});
    ASSERT_FALSE(outcomes[0].error) << *outcomes[0].error;
    ASSERT_EQ(outcomes[0].sites.size(), 2000u);
    EXPECT_EQ(std::count(outcomes[0].applied.begin(), outcomes[0].applied.end(), true), 2000);
    EXPECT_EQ(outcomes[0].original, text);
    const std::string& fixed = outcomes[0].fixed;
    const std::size_t tail = fixed.find("        return x\r");
    ASSERT_NE(tail, std::string::npos);
    // Every line up to the return ends in its CR, as it did.
    EXPECT_EQ(std::count(fixed.begin(), fixed.begin() + static_cast<std::ptrdiff_t>(tail), '\r'), 2002);
    EXPECT_EQ(fixed.substr(0, fixed.find('\r')), "import torch\n\n\nclass M(torch.nn.Module):");
    std::string lf = text;
    syntax::lf_for_lone_crs(lf);
    std::string as_lf = fixed;
    syntax::lf_for_lone_crs(as_lf);
    EXPECT_EQ(as_lf, fix_files({{"m.py", lf, nullptr, RuntimeForm::Inline}}, FixOptions{})[0].fixed);
}

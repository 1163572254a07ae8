// File discovery: default and configured excludes, .gitignore (read by libgit2), symbolic
// links, paths given explicitly, warnings.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "graphmend/config.hpp"
#include "temp_tree.hpp"

using namespace graphmend::config;

namespace {

using Files = std::vector<std::string>;

// The files found under `tree` for `paths` (relative to it), relative to it.
Files found(const TempTree& tree, const Files& paths, Overrides overrides = {}, Discovered* out = nullptr) {
    Files absolute;
    for (const auto& p : paths) absolute.push_back((tree.root / p).string());
    Resolver resolver(std::move(overrides));
    Discovered d = discover(absolute, resolver);
    Files rel;
    for (const auto& f : d.files) {
        rel.push_back(fs::path(f).lexically_normal().lexically_relative(tree.root).generic_string());
    }
    if (out != nullptr) *out = std::move(d);
    return rel;
}

bool has_warning(const Discovered& d, std::string_view part) {
    return std::any_of(d.warnings.begin(), d.warnings.end(),
                       [&](const std::string& w) { return w.find(part) != std::string::npos; });
}

TEST(Discovery, DefaultExcludesButNotOtherHiddenFolders) {
    TempTree t;
    for (const char* f : {"a.py", ".venv/x.py", "venv/x.py", "build/x.py", "node_modules/x.py", "__pycache__/x.py",
                          "site-packages/x.py", ".git/x.py", ".github/x.py", "sub/b.py", "c.txt", "sub/d.pyi"}) {
        t.write(f, "x = 1\n");
    }
    EXPECT_EQ(found(t, {"."}), (Files{".github/x.py", "a.py", "sub/b.py"}));
}

TEST(Discovery, ConfigExcludeReplacesDefaultsAndExtendExcludeAdds) {
    TempTree t;
    t.write("pyproject.toml", "[tool.graphmend]\nexclude = [\"gen\"]\nextend-exclude = [\"sub/*_pb2.py\"]\n");
    for (const char* f : {"a.py", ".venv/x.py", "gen/g.py", "sub/m_pb2.py", "sub/m.py", "other/sub/m_pb2.py"}) {
        t.write(f, "x = 1\n");
    }
    EXPECT_EQ(found(t, {"."}), (Files{".venv/x.py", "a.py", "other/sub/m_pb2.py", "sub/m.py"}));
}

TEST(Discovery, CommandLineExtendExcludeIsRelativeToTheWorkingFolder) {
    TempTree t;
    t.write("a/m.py", "x = 1\n");
    t.write("a/n.py", "x = 1\n");
    Overrides cli;
    cli.extend_exclude.push_back(FilePattern::relative_to("a/n.py", t.root));
    EXPECT_EQ(found(t, {"a"}, cli), (Files{"a/m.py"}));
}

TEST(Discovery, NestedConfigExcludesApplyBelowIt) {
    TempTree t;
    t.write("sub/graphmend.toml", "extend-exclude = [\"skip_me.py\"]\n");
    t.write("skip_me.py", "x = 1\n");
    t.write("sub/skip_me.py", "x = 1\n");
    t.write("sub/keep.py", "x = 1\n");
    EXPECT_EQ(found(t, {"."}), (Files{"skip_me.py", "sub/keep.py"}));
}

TEST(Discovery, PathsGivenAreNeverExcluded) {
    TempTree t;
    t.write("build/x.py", "x = 1\n");
    t.write(".venv/lib/y.py", "x = 1\n");
    t.write("notes.txt", "x\n");
    EXPECT_EQ(found(t, {"build/x.py", ".venv", "notes.txt"}), (Files{"build/x.py", ".venv/lib/y.py", "notes.txt"}));
}

TEST(Discovery, GitignoreNegationAnchoringDoubleStarAndFolderOnlyPatterns) {
    TempTree t;
    t.git_init();
    t.write(".gitignore", "*.gen.py\n!keep.gen.py\n/top.py\ndata/\ndocs/**/tmp_*.py\nlib.py/\n");
    t.write("sub/.gitignore", "local.py\n");
    t.write(".git/info/exclude", "by_info.py\n");
    for (const char* f : {"a.gen.py", "keep.gen.py", "top.py", "sub/top.py", "data/x.py", "docs/a/b/tmp_1.py",
                          "docs/tmp_2.py", "docs/keep.py", "lib.py", "pkg/lib.py/m.py", "sub/local.py", "local.py",
                          "by_info.py", "m.py"}) {
        t.write(f, "x = 1\n");
    }
    EXPECT_EQ(found(t, {"."}),
              (Files{"docs/keep.py", "keep.gen.py", "lib.py", "local.py", "m.py", "sub/top.py"}));
    Overrides all;
    all.no_respect_gitignore = true;
    EXPECT_EQ(found(t, {"."}, all).size(), 14u);
}

TEST(Discovery, RespectGitignoreFalseInTheConfig) {
    TempTree t;
    t.git_init();
    t.write(".gitignore", "gen.py\n");
    t.write("graphmend.toml", "respect-gitignore = false\n");
    t.write("gen.py", "x = 1\n");
    EXPECT_EQ(found(t, {"."}), (Files{"gen.py"}));
}

TEST(Discovery, AGitignoredFolderGivenIsWalked) {
    TempTree t;
    t.git_init();
    t.write(".gitignore", "data/\n");
    t.write("data/x.py", "x = 1\n");
    EXPECT_EQ(found(t, {"data"}), (Files{"data/x.py"}));
}

TEST(Discovery, GitignoreOutsideAWorkTreeIsNotRead) {
    TempTree t;
    t.write(".gitignore", "x.py\n");
    t.write("x.py", "x = 1\n");
    EXPECT_EQ(found(t, {"."}), (Files{"x.py"}));
}

TEST(Discovery, FollowsSymlinkedFilesAndFoldersLikeAHuggingFaceSnapshot) {
    TempTree t;
    t.write("hub/blobs/0a1b", "x = 1\n");
    t.write("hub/other/n.py", "x = 1\n");
    t.symlink("../../blobs/0a1b", "hub/snapshots/rev/modeling_x.py");
    t.symlink("../../other", "hub/snapshots/rev/linked");
    Discovered d;
    EXPECT_EQ(found(t, {"hub/snapshots/rev"}, {}, &d),
              (Files{"hub/snapshots/rev/linked/n.py", "hub/snapshots/rev/modeling_x.py"}));
    EXPECT_TRUE(d.warnings.empty());
}

TEST(Discovery, ALinkLoopIsWarnedAboutAndTheRestIsWalked) {
    TempTree t;
    t.write("p/a.py", "x = 1\n");
    t.write("p/q/b.py", "x = 1\n");
    t.symlink("..", "p/q/up");
    t.symlink("missing.py", "p/broken.py");
    Discovered d;
    EXPECT_EQ(found(t, {"p"}, {}, &d), (Files{"p/a.py", "p/q/b.py"}));
    EXPECT_TRUE(has_warning(d, "p/q/up: symbolic link loop")) << ::testing::PrintToString(d.warnings);
    EXPECT_TRUE(has_warning(d, "p/broken.py: broken symbolic link"));
}

TEST(Discovery, AFolderWithoutPythonFilesIsAWarningAndAMissingPathAnError) {
    TempTree t;
    t.write("docs/readme.md", "x\n");
    Discovered d;
    EXPECT_TRUE(found(t, {"docs", "missing"}, {}, &d).empty());
    EXPECT_TRUE(has_warning(d, "docs: no Python files found"));
    ASSERT_EQ(d.errors.size(), 1u);
    EXPECT_NE(d.errors[0].find("missing: no such file or folder"), std::string::npos);
}

TEST(Discovery, AFifoIsNeverReadGivenOrInAFolder) {
    // Opening a FIFO for reading blocks until a writer comes: a batch given one hung.
    TempTree t;
    t.write("p/a.py", "x = 1\n");
    ASSERT_EQ(::mkfifo((t.root / "p/pipe.py").c_str(), 0600), 0);
    Discovered d;
    EXPECT_EQ(found(t, {"p", "p/pipe.py"}, {}, &d), (Files{"p/a.py"}));
    EXPECT_EQ(std::count_if(d.warnings.begin(), d.warnings.end(),
                            [](const std::string& w) {
                                return w.find("pipe.py: a FIFO (named pipe), not a regular file; skipped") !=
                                       std::string::npos;
                            }),
              2)
        << ::testing::PrintToString(d.warnings);
    EXPECT_TRUE(d.errors.empty());
}

TEST(Discovery, AnUnreadableFolderIsWarnedAbout) {
    TempTree t;
    t.write("p/a.py", "x = 1\n");
    t.write("p/locked/b.py", "x = 1\n");
    ::chmod(t.root.c_str(), 0755);  // mkdtemp's 0700 would lock `nobody` out of the whole tree
    ::chmod((t.root / "p/locked").c_str(), 0);
    // Root reads every folder whatever its mode: as root, the walk runs in a child process
    // that has become the unprivileged user `nobody` (65534) first, and reports by its exit
    // status (1: not the files expected, 2: no warning, 3: could not drop root).
    auto walk = [&]() -> int {
        Discovered d;
        if (found(t, {"p"}, {}, &d) != Files{"p/a.py"}) return 1;
        return has_warning(d, "p/locked: cannot read folder") ? 0 : 2;
    };
    int result = 0;
    if (::geteuid() == 0) {
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
            ::_exit(walk());
        }
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status));
        result = WEXITSTATUS(status);
    } else {
        result = walk();
    }
    ::chmod((t.root / "p/locked").c_str(), 0755);
    EXPECT_EQ(result, 0) << "1: other files found, 2: no warning, 3: could not become nobody";
}

}  // namespace

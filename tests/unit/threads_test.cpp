// --threads: the thread pool hands out every item once, and graphmend's output (reports,
// JSON report, diffs, written files) is byte-identical whatever the thread count. The
// folder used is every fixture and handed case (tests/fixtures, tests/cases) fixed as one
// project: it holds a package with cross-file imports, files with and without sites, and
// the expected outputs.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

#include "graphmend/fixer.hpp"
#include "graphmend/output.hpp"
#include "graphmend/parallel.hpp"

namespace fs = std::filesystem;
using namespace graphmend;

namespace {

const fs::path kRoot = GRAPHMEND_SOURCE_DIR;

TEST(ParallelFor, EveryIndexRunsOnceForEveryThreadCount) {
    for (const unsigned threads : {0u, 1u, 2u, 3u, 8u}) {
        for (const std::size_t n : {0u, 1u, 2u, 7u, 1000u}) {
            std::vector<std::atomic<int>> runs(n);
            parallel_for(n, threads, [&](std::size_t i) { runs[i].fetch_add(1); });
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(runs[i].load(), 1) << "n=" << n << " threads=" << threads;
        }
    }
}

TEST(ParallelFor, RethrowsTheLowestIndexAfterRunningTheRest) {
    for (const unsigned threads : {1u, 2u, 4u}) {
        std::atomic<int> ran{0};
        try {
            parallel_for(50, threads, [&](std::size_t i) {
                ran.fetch_add(1);
                if (i == 31 || i == 17) throw std::runtime_error(std::to_string(i));
            });
            FAIL() << "no exception";
        } catch (const std::runtime_error& e) {
            EXPECT_STREQ(e.what(), "17") << "threads=" << threads;
        }
        EXPECT_EQ(ran.load(), 50);
    }
}

TEST(ParallelFor, ZeroMeansOneThreadPerCpu) {
    EXPECT_GE(resolve_threads(0), 1u);
    EXPECT_EQ(resolve_threads(3), 3u);
}

// Every *.py of tests/fixtures and tests/cases, relative to the repository root.
std::vector<InputFile> fixture_inputs() {
    std::vector<InputFile> inputs;
    for (const char* dir : {"tests/fixtures", "tests/cases"}) {
        for (const auto& f : output::collect_python_files({(kRoot / dir).string()})) {
            inputs.push_back({fs::relative(f, kRoot).string(), syntax::read_file(f)});
        }
    }
    return inputs;
}

// Everything graphmend prints or writes for these outcomes, as one string.
std::string rendered(const std::vector<FileOutcome>& outcomes) {
    std::string out;
    for (const auto& o : outcomes) {
        out += output::text_report(o, output::Mode::Fix);
        out += output::unified_diff(o.path, o.original, o.fixed);
        out += "=== fixed " + o.path + "\n" + o.fixed;
    }
    return out + output::json_report(outcomes, output::Mode::Fix).dump(2);
}

TEST(Threads, FixFilesGivesTheSameOutcomesForEveryThreadCount) {
    const auto inputs = fixture_inputs();
    ASSERT_GT(inputs.size(), 20u);
    const auto one = fix_files(inputs, FixOptions{false, 1});
    std::size_t changed = 0;
    for (const auto& o : one) changed += o.changed() ? 1 : 0;
    ASSERT_GT(changed, 5u) << "the folder should exercise fixes";
    const std::string expected = rendered(one);
    for (const unsigned threads : {2u, 3u, 8u, 0u}) {
        const auto many = fix_files(inputs, FixOptions{false, threads});
        ASSERT_EQ(many.size(), one.size());
        for (std::size_t i = 0; i < one.size(); ++i) {
            ASSERT_EQ(many[i].path, one[i].path);
            ASSERT_EQ(many[i].fixed, one[i].fixed) << one[i].path << " threads=" << threads;
            ASSERT_EQ(many[i].applied, one[i].applied) << one[i].path << " threads=" << threads;
        }
        EXPECT_EQ(rendered(many), expected) << "threads=" << threads;
    }
}

// The project keeps only the trees its analysis reads (analysis::Project's constructor): the
// outcomes are those of a run that keeps every tree, over the fixtures, the handed cases and
// the Hub-style checkouts (folder projects joined by relative imports).
TEST(Threads, FixFilesGivesTheSameOutcomesAsARunKeepingEveryTree) {
    auto inputs = fixture_inputs();
    for (const auto& f : output::collect_python_files({(kRoot / "tests/checkouts").string()})) {
        inputs.push_back({fs::relative(f, kRoot).string(), syntax::read_file(f)});
    }
    ASSERT_GT(inputs.size(), 40u);
    FixOptions keep;
    keep.threads = 2;
    keep.keep_trees = true;
    const auto every = fix_files(inputs, keep);
    const auto pruned = fix_files(inputs, FixOptions{false, 2});
    ASSERT_EQ(pruned.size(), every.size());
    for (std::size_t i = 0; i < every.size(); ++i) {
        ASSERT_EQ(pruned[i].fixed, every[i].fixed) << every[i].path;
        ASSERT_EQ(pruned[i].applied, every[i].applied) << every[i].path;
    }
    EXPECT_EQ(rendered(pruned), rendered(every));
}

// --- the command line ---------------------------------------------------------------------

struct TempDir {
    fs::path path;
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "graphmend-threads-XXXXXX").string();
        if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        path = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Every regular file under `dir`: relative path -> bytes.
std::map<std::string, std::string> tree_of(const fs::path& dir) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = slurp(e.path());
    }
    return out;
}

struct CliRun {
    int status;
    std::string out;
    std::string err;
    std::string json;
};

// Runs `graphmend ARGS` in `cwd` (copied fixtures under src/); stdout, stderr and the JSON
// report are kept next to it, outside the folder it checks.
CliRun run_graphmend(const fs::path& cwd, const std::string& args) {
    const std::string cmd = "cd '" + cwd.string() + "' && '" GRAPHMEND_BINARY "' " + args +
                            " --report-json ../report.json > ../stdout.txt 2> ../stderr.txt";
    const int status = std::system(cmd.c_str());
    const fs::path up = cwd.parent_path();
    return {status, slurp(up / "stdout.txt"), slurp(up / "stderr.txt"), slurp(up / "report.json")};
}

// A copy of tests/fixtures and tests/cases under TMP/THREADS/src, for one run each.
fs::path copy_fixtures(const fs::path& tmp, unsigned threads) {
    const fs::path src = tmp / std::to_string(threads) / "src";
    fs::create_directories(src);
    fs::copy(kRoot / "tests/fixtures", src / "fixtures", fs::copy_options::recursive);
    fs::copy(kRoot / "tests/cases", src / "cases", fs::copy_options::recursive);
    return src;
}

TEST(Threads, CommandLineOutputIsByteIdenticalForOneAndTwoThreads) {
    TempDir tmp;
    int round = 0;
    for (const std::string mode : {"check .", "fix --diff .", "fix ."}) {
        const fs::path base = tmp.path / std::to_string(round++);
        std::map<unsigned, CliRun> runs;
        std::map<unsigned, std::map<std::string, std::string>> trees;
        for (const unsigned threads : {1u, 2u}) {
            const fs::path src = copy_fixtures(base, threads);
            runs[threads] = run_graphmend(src, mode + " --threads " + std::to_string(threads));
            trees[threads] = tree_of(src);
        }
        ASSERT_EQ(runs[1].status, runs[2].status) << mode;
        ASSERT_FALSE(runs[1].err.empty()) << mode;
        ASSERT_NE(runs[1].json.find("\"totals\""), std::string::npos) << mode;
        EXPECT_EQ(runs[1].err, runs[2].err) << mode;
        EXPECT_EQ(runs[1].out, runs[2].out) << mode;
        EXPECT_EQ(runs[1].json, runs[2].json) << mode;
        EXPECT_EQ(trees[1], trees[2]) << mode;
        if (mode == "fix --diff .") {
            EXPECT_NE(runs[1].out.find("+++ b/"), std::string::npos);
        }
        if (mode == "fix .") {
            EXPECT_NE(trees[1], tree_of(copy_fixtures(base / "pristine", 1))) << "fix . rewrote nothing";
        }
    }
}

TEST(Threads, RejectsANegativeCount) {
    const std::string cmd = "'" GRAPHMEND_BINARY "' check --threads -1 '" + (kRoot / "tests/cases").string() +
                            "' > /dev/null 2>&1";
    const int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 2);
}

}  // namespace

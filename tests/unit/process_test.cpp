// verify::run_process (include/graphmend/process.hpp): how a child ended, its time limit and
// process group, its environment, folder and streams, spawn failures, and the interrupt flag.
// No test asserts that something is fast beyond a bound a slow machine keeps (25 s).
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "graphmend/process.hpp"
#include "temp_tree.hpp"

using namespace graphmend::verify;

namespace {

ProcessSpec shell(const std::string& script) {
    ProcessSpec spec;
    spec.argv = {"sh", "-c", script};
    return spec;
}

ProcessResult piped(ProcessSpec spec) {
    spec.stdout_to_pipe = true;
    return run_process(spec);
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

/// Whether the process `pid` is gone or a zombie (dead, not yet reaped by whoever adopted it),
/// waiting up to 20 s for it to get there.
bool dead_soon(int pid) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < until) {
        std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
        std::string text;
        if (!std::getline(stat, text)) return true;
        const auto paren = text.rfind(')');
        if (paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z') return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

TEST(Process, ExitCodes) {
    for (const int code : {0, 1, 3, 255}) {
        const auto r = run_process(shell("exit " + std::to_string(code)));
        EXPECT_TRUE(r.started) << r.error;
        EXPECT_EQ(r.exit_code, code);
        EXPECT_EQ(r.signal, 0);
        EXPECT_FALSE(r.timed_out);
        EXPECT_FALSE(r.interrupted);
        EXPECT_TRUE(r.error.empty()) << r.error;
    }
}

TEST(Process, EndedBySignal) {
    const auto r = run_process(shell("kill -TERM $$"));
    ASSERT_TRUE(r.started) << r.error;
    EXPECT_EQ(r.signal, SIGTERM);
    EXPECT_EQ(r.exit_code, -1);
    EXPECT_FALSE(r.timed_out);
}

TEST(Process, TimeoutEndsTheWholeGroup) {
    TempTree tree;
    const auto pidfile = tree.root / "bg.pid";
    auto spec = shell("sleep 30 & echo $! > '" + pidfile.string() + "'; sleep 30");
    spec.timeout_s = 0.5;
    const auto r = run_process(spec);
    ASSERT_TRUE(r.started) << r.error;
    EXPECT_TRUE(r.timed_out);
    EXPECT_EQ(r.signal, SIGTERM);
    EXPECT_LT(r.wall_s, 25);
    const std::string pid = read_file(pidfile);
    ASSERT_FALSE(pid.empty());
    EXPECT_TRUE(dead_soon(std::stoi(pid))) << "the background sleep outlived the timeout";
}

TEST(Process, TimeoutKillsWhatIgnoresTerm) {
    auto spec = shell("trap '' TERM; sleep 30");
    spec.timeout_s = 0.2;
    spec.kill_after_s = 0.5;
    const auto r = run_process(spec);
    ASSERT_TRUE(r.started) << r.error;
    EXPECT_TRUE(r.timed_out);
    EXPECT_EQ(r.signal, SIGKILL);
    EXPECT_GE(r.wall_s, 0.7);
    EXPECT_LT(r.wall_s, 25);
}

TEST(Process, LeftoversAreKilledAtExit) {
    TempTree tree;
    const auto pidfile = tree.root / "bg.pid";
    const auto r = run_process(shell("sleep 30 >/dev/null 2>&1 & echo $! > '" + pidfile.string() + "'"));
    ASSERT_TRUE(r.started) << r.error;
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_TRUE(dead_soon(std::stoi(read_file(pidfile))));
}

TEST(Process, EnvironmentSetOverriddenAndUnset) {
    ::setenv("GRAPHMEND_TEST_KEEP", "kept", 1);
    ::setenv("GRAPHMEND_TEST_OVERRIDE", "old", 1);
    ::setenv("GRAPHMEND_TEST_UNSET", "there", 1);
    auto spec = shell(R"(printf '%s|%s|%s|%s' "$GRAPHMEND_TEST_KEEP" "$GRAPHMEND_TEST_OVERRIDE" )"
                      R"("${GRAPHMEND_TEST_UNSET-unset}" "$GRAPHMEND_TEST_NEW")");
    spec.env_set = {{"GRAPHMEND_TEST_OVERRIDE", "new"}, {"GRAPHMEND_TEST_NEW", "a b=c"}};
    spec.env_unset = {"GRAPHMEND_TEST_UNSET"};
    const auto r = piped(spec);
    ::unsetenv("GRAPHMEND_TEST_KEEP");
    ::unsetenv("GRAPHMEND_TEST_OVERRIDE");
    ::unsetenv("GRAPHMEND_TEST_UNSET");
    ASSERT_TRUE(r.started) << r.error;
    EXPECT_EQ(r.out, "kept|new|unset|a b=c");
}

TEST(Process, WorkingFolder) {
    TempTree tree;
    ProcessSpec spec;
    spec.argv = {"pwd", "-P"};
    spec.cwd = tree.root.string();
    const auto r = piped(spec);
    ASSERT_TRUE(r.started) << r.error;
    EXPECT_EQ(r.out, tree.root.string() + "\n");
}

TEST(Process, MissingWorkingFolder) {
    TempTree tree;
    ProcessSpec spec;
    spec.argv = {"true"};
    spec.cwd = (tree.root / "absent").string();
    const auto r = run_process(spec);
    EXPECT_FALSE(r.started);
    EXPECT_NE(r.error.find("absent"), std::string::npos) << r.error;
}

TEST(Process, StdoutAndStderrToFiles) {
    TempTree tree;
    auto spec = shell("head -c 1048576 /dev/zero | tr '\\0' x; echo oops >&2");
    spec.stdout_path = (tree.root / "out.txt").string();
    spec.stderr_path = (tree.root / "err.txt").string();
    tree.write("out.txt", "old text that is truncated");
    const auto r = run_process(spec);
    ASSERT_TRUE(r.started) << r.error;
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(read_file(spec.stdout_path), std::string(1048576, 'x'));
    EXPECT_EQ(read_file(spec.stderr_path), "oops\n");
    EXPECT_TRUE(r.out.empty());
}

TEST(Process, StdoutToPipeTakesAMegabyte) {
    const auto r = piped(shell("head -c 1048576 /dev/zero | tr '\\0' y; echo end"));
    ASSERT_TRUE(r.started) << r.error;
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out, std::string(1048576, 'y') + "end\n");
}

TEST(Process, StdinFromFileOrNothing) {
    TempTree tree;
    tree.write("in.txt", "line one\nline two\n");
    ProcessSpec spec;
    spec.argv = {"cat"};
    spec.stdin_path = (tree.root / "in.txt").string();
    EXPECT_EQ(piped(spec).out, "line one\nline two\n");
    spec.stdin_path.clear();  // /dev/null: cat ends at once
    const auto r = piped(spec);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out, "");
}

TEST(Process, SpawnFailures) {
    ProcessSpec spec;
    spec.argv = {"graphmend-no-such-program-xyz", "--help"};
    auto r = run_process(spec);
    EXPECT_FALSE(r.started);
    EXPECT_EQ(r.error, "graphmend-no-such-program-xyz: not found");

    TempTree tree;
    spec.argv = {"true"};
    spec.stdout_path = (tree.root / "no" / "such" / "folder" / "out.txt").string();
    r = run_process(spec);
    EXPECT_FALSE(r.started);
    EXPECT_NE(r.error.find("cannot open stdout file"), std::string::npos) << r.error;

    spec.argv.clear();
    EXPECT_FALSE(run_process(spec).started);
}

TEST(Process, PeakMemoryAndWallTime) {
    const auto r = run_process(shell("true"));
    ASSERT_TRUE(r.started) << r.error;
    EXPECT_GT(r.peak_rss_kb, 0);
    EXPECT_GT(r.wall_s, 0);
}

TEST(Process, ManyThreadsAtOnce) {
    std::vector<std::future<ProcessResult>> runs;
    for (int i = 0; i < 12; ++i) {
        runs.push_back(std::async(std::launch::async, [i] {
            return piped(shell("sleep 0.1; printf %s " + std::to_string(i) + "; exit " + std::to_string(i)));
        }));
    }
    for (int i = 0; i < 12; ++i) {
        const auto r = runs[static_cast<std::size_t>(i)].get();
        EXPECT_EQ(r.exit_code, i);
        EXPECT_EQ(r.out, std::to_string(i));
    }
}

TEST(Process, InterruptEndsARunningChild) {
    reset_interrupt();
    auto run = std::async(std::launch::async, [] { return run_process(shell("sleep 30 & sleep 30")); });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    request_interrupt();
    const auto r = run.get();
    EXPECT_TRUE(r.interrupted);
    EXPECT_FALSE(r.timed_out);
    EXPECT_LT(r.wall_s, 25);
    // Nothing starts while the flag is up.
    const auto later = run_process(shell("exit 0"));
    EXPECT_FALSE(later.started);
    EXPECT_TRUE(later.interrupted);
    reset_interrupt();
    EXPECT_TRUE(run_process(shell("exit 0")).started);
}

TEST(Process, HandlerSetsTheFlag) {
    reset_interrupt();
    install_interrupt_handler();
    ::raise(SIGINT);  // the first one only sets the flag
    EXPECT_TRUE(interrupt_requested());
    reset_interrupt();
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
}

TEST(Process, TerminateAllChildren) {
    reset_interrupt();
    auto run = std::async(std::launch::async, [] { return run_process(shell("sleep 30")); });
    // Until the child is registered, the call may find nothing: try again until it ends.
    for (int i = 0; i < 1000 && run.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready; ++i) {
        terminate_all_children();
    }
    const auto r = run.get();
    EXPECT_EQ(r.signal, SIGKILL);
    EXPECT_FALSE(r.interrupted);
}

}  // namespace

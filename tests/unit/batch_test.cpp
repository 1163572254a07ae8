// verify::run_batch (include/graphmend/batch.hpp): outcomes in input order, the cap on jobs at
// once, a throwing job, on_done's serialised calls, an interrupt, and the progress bar's text.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "graphmend/batch.hpp"
#include "graphmend/process.hpp"

using namespace graphmend::verify;
using namespace std::chrono_literals;

namespace {

BatchOutcome ok(const std::string& line) {
    BatchOutcome outcome;
    outcome.status = "ok";
    outcome.line = line;
    return outcome;
}

TEST(Batch, OutcomesInInputOrder) {
    std::vector<BatchJob> jobs;
    for (int i = 0; i < 8; ++i) {
        // The first jobs take longest, so they finish last.
        jobs.push_back({"job" + std::to_string(i), [i] {
                            std::this_thread::sleep_for(std::chrono::milliseconds(10 * (8 - i)));
                            auto outcome = ok("line " + std::to_string(i));
                            outcome.data = {{"i", i}};
                            return outcome;
                        }});
    }
    std::vector<std::size_t> finished;
    BatchOptions opt;
    opt.jobs = 4;
    opt.on_done = [&](std::size_t index, const BatchOutcome& outcome) {
        finished.push_back(index);
        EXPECT_EQ(outcome.line, "line " + std::to_string(index));
    };
    const auto outcomes = run_batch(jobs, opt);
    ASSERT_EQ(outcomes.size(), 8U);
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(outcomes[static_cast<std::size_t>(i)].status, "ok");
        EXPECT_EQ(outcomes[static_cast<std::size_t>(i)].data["i"], i);
        EXPECT_GT(outcomes[static_cast<std::size_t>(i)].wall_s, 0);  // filled in by run_batch
    }
    std::sort(finished.begin(), finished.end());
    EXPECT_EQ(finished, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7}));  // each once
}

TEST(Batch, NoMoreThanJobsAtOnce) {
    for (const unsigned cap : {0U, 1U, 2U, 3U}) {
        std::atomic<int> running{0}, most{0};
        std::vector<BatchJob> jobs(10, BatchJob{"j", [&] {
                                                    const int now = ++running;
                                                    int seen = most.load();
                                                    while (now > seen && !most.compare_exchange_weak(seen, now)) {
                                                    }
                                                    std::this_thread::sleep_for(20ms);
                                                    --running;
                                                    return ok("");
                                                }});
        BatchOptions opt;
        opt.jobs = cap;
        const auto outcomes = run_batch(jobs, opt);
        EXPECT_EQ(outcomes.size(), 10U);
        EXPECT_GE(most.load(), 1);
        EXPECT_LE(most.load(), static_cast<int>(std::max(cap, 1U))) << "cap " << cap;
    }
}

TEST(Batch, AThrowingJobIsAnErrorAndTheRestRun) {
    std::atomic<int> ran{0};
    std::vector<BatchJob> jobs;
    jobs.push_back({"first", [&] { ++ran; return ok("first"); }});
    jobs.push_back({"broken", []() -> BatchOutcome { throw std::runtime_error("no config.json"); }});
    jobs.push_back({"odd", []() -> BatchOutcome { throw 42; }});
    jobs.push_back({"last", [&] { ++ran; return ok("last"); }});
    BatchOptions opt;
    opt.jobs = 2;
    const auto outcomes = run_batch(jobs, opt);
    EXPECT_EQ(ran.load(), 2);
    EXPECT_EQ(outcomes[0].status, "ok");
    EXPECT_EQ(outcomes[1].status, "error");
    EXPECT_EQ(outcomes[1].line, "broken: error: no config.json");
    EXPECT_EQ(outcomes[2].status, "error");
    EXPECT_EQ(outcomes[2].line, "odd: error: an unknown exception");
    EXPECT_EQ(outcomes[3].status, "ok");
}

TEST(Batch, OnDoneCallsAreSerialised) {
    std::atomic<int> inside{0};
    bool overlapped = false;
    int calls = 0;
    std::vector<BatchJob> jobs(16, BatchJob{"j", [] { return ok(""); }});
    BatchOptions opt;
    opt.jobs = 4;
    opt.on_done = [&](std::size_t, const BatchOutcome&) {
        if (++inside > 1) overlapped = true;
        std::this_thread::sleep_for(2ms);
        ++calls;  // not atomic: the lock is what keeps it right
        --inside;
    };
    run_batch(jobs, opt);
    EXPECT_FALSE(overlapped);
    EXPECT_EQ(calls, 16);
}

TEST(Batch, AnInterruptKeepsTheRestFromStarting) {
    reset_interrupt();
    std::vector<bool> ran(5, false);
    std::vector<BatchJob> jobs;
    for (std::size_t i = 0; i < 5; ++i) {
        jobs.push_back({"job" + std::to_string(i), [&ran, i] {
                            ran[i] = true;
                            if (i == 1) request_interrupt();
                            return ok("");
                        }});
    }
    std::vector<std::size_t> reported;
    BatchOptions opt;
    opt.jobs = 1;
    opt.on_done = [&](std::size_t index, const BatchOutcome&) { reported.push_back(index); };
    const auto outcomes = run_batch(jobs, opt);
    reset_interrupt();
    EXPECT_EQ(ran, (std::vector<bool>{true, true, false, false, false}));
    EXPECT_EQ(outcomes[0].status, "ok");
    EXPECT_EQ(outcomes[1].status, "ok");
    for (std::size_t i = 2; i < 5; ++i) {
        EXPECT_EQ(outcomes[i].status, "interrupted");
        EXPECT_EQ(outcomes[i].line, "job" + std::to_string(i) + ": interrupted");
    }
    EXPECT_EQ(reported, (std::vector<std::size_t>{0, 1, 2, 3, 4}));
}

TEST(Batch, AnInterruptReachesARunningProcess) {
    reset_interrupt();
    std::vector<BatchJob> jobs;
    for (int i = 0; i < 3; ++i) {
        jobs.push_back({"sleep", [] {
                            ProcessSpec spec;
                            spec.argv = {"sleep", "30"};
                            const auto r = run_process(spec);
                            BatchOutcome outcome;
                            outcome.status = r.interrupted ? "interrupted" : "ok";
                            outcome.wall_s = r.wall_s;
                            outcome.peak_rss_kb = r.peak_rss_kb;
                            return outcome;
                        }});
    }
    std::jthread interrupter([] {
        std::this_thread::sleep_for(200ms);
        request_interrupt();
    });
    BatchOptions opt;
    opt.jobs = 2;
    const auto start = std::chrono::steady_clock::now();
    const auto outcomes = run_batch(jobs, opt);
    interrupter.join();
    reset_interrupt();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 25s);
    for (const auto& outcome : outcomes) EXPECT_EQ(outcome.status, "interrupted");
}

TEST(Batch, EmptyBatch) { EXPECT_TRUE(run_batch({}, BatchOptions{}).empty()); }

TEST(Batch, PrintLineWithoutABar) {
    testing::internal::CaptureStderr();
    std::vector<BatchJob> jobs(2, BatchJob{"j", [] { return ok("done"); }});
    BatchOptions opt;
    opt.progress = true;  // stderr is captured, not a terminal: no bar
    opt.on_done = [](std::size_t index, const BatchOutcome& outcome) {
        BatchProgress::print_line(std::to_string(index) + " " + outcome.line);
    };
    opt.jobs = 1;
    run_batch(jobs, opt);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "0 done\n1 done\n");
}

TEST(Batch, ProgressBarText) {
    EXPECT_EQ(BatchProgress::render(3, 10, 2, 65s, 80), "[=====>              ] 3/10 done, 2 running, 1:05");
    EXPECT_EQ(BatchProgress::render(0, 4, 0, 0s, 80), "[                    ] 0/4 done, 0 running, 0:00");
    EXPECT_EQ(BatchProgress::render(4, 4, 0, 3725s, 80), "[====================] 4/4 done, 0 running, 1:02:05");
    // Narrow: the counts stay, the bar goes; narrower still, the text is cut.
    EXPECT_EQ(BatchProgress::render(3, 10, 2, 65s, 40), "3/10 done, 2 running, 1:05");
    EXPECT_EQ(BatchProgress::render(3, 10, 2, 65s, 9), "3/10 done");
}

}  // namespace

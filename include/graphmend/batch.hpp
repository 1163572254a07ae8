// A batch of independent jobs for `graphmend verify FOLDER/ -j N` (docs/verify.md): at most N
// at once on std::threads, the outcomes in input order whatever order they finish in, a
// progress bar on a terminal, and an interrupt (verify::interrupt_requested, process.hpp) that
// stops jobs from starting.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace graphmend::verify {

/// What one job gave.
struct BatchOutcome {
    /// "ok", "failed", "timeout", "error" or the job's own word; run_batch itself gives
    /// "error" (the job threw) and "interrupted" (the job was never started).
    std::string status;
    std::string line;      // one line for the human report, no newline
    double wall_s = 0;     // left 0 by the job: run_batch puts the job's own wall time here
    long peak_rss_kb = 0;  // the job's to fill in (ProcessResult::peak_rss_kb); 0: unknown
    nlohmann::json data;   // anything else the caller wants back
};

struct BatchJob {
    std::string name;  // names the job in the lines run_batch writes for it ("NAME: ...")
    /// Runs the job, on one of run_batch's threads. May throw: the outcome is then status
    /// "error", line "NAME: error: WHAT".
    std::function<BatchOutcome()> run;
};

struct BatchOptions {
    unsigned jobs = 1;      // at most this many jobs at once; 0 counts as 1
    bool progress = false;  // a progress bar on stderr, when stderr is a terminal
    /// Called once per job, as it finishes (or, for a job an interrupt kept from starting,
    /// in its place), with its index in `jobs` and its outcome. Calls are serialised (one at a
    /// time, under a lock) and come from any thread. Write lines through
    /// BatchProgress::print_line so that the bar is not torn. An exception it throws is
    /// dropped (the batch goes on).
    std::function<void(std::size_t index, const BatchOutcome&)> on_done = nullptr;
};

/// Runs every job, at most opt.jobs at once (the calling thread is one of them), and returns
/// their outcomes in the order of `jobs`. A job that throws never stops the others. Once
/// interrupt_requested() is true, jobs not yet started are not run: their outcome is status
/// "interrupted", line "NAME: interrupted". Does not throw (but std::bad_alloc).
std::vector<BatchOutcome> run_batch(const std::vector<BatchJob>& jobs, const BatchOptions& opt);

/// The progress bar run_batch draws on stderr, and the way to write a line while it shows.
class BatchProgress {
public:
    /// Writes `line` and a newline to stderr, as one write: when a bar is showing, it is
    /// erased first and drawn again below the line. Thread-safe; usable with no bar showing.
    static void print_line(std::string_view line);

    /// The bar's text for `width` columns (at least the counts, cut to `width`):
    /// `[=====>      ] 3/10 done, 2 running, 1:05`.
    static std::string render(std::size_t done, std::size_t total, std::size_t running,
                              std::chrono::seconds elapsed, std::size_t width);
};

}  // namespace graphmend::verify

// A batch of independent jobs on a few threads, with a progress bar on stderr. See
// include/graphmend/batch.hpp.
#include "graphmend/batch.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <stop_token>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "graphmend/process.hpp"

namespace graphmend::verify {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kEraseLine = "\r\x1b[2K";

/// The one bar on stderr (one batch at a time shows it) and the lock every line written
/// through BatchProgress::print_line takes.
struct Bar {
    std::mutex mutex;
    bool active = false;  // a batch owns the bar
    bool shown = false;   // its text is on the terminal now
    std::size_t done = 0, total = 0, running = 0;
    Clock::time_point start;
};

Bar g_bar;

std::size_t terminal_width() {
    winsize size{};
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1) return size.ws_col - 1U;
    return 79;  // a terminal's last column wraps on some terminals: one less
}

std::string bar_text() {  // under g_bar.mutex
    const auto elapsed = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - g_bar.start);
    return std::string(BatchProgress::render(g_bar.done, g_bar.total, g_bar.running, elapsed, terminal_width()));
}

void write_stderr(const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
}

/// Redraws the bar (if this batch owns it), under its lock; `update` changes the counts first.
template <typename Update>
void redraw(bool owner, Update&& update) {
    if (!owner) return;
    const std::lock_guard lock(g_bar.mutex);
    update();
    write_stderr(std::string(kEraseLine) + bar_text());
    g_bar.shown = true;
}

/// Takes the bar for a batch of `total` jobs when one is wanted and free. Returns whether it did.
bool take_bar(const BatchOptions& opt, std::size_t total) {
    if (!opt.progress || ::isatty(STDERR_FILENO) == 0) return false;
    const std::lock_guard lock(g_bar.mutex);
    if (g_bar.active) return false;
    g_bar.active = true;
    g_bar.shown = false;
    g_bar.done = g_bar.running = 0;
    g_bar.total = total;
    g_bar.start = Clock::now();
    return true;
}

void release_bar(bool owner) {
    if (!owner) return;
    const std::lock_guard lock(g_bar.mutex);
    if (g_bar.shown) write_stderr(std::string(kEraseLine));
    g_bar.active = g_bar.shown = false;
}

BatchOutcome run_one(const BatchJob& job) {
    const auto start = Clock::now();
    BatchOutcome outcome;
    try {
        outcome = job.run();
    } catch (const std::exception& e) {
        outcome = BatchOutcome{};
        outcome.status = "error";
        outcome.line = fmt::format("{}: error: {}", job.name, e.what());
    } catch (...) {
        outcome = BatchOutcome{};
        outcome.status = "error";
        outcome.line = fmt::format("{}: error: an unknown exception", job.name);
    }
    if (outcome.wall_s == 0) outcome.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
    return outcome;
}

BatchOutcome not_started(const BatchJob& job) {
    BatchOutcome outcome;
    outcome.status = "interrupted";
    outcome.line = fmt::format("{}: interrupted", job.name);
    return outcome;
}

/// Redraws the bar every second while the batch runs, so that the elapsed time moves.
std::jthread ticker(bool owner) {
    if (!owner) return {};
    return std::jthread([](std::stop_token stop) {
        std::mutex mutex;
        std::condition_variable_any wake;
        std::unique_lock lock(mutex);
        while (!wake.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; })) {
            if (stop.stop_requested()) break;
            redraw(true, [] {});
        }
    });
}

}  // namespace

void BatchProgress::print_line(std::string_view line) {
    const std::lock_guard lock(g_bar.mutex);
    std::string text;
    if (g_bar.shown) text += kEraseLine;
    text.append(line);
    text += '\n';
    if (g_bar.active) text += bar_text();
    g_bar.shown = g_bar.active;
    write_stderr(text);
}

std::string BatchProgress::render(std::size_t done, std::size_t total, std::size_t running,
                                  std::chrono::seconds elapsed, std::size_t width) {
    constexpr std::size_t kCells = 20;
    const std::size_t filled = total == 0 ? kCells : std::min(kCells, done * kCells / total);
    std::string cells(filled, '=');
    if (filled < kCells) {
        if (filled > 0) cells.back() = '>';
        cells.append(kCells - filled, ' ');
    }
    const long long s = elapsed.count();
    const std::string clock = s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                                        : fmt::format("{}:{:02}", s / 60, s % 60);
    std::string text = fmt::format("[{}] {}/{} done, {} running, {}", cells, done, total, running, clock);
    if (text.size() > width) {
        // The counts matter more than the bar: drop the bar first, then cut.
        text = fmt::format("{}/{} done, {} running, {}", done, total, running, clock);
        if (text.size() > width) text.resize(width);
    }
    return text;
}

std::vector<BatchOutcome> run_batch(const std::vector<BatchJob>& jobs, const BatchOptions& opt) {
    const std::size_t n = jobs.size();
    std::vector<BatchOutcome> outcomes(n);
    const bool owner = take_bar(opt, n);
    std::mutex done_mutex;  // serialises on_done
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
        for (std::size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
            const bool ran = !interrupt_requested();
            if (ran) {
                redraw(owner, [] { ++g_bar.running; });
                outcomes[i] = run_one(jobs[i]);
            } else {
                outcomes[i] = not_started(jobs[i]);
            }
            const std::lock_guard lock(done_mutex);
            redraw(owner, [ran] {
                g_bar.running -= ran ? 1 : 0;
                ++g_bar.done;
            });
            if (!opt.on_done) continue;
            try {
                opt.on_done(i, outcomes[i]);
            } catch (...) {
                // on_done's own failure is not the job's: the batch goes on.
            }
        }
    };
    {
        auto tick = ticker(owner);
        const std::size_t threads = std::min<std::size_t>(std::max(opt.jobs, 1U), n);
        std::vector<std::jthread> pool;
        for (std::size_t t = 1; t < threads; ++t) {
            try {
                pool.emplace_back(worker);
            } catch (const std::system_error&) {
                break;  // no more threads to be had: the ones running share the work
            }
        }
        worker();
    }  // the workers and the ticker join here
    release_bar(owner);
    return outcomes;
}

}  // namespace graphmend::verify

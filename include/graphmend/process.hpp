// Child processes for `graphmend verify` (docs/verify.md): run one command, its stdin, stdout
// and stderr from or to files (or stdout into a string), with a time limit, and learn how it
// ended, how long it took and its peak memory. POSIX only (posix_spawnp, wait4).
//
// Each child is the leader of a process group of its own, so a time limit or an interrupt
// reaches what it started too (a shell's background jobs, DataLoader workers). Because of that
// group, the terminal's Ctrl-C does not reach the children: graphmend's SIGINT handler
// (install_interrupt_handler) sets a flag, every run_process that is waiting sees it within a
// few milliseconds, ends its group and returns with ProcessResult::interrupted set.
//
// run_process may be called from several threads at once: each call waits only on its own
// child (wait4 on its pid, polled; no SIGCHLD handler), and every descriptor it opens is
// close-on-exec, so no child inherits another's pipe. It reads the parent's environment
// (environ) as it starts a child: no thread may setenv or unsetenv meanwhile.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace graphmend::verify {

struct ProcessSpec {
    /// The command: argv[0] is looked up on PATH (the parent's PATH; posix_spawnp) unless it
    /// holds a '/'; a relative one is then taken from `cwd` when that is set.
    std::vector<std::string> argv;
    std::string cwd;                             // empty: the parent's
    std::map<std::string, std::string> env_set;  // added to the parent's environment, or overriding it
    std::vector<std::string> env_unset;          // names taken out of it (env_set wins over these)
    std::string stdin_path;                      // empty: /dev/null
    std::string stdout_path, stderr_path;        // empty: the parent's; else a file, created or truncated
    bool stdout_to_pipe = false;                 // stdout into ProcessResult::out (stdout_path is then unused)
    /// 0: none. At the limit, SIGTERM to the child's process group, and SIGKILL to the group
    /// `kill_after_s` later if the child has not exited by then.
    double timeout_s = 0;
    double kill_after_s = 5;
    /// Once the child has exited, SIGKILL what is left of its process group (background
    /// processes it started and left running), so that nothing outlives the run.
    bool kill_leftovers = true;
};

struct ProcessResult {
    /// False when the child could not be started: `error` says why, e.g. "python: not found",
    /// "cannot open stdout file out/x.txt: No such file or directory", "cwd /x: not a folder".
    bool started = false;
    std::string error;
    int exit_code = -1;      // the child's exit status; -1 when a signal ended it
    int signal = 0;          // the signal that ended it, else 0
    bool timed_out = false;  // ProcessSpec::timeout_s was reached and the group was signalled
    bool interrupted = false;  // interrupt_requested() was seen while it ran and the group was signalled
    double wall_s = 0;       // from the spawn to the child's exit
    long peak_rss_kb = 0;    // the child's peak resident set (wait4's ru_maxrss), in KiB
    std::string out;         // its stdout, when ProcessSpec::stdout_to_pipe
};

/// Runs the command and waits for it to end (or to be ended: time limit, interrupt). Never
/// throws for a command that fails; a result with started == false says why it did not start,
/// and an interrupt requested before the call returns at once with interrupted == true and
/// nothing started. May throw std::bad_alloc.
ProcessResult run_process(const ProcessSpec& spec);

/// Installs graphmend's handler for SIGINT and SIGTERM: the first one sets the interrupt flag
/// (run_process and verify::run_batch wind down); a second one sends SIGKILL to every child's
/// process group (terminate_all_children) and then ends graphmend by the signal's default
/// action. Safe to call more than once.
void install_interrupt_handler();

/// The interrupt flag: set by the handler, or by request_interrupt(); cleared by
/// reset_interrupt() (for tests and for a caller that goes on after an interrupt).
/// All three are async-signal-safe.
[[nodiscard]] bool interrupt_requested() noexcept;
void request_interrupt() noexcept;
void reset_interrupt() noexcept;

/// Sends `sig` to the process group of every child a run_process is running now (a
/// registry of live groups, lock-free). Async-signal-safe: a signal handler or an atexit
/// path may call it. A run_process whose group this kills returns as usual, with the signal.
void terminate_all_children(int sig = 9 /* SIGKILL */) noexcept;

}  // namespace graphmend::verify

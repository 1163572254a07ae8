// Child processes: posix_spawnp into a process group of its own, a wait that polls its own
// pid, the interrupt flag and the registry of live groups. See include/graphmend/process.hpp.
#include "graphmend/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>
#include <system_error>

#include <fmt/format.h>

extern char** environ;  // NOLINT: POSIX declares it nowhere in a header

namespace graphmend::verify {

namespace {

using Clock = std::chrono::steady_clock;

// --- the interrupt flag and the registry of live process groups (async-signal-safe) --------

std::atomic<bool> g_interrupt{false};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<pid_t>::is_always_lock_free);

constexpr std::size_t kSlots = 1024;  // more children at once than this go unregistered (still waited on)
std::array<std::atomic<pid_t>, kSlots> g_groups{};

/// A slot of the registry holding `pgid`, or kSlots when all are taken.
std::size_t register_group(pid_t pgid) noexcept {
    for (std::size_t i = 0; i < kSlots; ++i) {
        pid_t expected = 0;
        if (g_groups[i].compare_exchange_strong(expected, pgid)) return i;
    }
    return kSlots;
}

void unregister_group(std::size_t slot) noexcept {
    if (slot < kSlots) g_groups[slot].store(0);
}

void on_signal(int sig) {
    if (!g_interrupt.exchange(true)) return;  // the first: run_process and run_batch wind down
    // The second: nothing waits any longer.
    const int saved = errno;
    terminate_all_children(SIGKILL);
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    errno = saved;
}

// --- spawning --------------------------------------------------------------------------------

std::string describe(int err) { return std::generic_category().message(err); }

/// Closes the descriptors it holds when it goes out of scope.
struct Fds {
    int in = -1, out = -1, err = -1, pipe_r = -1, pipe_w = -1;
    Fds() = default;
    Fds(const Fds&) = delete;
    Fds& operator=(const Fds&) = delete;
    ~Fds() {
        for (const int fd : {in, out, err, pipe_r, pipe_w}) {
            if (fd >= 0) ::close(fd);
        }
    }
};

int open_cloexec(const std::string& path, int flags) {
    int fd = -1;
    do {
        fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
    } while (fd < 0 && errno == EINTR);
    return fd;
}

/// Opens what the child's stdin, stdout and stderr become. Returns the error, or "".
std::string open_stdio(const ProcessSpec& spec, Fds& fds) {
    const std::string in = spec.stdin_path.empty() ? "/dev/null" : spec.stdin_path;
    if ((fds.in = open_cloexec(in, O_RDONLY)) < 0) return fmt::format("cannot open stdin file {}: {}", in, describe(errno));
    constexpr int kWrite = O_WRONLY | O_CREAT | O_TRUNC;
    if (spec.stdout_to_pipe) {
        int ends[2];
        if (::pipe2(ends, O_CLOEXEC) != 0) return fmt::format("cannot make a pipe: {}", describe(errno));
        fds.pipe_r = ends[0];
        fds.pipe_w = ends[1];
        ::fcntl(fds.pipe_r, F_SETFL, ::fcntl(fds.pipe_r, F_GETFL) | O_NONBLOCK);
    } else if (!spec.stdout_path.empty() && (fds.out = open_cloexec(spec.stdout_path, kWrite)) < 0) {
        return fmt::format("cannot open stdout file {}: {}", spec.stdout_path, describe(errno));
    }
    if (!spec.stderr_path.empty() && (fds.err = open_cloexec(spec.stderr_path, kWrite)) < 0) {
        return fmt::format("cannot open stderr file {}: {}", spec.stderr_path, describe(errno));
    }
    return "";
}

/// The parent's environment with spec.env_unset taken out and spec.env_set put in.
std::vector<std::string> child_environment(const ProcessSpec& spec) {
    std::set<std::string> drop(spec.env_unset.begin(), spec.env_unset.end());
    for (const auto& [name, value] : spec.env_set) drop.insert(name);
    std::vector<std::string> env;
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        const std::string_view text(*entry);
        const auto eq = text.find('=');
        if (!drop.contains(std::string(text.substr(0, eq)))) env.emplace_back(text);
    }
    for (const auto& [name, value] : spec.env_set) env.push_back(name + "=" + value);
    return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

/// posix_spawnp with the descriptors, folder and signal state of a child. Returns 0 or the error.
int spawn(const ProcessSpec& spec, const Fds& fds, std::vector<std::string> env, pid_t& pid) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    if (const int err = ::posix_spawn_file_actions_init(&actions); err != 0) return err;
    if (const int err = ::posix_spawnattr_init(&attr); err != 0) {
        ::posix_spawn_file_actions_destroy(&actions);
        return err;
    }
    int err = ::posix_spawn_file_actions_adddup2(&actions, fds.in, 0);
    const int out = fds.pipe_w >= 0 ? fds.pipe_w : fds.out;
    if (err == 0 && out >= 0) err = ::posix_spawn_file_actions_adddup2(&actions, out, 1);
    if (err == 0 && fds.err >= 0) err = ::posix_spawn_file_actions_adddup2(&actions, fds.err, 2);
    if (err == 0 && !spec.cwd.empty()) err = ::posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());
    // Its own process group; default actions for the signals a parent may ignore or handle; no
    // signal blocked.
    sigset_t defaults, mask;
    sigemptyset(&defaults);
    for (const int sig : {SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGPIPE, SIGXFSZ}) sigaddset(&defaults, sig);
    sigemptyset(&mask);
    if (err == 0) err = ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    if (err == 0) err = ::posix_spawnattr_setpgroup(&attr, 0);
    if (err == 0) err = ::posix_spawnattr_setsigdefault(&attr, &defaults);
    if (err == 0) err = ::posix_spawnattr_setsigmask(&attr, &mask);
    if (err == 0) {
        std::vector<std::string> args = spec.argv;
        err = ::posix_spawnp(&pid, args[0].c_str(), &actions, &attr, c_strings(args).data(), c_strings(env).data());
    }
    ::posix_spawnattr_destroy(&attr);
    ::posix_spawn_file_actions_destroy(&actions);
    return err;
}

// --- waiting ---------------------------------------------------------------------------------

/// Whether the child has exited, leaving it unreaped: its pid, and so its group's id, stay
/// taken until wait4, so signalling the group can never reach an unrelated process.
bool exited(pid_t pid) {
    siginfo_t info{};
    while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
        if (errno != EINTR) return true;  // ECHILD: someone else reaped it (not ours to do)
    }
    return info.si_pid != 0;
}

/// Reads what the pipe holds now into `out`. Returns false at its end (every writer gone).
bool drain(int fd, std::string& out) {
    char buffer[65536];
    while (true) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n > 0) {
            out.append(buffer, static_cast<std::size_t>(n));
        } else if (n == 0) {
            return false;
        } else {
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        }
    }
}

/// Waits up to `ms` for output on `fd` (or just sleeps when fd < 0), reading what comes.
/// Returns whether something was read. Sets fd to -1 at the pipe's end.
bool wait_a_little(int& fd, std::string& out, int ms) {
    if (fd < 0) {
        ::poll(nullptr, 0, ms);
        return false;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return false;
    const auto before = out.size();
    if (!drain(fd, out)) {
        ::close(fd);
        fd = -1;
    }
    return out.size() != before;
}

std::chrono::duration<double> seconds(double s) { return std::chrono::duration<double>(s); }

/// Waits for the child to exit, reading its stdout pipe meanwhile, and signals its group at
/// the time limit or an interrupt. Leaves the child unreaped.
void wait_for_exit(pid_t pid, const ProcessSpec& spec, int& pipe_r, ProcessResult& result, Clock::time_point start) {
    std::optional<Clock::time_point> term_sent;
    bool kill_sent = false;
    int sleep_ms = 1;
    while (!exited(pid)) {
        const auto now = Clock::now();
        if (!term_sent) {
            result.interrupted = interrupt_requested();
            result.timed_out = !result.interrupted && spec.timeout_s > 0 && now - start >= seconds(spec.timeout_s);
            if (result.interrupted || result.timed_out) {
                ::kill(-pid, SIGTERM);
                term_sent = now;
            }
        } else if (!kill_sent && now - *term_sent >= seconds(spec.kill_after_s)) {
            ::kill(-pid, SIGKILL);
            kill_sent = true;
        }
        if (wait_a_little(pipe_r, result.out, sleep_ms)) {
            sleep_ms = 1;
        } else {
            sleep_ms = std::min(sleep_ms * 2, 20);
        }
    }
}

}  // namespace

bool interrupt_requested() noexcept { return g_interrupt.load(); }
void request_interrupt() noexcept { g_interrupt.store(true); }
void reset_interrupt() noexcept { g_interrupt.store(false); }

void terminate_all_children(int sig) noexcept {
    for (auto& slot : g_groups) {
        const pid_t pgid = slot.load();
        if (pgid > 0) ::kill(-pgid, sig);
    }
}

void install_interrupt_handler() {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
}

ProcessResult run_process(const ProcessSpec& spec) {
    ProcessResult result;
    if (spec.argv.empty() || spec.argv[0].empty()) {
        result.error = "no command to run";
        return result;
    }
    if (interrupt_requested()) {
        result.interrupted = true;
        result.error = "interrupted";
        return result;
    }
    if (!spec.cwd.empty()) {
        struct stat st {};
        if (::stat(spec.cwd.c_str(), &st) != 0) {
            result.error = fmt::format("cwd {}: {}", spec.cwd, describe(errno));
            return result;
        }
        if (!S_ISDIR(st.st_mode)) {
            result.error = fmt::format("cwd {}: not a folder", spec.cwd);
            return result;
        }
    }
    Fds fds;
    if (result.error = open_stdio(spec, fds); !result.error.empty()) return result;
    const auto start = Clock::now();
    pid_t pid = -1;
    if (const int err = spawn(spec, fds, child_environment(spec), pid); err != 0) {
        result.error = err == ENOENT ? fmt::format("{}: not found", spec.argv[0])
                                     : fmt::format("{}: {}", spec.argv[0], describe(err));
        return result;
    }
    result.started = true;
    const std::size_t slot = register_group(pid);
    ::close(fds.pipe_w);  // the child's copy is the only writer left
    fds.pipe_w = -1;

    wait_for_exit(pid, spec, fds.pipe_r, result, start);
    result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
    // The leader has exited but is not reaped: its group id is still ours to signal.
    if (spec.kill_leftovers) ::kill(-pid, SIGKILL);
    if (fds.pipe_r >= 0) drain(fds.pipe_r, result.out);
    unregister_group(slot);

    int status = 0;
    rusage usage{};
    pid_t reaped = -1;
    while ((reaped = ::wait4(pid, &status, 0, &usage)) < 0 && errno == EINTR) {
    }
    if (reaped != pid) {  // ECHILD: something else in graphmend reaped it (waitpid(-1, ...))
        result.error = fmt::format("{}: its exit status was lost: {}", spec.argv[0], describe(errno));
        return result;
    }
    result.peak_rss_kb = usage.ru_maxrss;
    if (WIFEXITED(status)) {
        result.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        result.signal = WTERMSIG(status);
    }
    return result;
}

}  // namespace graphmend::verify

// Files: reading, collecting *.py, atomic writes. See include/graphmend/output.hpp.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <set>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "graphmend/config.hpp"
#include "graphmend/output.hpp"

namespace graphmend::output {

namespace fs = std::filesystem;

namespace {

// The temporaries being written, so that SIGINT or SIGTERM removes them before the process
// ends (an interrupt during the write phase left `.NAME.py.graphmend-XXXXXX` behind). The
// handler reads the table with atomic loads and calls only unlink, signal and raise, which
// are async-signal-safe. A table that is full leaves the extra temporaries untracked: the
// next run removes them (remove_stale_temporaries).
constexpr std::size_t kTrackedTemporaries = 1024;
std::array<std::atomic<char*>, kTrackedTemporaries> live_temporaries{};

extern "C" void remove_temporaries_and_reraise(int sig) {
    for (auto& slot : live_temporaries) {
        if (char* path = slot.load()) ::unlink(path);
    }
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

// Installs the handler for SIGINT and SIGTERM once, where the signal still has its default
// action (a signal the caller ignores, as under nohup, stays ignored).
void install_interrupt_cleanup() {
    static std::once_flag once;
    std::call_once(once, [] {
        for (int sig : {SIGINT, SIGTERM}) {
            struct sigaction old {};
            if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
            struct sigaction act {};
            act.sa_handler = remove_temporaries_and_reraise;
            sigemptyset(&act.sa_mask);
            ::sigaction(sig, &act, nullptr);
        }
    });
}

void track(const std::string& tmp) {
    install_interrupt_cleanup();
    char* copy = ::strdup(tmp.c_str());
    for (auto& slot : live_temporaries) {
        char* empty = nullptr;
        if (slot.compare_exchange_strong(empty, copy)) return;
    }
    std::free(copy);
}

// Called once the temporary is renamed, removed, or kept on purpose.
void untrack(const std::string& tmp) {
    for (auto& slot : live_temporaries) {
        char* path = slot.load();
        if (path != nullptr && tmp == path && slot.compare_exchange_strong(path, nullptr)) {
            std::free(path);
            return;
        }
    }
}

// Removes the temporaries that an earlier run left in `dir` (killed by SIGKILL, or a power
// cut): `.NAME.graphmend-XXXXXX`, regular files last written over a minute ago, so a
// concurrent run's temporary, which lives for milliseconds, is never touched. Once per folder
// and process: a folder of many files written is listed once, not once per file.
void remove_stale_temporaries(const fs::path& dir) {
    static std::mutex mutex;
    static std::set<std::string> cleaned;
    {
        const std::lock_guard<std::mutex> lock(mutex);
        if (!cleaned.insert(dir.string()).second) return;
    }
    constexpr std::string_view kMark = ".graphmend-";
    std::error_code ec;
    const auto now = fs::file_time_type::clock::now();
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        const auto mark = name.rfind(kMark);
        if (!name.starts_with('.') || mark == std::string::npos || mark + kMark.size() + 6 != name.size()) continue;
        std::error_code e2;
        if (!it->is_regular_file(e2) || e2) continue;
        const auto written = it->last_write_time(e2);
        if (!e2 && now - written > std::chrono::minutes(1)) fs::remove(it->path(), e2);
    }
}

// Writes `text` to a new temporary file next to `path` (same folder, so rename is atomic),
// with the mode and, where the process may, the owner of `like` (when it exists). Returns the
// temporary's path; throws with the temporary removed.
std::string write_temporary(const std::string& path, const std::string& text, const struct stat* like) {
    const fs::path target(path);
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    remove_stale_temporaries(dir);
    std::string tmpl = (dir / fmt::format(".{}.graphmend-XXXXXX", target.filename().string())).string();
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot create a temporary file: {}", path, std::strerror(errno)));
    track(tmpl);
    auto fail = [&](const char* what) {
        const std::string msg = fmt::format("{}: {}: {}", path, what, std::strerror(errno));
        ::close(fd);
        ::unlink(tmpl.c_str());
        untrack(tmpl);
        throw std::runtime_error(msg);
    };
    std::size_t written = 0;
    while (written < text.size()) {
        const auto n = ::write(fd, text.data() + written, text.size() - written);
        if (n < 0) fail("cannot write");
        written += static_cast<std::size_t>(n);
    }
    if (::fchmod(fd, like != nullptr ? like->st_mode & 07777 : 0644) != 0) fail("cannot set permissions");
    // Keep the owner when root rewrites another user's file; an unprivileged process keeps
    // its own (EPERM is not an error: the file was its own, or it could not have been replaced).
    if (like != nullptr && (like->st_uid != ::geteuid() || like->st_gid != ::getegid()) &&
        ::fchown(fd, like->st_uid, like->st_gid) != 0 && errno != EPERM) {
        fail("cannot keep the owner");
    }
    if (::fsync(fd) != 0) fail("cannot flush");
    if (::close(fd) != 0) {
        ::unlink(tmpl.c_str());
        untrack(tmpl);
        throw std::runtime_error(fmt::format("{}: cannot close: {}", path, std::strerror(errno)));
    }
    return tmpl;
}

// Rewrites a hard-linked file in place, so every name keeps the new text: the new text is
// first written to a temporary (kept if the in-place write fails, and named in the error).
void write_in_place(const std::string& path, const std::string& text, const struct stat& st) {
    const std::string tmp = write_temporary(path, text, &st);
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
    bool ok = fd >= 0;
    std::size_t written = 0;
    while (ok && written < text.size()) {
        const auto n = ::write(fd, text.data() + written, text.size() - written);
        ok = n >= 0;
        if (ok) written += static_cast<std::size_t>(n);
    }
    ok = ok && ::fsync(fd) == 0;
    if (fd >= 0) ok = ::close(fd) == 0 && ok;
    if (!ok) {
        untrack(tmp);  // kept: the error names it
        throw std::runtime_error(fmt::format("{}: cannot rewrite in place: {}; the new text is in {}", path,
                                             std::strerror(errno), tmp));
    }
    ::unlink(tmp.c_str());
    untrack(tmp);
}

}  // namespace

void write_if_unchanged(const std::string& path, const std::string& text, const analysis::DiskText& read,
                        LinkPolicy links) {
    std::string now;
    try {
        now = syntax::read_file(path);
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(fmt::format("{}; not written", e.what()));
    }
    const analysis::DiskText was = analysis::DiskText::of(now);
    if (!was.same_bytes(read)) {
        throw std::runtime_error(fmt::format("{}: changed on disk since graphmend read it; not written", path));
    }
    write_atomically(path, text, links);
}

std::string link_refusal(const std::string& path, LinkPolicy links) {
    struct stat lst {};
    if (::lstat(path.c_str(), &lst) != 0) return {};
    std::error_code ec;
    if (S_ISLNK(lst.st_mode)) {
        const fs::path resolved = fs::canonical(path, ec);
        if (links == LinkPolicy::WriteThrough && !ec) return {};
        return fmt::format("{}: is a symbolic link{}{}; not rewritten, the link is left as it is (pass "
                           "--write-through-links to rewrite the file it points to, or write a copy with -o)",
                           path, ec ? "" : " to ", ec ? "" : resolved.string());
    }
    if (S_ISREG(lst.st_mode) && lst.st_nlink > 1 && links != LinkPolicy::WriteThrough) {
        return fmt::format("{}: has {} hard links; not rewritten, since replacing it would split them (pass "
                           "--write-through-links to rewrite it in place for every name, or write a copy with -o)",
                           path, lst.st_nlink);
    }
    return {};
}

void write_atomically(const std::string& path, const std::string& text, LinkPolicy links) {
    if (std::string why = link_refusal(path, links); !why.empty()) throw std::runtime_error(why);
    std::error_code ec;
    const std::string target = fs::is_symlink(path, ec) ? fs::canonical(path, ec).string() : path;
    struct stat st {};
    const bool target_exists = ::stat(target.c_str(), &st) == 0;
    if (target_exists && !S_ISREG(st.st_mode)) {
        throw std::runtime_error(fmt::format("{}: not a regular file; not written", path));
    }
    if (target_exists && st.st_nlink > 1) {
        write_in_place(target, text, st);
        return;
    }
    const std::string tmp = write_temporary(target, text, target_exists ? &st : nullptr);
    if (::rename(tmp.c_str(), target.c_str()) != 0) {
        const std::string msg = fmt::format("{}: cannot replace: {}", path, std::strerror(errno));
        ::unlink(tmp.c_str());
        untrack(tmp);
        throw std::runtime_error(msg);
    }
    untrack(tmp);
}

std::vector<std::string> collect_python_files(const std::vector<std::string>& paths) {
    config::Overrides isolated;
    isolated.isolated = true;
    config::Resolver defaults(std::move(isolated));
    config::Discovered found = config::discover(paths, defaults);
    if (!found.errors.empty()) throw std::runtime_error(found.errors.front());
    return std::move(found.files);
}

}  // namespace graphmend::output

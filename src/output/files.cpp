// Files: reading, collecting *.py, atomic writes. See include/graphmend/output.hpp.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "graphmend/output.hpp"

namespace graphmend::output {

namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    // generic_category().message is strerror's text, but thread-safe (files are read in parallel).
    if (!in) throw std::runtime_error(fmt::format("{}: cannot read: {}", path, std::generic_category().message(errno)));
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_atomically(const std::string& path, const std::string& text) {
    const fs::path target(path);
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::string tmpl = (dir / fmt::format(".{}.graphmend-XXXXXX", target.filename().string())).string();
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot create a temporary file: {}", path, std::strerror(errno)));
    auto fail = [&](const char* what) {
        const std::string msg = fmt::format("{}: {}: {}", path, what, std::strerror(errno));
        ::close(fd);
        ::unlink(tmpl.c_str());
        throw std::runtime_error(msg);
    };
    std::size_t written = 0;
    while (written < text.size()) {
        const auto n = ::write(fd, text.data() + written, text.size() - written);
        if (n < 0) fail("cannot write");
        written += static_cast<std::size_t>(n);
    }
    struct stat st {};
    mode_t mode = 0644;
    if (::stat(path.c_str(), &st) == 0) mode = st.st_mode & 07777;
    if (::fchmod(fd, mode) != 0) fail("cannot set permissions");
    if (::fsync(fd) != 0) fail("cannot flush");
    if (::close(fd) != 0) {
        ::unlink(tmpl.c_str());
        throw std::runtime_error(fmt::format("{}: cannot close: {}", path, std::strerror(errno)));
    }
    if (::rename(tmpl.c_str(), path.c_str()) != 0) {
        const std::string msg = fmt::format("{}: cannot replace: {}", path, std::strerror(errno));
        ::unlink(tmpl.c_str());
        throw std::runtime_error(msg);
    }
}

std::vector<std::string> collect_python_files(const std::vector<std::string>& paths) {
    std::vector<std::string> out;
    for (const auto& p : paths) {
        std::error_code ec;
        const auto status = fs::status(p, ec);
        if (ec || !fs::exists(status)) throw std::runtime_error(fmt::format("{}: no such file or folder", p));
        if (!fs::is_directory(status)) {
            out.push_back(p);
            continue;
        }
        std::vector<std::string> found;
        for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
             it != fs::recursive_directory_iterator(); it.increment(ec)) {
            if (ec) break;
            const auto name = it->path().filename().string();
            if (it->is_directory() && (name.starts_with(".") || name == "__pycache__")) {
                it.disable_recursion_pending();
                continue;
            }
            if (name == "_graphmend_runtime.py") continue;  // graphmend's runtime module, never an input
            if (it->is_regular_file() && !it->is_symlink() && it->path().extension() == ".py") {
                found.push_back(it->path().string());
            }
        }
        std::sort(found.begin(), found.end());
        out.insert(out.end(), found.begin(), found.end());
    }
    return out;
}

}  // namespace graphmend::output

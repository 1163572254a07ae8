// Finding the Python files of the paths given: see config.hpp (discover).
#include <fmt/format.h>

#include <algorithm>
#include <system_error>
#include <utility>

#include "gitignore.hpp"
#include "graphmend/config.hpp"

namespace graphmend::config {

namespace {

// Why a path that is not a folder is not read: only regular files are.
std::string not_regular(const fs::file_status& status) {
    const char* kind = "not a regular file";
    switch (status.type()) {
        case fs::file_type::fifo: kind = "a FIFO (named pipe), not a regular file"; break;
        case fs::file_type::socket: kind = "a socket, not a regular file"; break;
        case fs::file_type::block:
        case fs::file_type::character: kind = "a device, not a regular file"; break;
        default: break;
    }
    return fmt::format("{}; skipped", kind);
}

class Walk {
public:
    Walk(Resolver& resolver, Discovered& out) : resolver_(resolver), out_(out) {}

    // Walks the folder `path` given on the command line; returns its Python files, sorted.
    std::vector<std::string> root(const std::string& path) {
        const fs::path abs = fs::absolute(fs::path(path)).lexically_normal();
        GitPlace place = git_.find(abs);
        // A folder given is never excluded, nor is what lies in it for being inside it: git's
        // rules for the folder itself (a gitignored build/ given by name) are not applied.
        if (place.repo != nullptr && !place.relative.empty() &&
            git_.ignored(place, place.relative.substr(0, place.relative.size() - 1))) {
            place = {};
        }
        std::error_code ec;
        ancestors_.push_back(fs::canonical(abs, ec));
        folder(fs::path(path), abs, place);
        ancestors_.clear();
        std::sort(found_.begin(), found_.end());
        return std::exchange(found_, {});
    }

private:
    void warn(const fs::path& path, std::string_view what) {
        out_.warnings.push_back(fmt::format("{}: {}", path.string(), what));
    }

    // The sorted entry names of a folder; warns when it cannot be read.
    std::vector<std::string> entries(const fs::path& path) {
        std::vector<std::string> names;
        std::error_code ec;
        fs::directory_iterator it(path, ec);
        for (; !ec && it != fs::directory_iterator(); it.increment(ec)) names.push_back(it->path().filename().string());
        if (ec) warn(path, fmt::format("cannot read folder: {}; skipped", ec.message()));
        std::sort(names.begin(), names.end());
        return names;
    }

    void folder(const fs::path& path, const fs::path& abs, const GitPlace& place) {
        const Settings& settings = resolver_.for_folder(abs);
        for (const std::string& name : entries(path)) {
            const fs::path entry = path / name;
            const fs::path entry_abs = abs / name;
            std::error_code ec;
            const fs::file_status st = fs::status(entry, ec);  // follows symbolic links
            const bool python = name.ends_with(".py");
            if (ec || !fs::exists(st)) {
                if (fs::is_symlink(fs::symlink_status(entry, ec))) {
                    if (python) warn(entry, "broken symbolic link; skipped");
                } else if (python) {
                    warn(entry, fmt::format("cannot read: {}; skipped", ec.message()));
                }
                continue;
            }
            const bool is_dir = fs::is_directory(st);
            if (!is_dir && python && !fs::is_regular_file(st)) warn(entry, not_regular(st));
            if (!is_dir && !(python && fs::is_regular_file(st))) continue;
            if (!is_dir && name == "_graphmend_runtime.py") continue;  // graphmend's runtime module, never an input
            if (settings.excluded(entry_abs)) continue;
            if (settings.respect_gitignore && git_.ignored(place, name)) continue;
            if (!is_dir) {
                found_.push_back(entry.string());
                continue;
            }
            const fs::path real = fs::canonical(entry, ec);
            if (ec) {
                warn(entry, fmt::format("cannot read folder: {}; skipped", ec.message()));
                continue;
            }
            if (std::find(ancestors_.begin(), ancestors_.end(), real) != ancestors_.end()) {
                warn(entry, fmt::format("symbolic link loop (to {}); skipped", real.string()));
                continue;
            }
            ancestors_.push_back(real);
            folder(entry, entry_abs, git_.child(place, name, entry));
            ancestors_.pop_back();
        }
    }

    Resolver& resolver_;
    Discovered& out_;
    GitRepos git_;
    std::vector<fs::path> ancestors_;  // real paths of the folders being walked
    std::vector<std::string> found_;
};

}  // namespace

Discovered discover(const std::vector<std::string>& paths, Resolver& resolver) {
    Discovered out;
    Walk walk(resolver, out);
    for (const auto& p : paths) {
        std::error_code ec;
        const auto status = fs::status(p, ec);
        if (ec || !fs::exists(status)) {
            out.errors.push_back(fmt::format("{}: no such file or folder", p));
            continue;
        }
        if (!fs::is_directory(status)) {
            if (!fs::is_regular_file(status)) {
                // Reading a FIFO blocks until a writer comes, a device may never end: only
                // regular files are read.
                out.warnings.push_back(fmt::format("{}: {}", p, not_regular(status)));
                continue;
            }
            out.files.push_back(p);  // a file given is taken whatever its name
            out.named.push_back(true);
            continue;
        }
        auto found = walk.root(p);
        if (found.empty()) out.warnings.push_back(fmt::format("{}: no Python files found", p));
        out.files.insert(out.files.end(), found.begin(), found.end());
        out.named.resize(out.files.size(), false);
    }
    return out;
}

}  // namespace graphmend::config

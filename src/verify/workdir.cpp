// verify's work folder, the fixed copy of PATH and the Python it writes out: see internal.hpp.
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "graphmend/verify_python.hpp"
#include "internal.hpp"

namespace graphmend::verify {

WorkDir::WorkDir(const std::string& keep) {
    if (!keep.empty()) {
        root_ = fs::absolute(keep);
        keep_ = true;
        fs::create_directories(root_);
        return;
    }
    const fs::path base = fs::temp_directory_path();
    std::string pattern = (base / "graphmend-verify-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw std::runtime_error(fmt::format("cannot make a work folder in {}", base.string()));
    }
    root_ = pattern;
}

WorkDir::~WorkDir() {
    if (keep_ || root_.empty()) return;
    std::error_code ec;
    fs::remove_all(root_, ec);
}

std::string python_of(const Options& opt) {
    if (!opt.python.empty()) return opt.python;
    if (const char* venv = std::getenv("VIRTUAL_ENV"); venv != nullptr && *venv != '\0') {
        const fs::path p = fs::path(venv) / "bin" / "python";
        std::error_code ec;
        if (fs::exists(p, ec)) return p.string();
    }
    return "python3";
}

void write_python_files(const fs::path& dir) {
    fs::create_directories(dir);
    for (const auto& file : python::kFiles) {
        std::ofstream out(dir / std::string(file.name), std::ios::binary);
        out << file.text;
        if (!out) throw std::runtime_error(fmt::format("cannot write {}", (dir / std::string(file.name)).string()));
    }
}

namespace {

// Folders a copy of a project leaves out: hidden ones (.git, .venv), byte-code caches, virtual
// environments (a pyvenv.cfg), graphmend's own work folders.
bool skipped_folder(const fs::path& dir) {
    const std::string name = dir.filename().string();
    if (name.starts_with('.') || name == "__pycache__" || name == "node_modules") return true;
    std::error_code ec;
    return fs::exists(dir / "pyvenv.cfg", ec);
}

void copy_into(const fs::path& from, const fs::path& to) {
    fs::create_directories(to.parent_path());
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

void link_file(const fs::path& from, const fs::path& to) {
    fs::create_directories(to.parent_path());
    std::error_code ec;
    fs::create_symlink(from, to, ec);
}

}  // namespace

std::vector<std::string> make_mirror(const Target& target, const fs::path& mirror) {
    fs::create_directories(mirror);
    std::vector<std::string> copied;
    if (fs::is_regular_file(target.path)) {
        const fs::path rel = target.path.filename();
        copy_into(target.path, mirror / rel);
        copied.push_back(rel.string());
        return copied;
    }
    std::error_code ec;
    fs::recursive_directory_iterator it(target.root, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const fs::directory_entry& entry = *it;
        if (entry.is_directory(ec)) {
            if (skipped_folder(entry.path())) it.disable_recursion_pending();
            continue;
        }
        if (!entry.is_regular_file(ec)) continue;
        const fs::path rel = fs::relative(entry.path(), target.root, ec);
        if (ec || rel.empty()) continue;
        if (entry.path().extension() == ".py") {
            copy_into(entry.path(), mirror / rel);
            copied.push_back(rel.string());
        } else {
            link_file(entry.path(), mirror / rel);
        }
    }
    std::sort(copied.begin(), copied.end());
    return copied;
}

bool is_checkout(const fs::path& p) {
    std::error_code ec;
    return fs::is_directory(p, ec) && fs::is_regular_file(p / "config.json", ec);
}

std::vector<fs::path> find_checkouts(const fs::path& p) {
    std::vector<fs::path> out;
    std::error_code ec;
    fs::recursive_directory_iterator it(p, fs::directory_options::follow_directory_symlink |
                                               fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_directory(ec)) continue;
        if (skipped_folder(it->path()) || it.depth() > 4) {
            it.disable_recursion_pending();
            continue;
        }
        if (is_checkout(it->path())) {
            out.push_back(it->path());
            it.disable_recursion_pending();
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace graphmend::verify

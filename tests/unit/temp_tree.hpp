// Temporary folders for tests: TempTree (removed at the end), and named folders that a test
// reuses by name (named_temp_folder).
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

struct TempTree {
    std::filesystem::path root;

    TempTree() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "graphmend-test-XXXXXX").string();
        root = std::filesystem::canonical(::mkdtemp(tmpl.data()));
    }
    ~TempTree() {
        std::error_code ec;
        std::filesystem::remove_all(root, ec);
    }
    TempTree(const TempTree&) = delete;
    TempTree& operator=(const TempTree&) = delete;

    void write(const std::string& relative, const std::string& text) const {
        const auto path = root / relative;
        std::filesystem::create_directories(path.parent_path());
        std::ofstream(path, std::ios::binary) << text;
    }
    void mkdir(const std::string& relative) const { std::filesystem::create_directories(root / relative); }
    void symlink(const std::string& target, const std::string& relative) const {
        std::filesystem::create_directories((root / relative).parent_path());
        std::filesystem::create_symlink(target, root / relative);
    }
    /// An empty git repository at `relative` (what `git init` leaves, as far as libgit2 needs).
    void git_init(const std::string& relative = ".") const {
        const auto git = root / relative / ".git";
        std::filesystem::create_directories(git / "objects");
        std::filesystem::create_directories(git / "refs" / "heads");
        std::filesystem::create_directories(git / "info");
        std::ofstream(git / "HEAD") << "ref: refs/heads/main\n";
        std::ofstream(git / "config") << "[core]\n\trepositoryformatversion = 0\n\tbare = false\n";
    }
};

/// A fresh empty folder <tmp>/graphmend-SUITE-<pid>/NAME (emptied when it exists): a test that
/// names its folder can fix the same path twice.
inline std::filesystem::path named_temp_folder(const std::string& suite, const std::string& name) {
    // The per-process folders are removed when the test program ends.
    struct Made {
        std::set<std::filesystem::path> folders;
        ~Made() {
            std::error_code ec;
            for (const auto& f : folders) std::filesystem::remove_all(f, ec);
        }
    };
    static Made made;
    const auto base = std::filesystem::temp_directory_path() / ("graphmend-" + suite + "-" + std::to_string(::getpid()));
    made.folders.insert(base);
    const auto dir = base / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

/// Writes `text` to `path`, creating its folders.
inline void write_file(const std::filesystem::path& path, const std::string& text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
}

// What git ignores, read with libgit2: .gitignore files, .git/info/exclude and the global
// excludes file (core.excludesFile), as `git status` reads them.
#pragma once

#include <filesystem>
#include <map>
#include <string>

struct git_repository;

namespace graphmend::config {

/// A folder's place in a git work tree.
struct GitPlace {
    git_repository* repo = nullptr;  // null: outside any work tree
    std::string relative;            // the folder inside the work tree: "" or "a/b/"
};

/// The repositories a walk meets; each is opened once and freed with this object.
class GitRepos {
public:
    GitRepos();
    ~GitRepos();
    GitRepos(const GitRepos&) = delete;
    GitRepos& operator=(const GitRepos&) = delete;

    /// The work tree holding `folder` (searched upward from it).
    GitPlace find(const std::filesystem::path& folder);
    /// The place of the subfolder `name` of `parent`, at `path`: the work tree of a nested
    /// repository when the subfolder holds `.git`, else the parent's work tree.
    GitPlace child(const GitPlace& parent, const std::string& name, const std::filesystem::path& path);
    /// Whether git ignores the entry `name` of the folder at `place`.
    bool ignored(const GitPlace& place, const std::string& name) const;

private:
    GitPlace open(const std::filesystem::path& folder, unsigned flags);
    std::map<std::string, git_repository*> repos_;  // by work tree
};

}  // namespace graphmend::config

// libgit2's ignore rules: see gitignore.hpp.
#include "gitignore.hpp"

#include <git2.h>

#include <system_error>

namespace graphmend::config {

namespace fs = std::filesystem;

GitRepos::GitRepos() {
    git_libgit2_init();
    // Only ignore rules are read: a work tree owned by another user (root checking a
    // user's checkout) is read like git's `safe.directory = *`.
    git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0);
}

GitRepos::~GitRepos() {
    for (auto& [workdir, repo] : repos_) git_repository_free(repo);
    git_libgit2_shutdown();
}

GitPlace GitRepos::open(const fs::path& folder, unsigned flags) {
    git_repository* repo = nullptr;
    if (git_repository_open_ext(&repo, folder.c_str(), flags, nullptr) != 0) return {};
    const char* workdir = git_repository_workdir(repo);
    if (workdir == nullptr) {  // a bare repository
        git_repository_free(repo);
        return {};
    }
    auto [it, added] = repos_.emplace(workdir, repo);
    if (!added) git_repository_free(repo);
    // The work tree ends with '/': its parent_path() is the folder itself.
    std::string relative = folder.lexically_relative(fs::path(it->first).parent_path()).generic_string();
    if (relative.empty() || relative == ".") return {it->second, ""};
    if (relative.starts_with("..")) return {};  // e.g. a folder inside .git
    return {it->second, relative + "/"};
}

GitPlace GitRepos::find(const fs::path& folder) {
    std::error_code ec;
    const fs::path real = fs::canonical(folder, ec);
    return ec ? GitPlace{} : open(real, 0);
}

GitPlace GitRepos::child(const GitPlace& parent, const std::string& name, const fs::path& path) {
    std::error_code ec;
    if (fs::exists(path / ".git", ec)) {
        const fs::path real = fs::canonical(path, ec);
        if (!ec) {
            if (GitPlace nested = open(real, GIT_REPOSITORY_OPEN_NO_SEARCH); nested.repo) return nested;
        }
    }
    if (parent.repo == nullptr) return {};
    return {parent.repo, parent.relative + name + "/"};
}

bool GitRepos::ignored(const GitPlace& place, const std::string& name) const {
    if (place.repo == nullptr) return false;
    int ignored = 0;
    const std::string path = place.relative + name;
    return git_ignore_path_is_ignored(&ignored, place.repo, path.c_str()) == 0 && ignored != 0;
}

}  // namespace graphmend::config

// Rule selection, settings, and finding each folder's configuration: see config.hpp.
#include <fmt/format.h>

#include <algorithm>

#include "graphmend/config.hpp"
#include "graphmend/output.hpp"
#include "graphmend/rule.hpp"

namespace graphmend::config {

std::vector<std::string> all_codes() {
    std::vector<std::string> codes;
    for (const auto& rule : rules::registry()) codes.emplace_back(rule->info().code);
    return codes;
}

bool valid_selector(std::string_view selector) {
    if (selector == "ALL") return true;
    if (selector.size() < 2 || !selector.starts_with("GM")) return false;
    const auto codes = all_codes();
    return std::any_of(codes.begin(), codes.end(), [&](const std::string& c) { return c.starts_with(selector); });
}

bool selects(std::string_view selector, std::string_view code) {
    return selector == "ALL" || code.starts_with(selector);
}

namespace {

// ruff's specificity: ALL, then longer prefixes.
int specificity(std::string_view selector) { return selector == "ALL" ? 0 : static_cast<int>(selector.size()); }

// The most specific of `selectors` that selects `code`; -1 when none does.
int best(const std::vector<std::string>& selectors, const std::string& code) {
    int out = -1;
    for (const auto& s : selectors) {
        if (selects(s, code)) out = std::max(out, specificity(s));
    }
    return out;
}

}  // namespace

std::vector<std::string> resolve_rules(const std::vector<const RuleSelection*>& layers) {
    const auto codes = all_codes();
    std::vector<bool> on(codes.size(), true);  // graphmend's default: select = ["ALL"]
    std::vector<std::string> carried;          // ruff: `select = []` with only `ignore` carries it to the next layer
    for (const RuleSelection* layer : layers) {
        if (layer == nullptr) continue;
        std::vector<std::string> selecting = layer->select.value_or(std::vector<std::string>{});
        selecting.insert(selecting.end(), layer->extend_select.begin(), layer->extend_select.end());
        std::vector<std::string> ignoring = layer->ignore;
        ignoring.insert(ignoring.end(), carried.begin(), carried.end());
        for (std::size_t i = 0; i < codes.size(); ++i) {
            const int sel = best(selecting, codes[i]);
            const int ign = best(ignoring, codes[i]);
            if (sel < 0 && ign < 0) {
                if (layer->select) on[i] = false;  // `select` starts over
                continue;
            }
            on[i] = sel > ign;  // at the same specificity, ignore wins
        }
        const bool carry = layer->select && layer->select->empty() && layer->extend_select.empty();
        carried = carry ? layer->ignore : std::vector<std::string>{};
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < codes.size(); ++i) {
        if (on[i]) out.push_back(codes[i]);
    }
    return out;
}

bool Settings::excluded(const fs::path& path) const {
    return std::any_of(exclude.begin(), exclude.end(), [&](const FilePattern& p) { return p.matches(path); });
}

std::shared_ptr<const FileSettings> Settings::for_file(const fs::path& path) const {
    auto out = std::make_shared<FileSettings>();
    out->unsafe_fixes = unsafe_fixes;
    for (const auto& code : selected) {
        const bool ignored = std::any_of(per_file_ignores.begin(), per_file_ignores.end(), [&](const PerFileIgnore& p) {
            if (p.pattern.matches(path) == p.negated) return false;
            return std::any_of(p.codes.begin(), p.codes.end(), [&](const std::string& s) { return selects(s, code); });
        });
        if (!ignored) out->selected.push_back(code);
    }
    return out;
}

Settings resolve_settings(const Config* config, const Overrides& overrides) {
    Settings s;
    s.selected = resolve_rules({config ? &config->rules : nullptr, &overrides.rules});
    if (config && config->exclude) {
        s.exclude = *config->exclude;
    } else {
        for (const auto& name : default_excludes()) s.exclude.push_back(FilePattern::basename(name));
    }
    if (config) {
        s.config_path = config->path;
        s.exclude.insert(s.exclude.end(), config->extend_exclude.begin(), config->extend_exclude.end());
        s.per_file_ignores = config->per_file_ignores;
        s.unsafe_fixes = config->unsafe_fixes;
        s.respect_gitignore = config->respect_gitignore.value_or(true);
    }
    s.exclude.insert(s.exclude.end(), overrides.extend_exclude.begin(), overrides.extend_exclude.end());
    if (overrides.unsafe_fixes) s.unsafe_fixes = overrides.unsafe_fixes;
    if (overrides.no_respect_gitignore) s.respect_gitignore = false;
    return s;
}

namespace {

std::string read_config(const fs::path& file) {
    try {
        return syntax::read_file(file.string());
    } catch (const std::exception& e) {
        throw ConfigError(e.what());
    }
}

// The configuration files a folder may hold, in ruff's order of precedence.
constexpr std::string_view kConfigNames[] = {".graphmend.toml", "graphmend.toml", "pyproject.toml"};

}  // namespace

Resolver::Resolver(Overrides overrides)
    : overrides_(std::move(overrides)), defaults_(resolve_settings(nullptr, overrides_)) {
    if (overrides_.isolated) {
        fixed_ = defaults_;
    } else if (!overrides_.config_file.empty()) {
        const fs::path file(overrides_.config_file);
        const auto config = parse_config(read_config(file), file.string(), file.filename() == "pyproject.toml",
                                         fs::current_path(), warnings_);
        fixed_ = resolve_settings(config ? &*config : nullptr, overrides_);
        fixed_->config_path = file.string();
    }
}

const Settings* Resolver::load(const fs::path& file, bool pyproject, const fs::path& folder) {
    if (const auto it = files_.find(file); it != files_.end()) return it->second.get();
    const auto config = parse_config(read_config(file), file.string(), pyproject, folder, warnings_);
    auto& slot = files_[file];
    if (config) slot = std::make_unique<Settings>(resolve_settings(&*config, overrides_));
    return slot.get();
}

const Settings& Resolver::for_folder(const fs::path& folder) {
    if (fixed_) return *fixed_;
    if (const auto it = folders_.find(folder); it != folders_.end()) return *it->second;
    const Settings* found = nullptr;
    for (const auto name : kConfigNames) {
        const fs::path file = folder / name;
        std::error_code ec;
        if (!fs::is_regular_file(file, ec)) continue;
        found = load(file, name == "pyproject.toml", folder);
        if (found) break;
    }
    if (!found) found = folder.has_relative_path() ? &for_folder(folder.parent_path()) : &defaults_;
    folders_[folder] = found;
    return *found;
}

std::shared_ptr<const FileSettings> Resolver::for_file(const std::string& path) {
    const fs::path abs = fs::absolute(fs::path(path)).lexically_normal();
    return for_folder(abs.parent_path()).for_file(abs);
}

std::vector<std::string> Resolver::take_warnings() { return std::exchange(warnings_, {}); }

}  // namespace graphmend::config

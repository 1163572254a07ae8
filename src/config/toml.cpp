// Reading a configuration file with toml++: see config.hpp. The only file that includes
// <toml++/toml.h> (header-only: it is large).
#include <toml++/toml.h>

#include <fmt/format.h>

#include <regex>

#include "graphmend/config.hpp"

namespace graphmend::config {

namespace {

class Reader {
public:
    Reader(const std::string& path, const fs::path& folder, std::vector<std::string>& warnings)
        : path_(path), folder_(folder), warnings_(warnings) {}

    void read(const toml::table& table, Config& out) {
        for (auto&& [key, value] : table) read_key(key, value, out);
    }

    [[noreturn]] void fail(const toml::source_region& where, std::string_view message) const {
        throw ConfigError(fmt::format("{}:{}:{}: {}", path_, where.begin.line, where.begin.column, message));
    }

private:
    void read_key(const toml::key& key, const toml::node& value, Config& out) {
        const std::string_view k = key.str();
        if (k == "select") {
            out.rules.select = selectors(value, k);
        } else if (k == "extend-select") {
            out.rules.extend_select = selectors(value, k);
        } else if (k == "ignore") {
            out.rules.ignore = selectors(value, k);
        } else if (k == "exclude") {
            out.exclude = patterns(value, k);
        } else if (k == "extend-exclude") {
            out.extend_exclude = patterns(value, k);
        } else if (k == "per-file-ignores") {
            out.per_file_ignores = per_file_ignores(value);
        } else if (k == "unsafe-fixes") {
            out.unsafe_fixes = boolean(value, k);
        } else if (k == "respect-gitignore") {
            out.respect_gitignore = boolean(value, k);
        } else if (k == "target-torch") {
            out.target_torch = target_torch(value);
        } else {
            warnings_.push_back(fmt::format("{}:{}:{}: unknown key `{}`; ignored", path_, key.source().begin.line,
                                            key.source().begin.column, k));
        }
    }

    std::vector<std::pair<std::string, toml::source_region>> strings(const toml::node& value, std::string_view key) {
        const toml::array* array = value.as_array();
        if (array == nullptr) fail(value.source(), fmt::format("`{}` must be a list of strings", key));
        std::vector<std::pair<std::string, toml::source_region>> out;
        for (const toml::node& item : *array) {
            const auto* s = item.as_string();
            if (s == nullptr) fail(item.source(), fmt::format("`{}` must be a list of strings", key));
            out.emplace_back(s->get(), item.source());
        }
        return out;
    }

    std::vector<std::string> selectors(const toml::node& value, std::string_view key) {
        std::vector<std::string> out;
        for (auto& [s, where] : strings(value, key)) {
            if (!valid_selector(s)) {
                fail(where, fmt::format("unknown rule selector `{}` in `{}` (codes: {}, or ALL)", s, key,
                                        fmt::join(all_codes(), ", ")));
            }
            out.push_back(std::move(s));
        }
        return out;
    }

    FilePattern pattern(std::string glob, const toml::source_region& where) {
        if (const auto err = glob_error(glob)) fail(where, *err);
        return FilePattern::relative_to(std::move(glob), folder_);
    }

    std::vector<FilePattern> patterns(const toml::node& value, std::string_view key) {
        std::vector<FilePattern> out;
        for (auto& [s, where] : strings(value, key)) out.push_back(pattern(std::move(s), where));
        return out;
    }

    std::vector<PerFileIgnore> per_file_ignores(const toml::node& value) {
        const toml::table* table = value.as_table();
        if (table == nullptr) fail(value.source(), "`per-file-ignores` must be a table of globs to lists of codes");
        std::vector<PerFileIgnore> out;
        for (auto&& [key, codes] : *table) {
            std::string glob(key.str());
            const bool negated = glob.starts_with('!');
            if (negated) glob.erase(0, 1);
            out.push_back({pattern(std::move(glob), key.source()), negated,
                           selectors(codes, fmt::format("per-file-ignores.\"{}\"", key.str()))});
        }
        return out;
    }

    bool boolean(const toml::node& value, std::string_view key) {
        const auto* b = value.as_boolean();
        if (b == nullptr) fail(value.source(), fmt::format("`{}` must be true or false", key));
        return b->get();
    }

    std::string target_torch(const toml::node& value) {
        const auto* s = value.as_string();
        static const std::regex version(R"(([0-9]+\.[0-9]+)(\.[0-9]+)?)");
        std::smatch m;
        if (s == nullptr || !std::regex_match(s->get(), m, version)) {
            fail(value.source(), "`target-torch` must be a torch version as a string, e.g. \"2.12\"");
        }
        if (m[1].str() != kTargetTorch) {
            warnings_.push_back(fmt::format(
                "{}:{}:{}: target-torch = \"{}\": graphmend's rules encode the behaviour of torch {}; the fixes "
                "still target torch {}",
                path_, value.source().begin.line, value.source().begin.column, s->get(), kTargetTorch, kTargetTorch));
        }
        return s->get();
    }

    const std::string& path_;
    const fs::path& folder_;
    std::vector<std::string>& warnings_;
};

}  // namespace

std::optional<Config> parse_config(std::string_view text, const std::string& path, bool pyproject,
                                   const fs::path& folder, std::vector<std::string>& warnings) {
    toml::table root;
    try {
        root = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
        throw ConfigError(fmt::format("{}:{}:{}: invalid TOML: {}", path, e.source().begin.line,
                                      e.source().begin.column, e.description()));
    }
    Reader reader(path, folder, warnings);
    const toml::table* table = &root;
    if (pyproject) {
        const toml::node_view<const toml::node> section = std::as_const(root)["tool"]["graphmend"];
        if (!section) return std::nullopt;
        table = section.as_table();
        if (table == nullptr) reader.fail(section.node()->source(), "[tool.graphmend] must be a table");
    }
    Config out;
    out.path = path;
    reader.read(*table, out);
    return out;
}

}  // namespace graphmend::config

// The registry (src/rules/registry.def, read by src/rules/registry.cpp): one line per rule,
// and the layout scripts/add_rule.py makes and relies on. Each registered rule has
// - its line `GRAPHMEND_RULE(CODE, NAME)`, CODE and NAME as the rule's own RuleInfo says
//   (NAME with `_` for `-`), codes ascending;
// - its sources in src/rules/<code in lower case>_<NAME>/, rule.cpp among them;
// - its golden fixtures in tests/fixtures/<name>/ (its page: rule_pages_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "graphmend/rule.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path kRoot = GRAPHMEND_SOURCE_DIR;

struct Line {
    std::string code;
    std::string ident;  // deferred_side_effect
};

std::vector<Line> def_lines() {
    std::ifstream in(kRoot / "src/rules/registry.def");
    std::vector<Line> out;
    const std::regex line(R"(GRAPHMEND_RULE\((GM[1-9][0-9][0-9]), ([a-z][a-z0-9]*(?:_[a-z0-9]+)*)\))");
    std::smatch m;
    for (std::string s; std::getline(in, s);) {
        if (s.starts_with("//") || s.empty()) continue;
        EXPECT_TRUE(std::regex_match(s, m, line)) << "registry.def: not a rule line: " << s;
        if (!m.empty()) out.push_back({m[1], m[2]});
    }
    return out;
}

std::string kebab(std::string ident) {
    std::replace(ident.begin(), ident.end(), '_', '-');
    return ident;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

TEST(Registry, EachLineOfRegistryDefIsARegisteredRuleInOrder) {
    const auto lines = def_lines();
    const auto& rules = graphmend::rules::registry();
    ASSERT_EQ(lines.size(), rules.size());
    for (std::size_t i = 0; i < lines.size(); ++i) {
        EXPECT_EQ(rules[i]->info().code, lines[i].code) << "line " << i + 1 << " of the rule lines";
        EXPECT_EQ(rules[i]->info().name, kebab(lines[i].ident)) << lines[i].code;
    }
}

TEST(Registry, CodesAscendAndNamesAreUnique) {
    std::vector<std::string> codes;
    std::set<std::string> names;
    for (const auto& rule : graphmend::rules::registry()) {
        codes.emplace_back(rule->info().code);
        EXPECT_TRUE(names.insert(std::string(rule->info().name)).second) << rule->info().name;
    }
    EXPECT_TRUE(std::is_sorted(codes.begin(), codes.end()));
    EXPECT_EQ(std::set<std::string>(codes.begin(), codes.end()).size(), codes.size());
}

TEST(Registry, EachRuleHasItsFolderAndFixtures) {
    for (const auto& line : def_lines()) {
        const fs::path src = kRoot / "src/rules" / (lower(line.code) + "_" + line.ident);
        EXPECT_TRUE(fs::is_regular_file(src / "rule.cpp")) << src;
        const fs::path fixtures = kRoot / "tests/fixtures" / kebab(line.ident);
        bool any = false;
        if (fs::is_directory(fixtures)) {
            for (const auto& e : fs::directory_iterator(fixtures)) {
                any = any || e.path().filename().string().ends_with(".report.txt");
            }
        }
        EXPECT_TRUE(any) << line.code << ": no golden fixture in " << fixtures;
    }
}

}  // namespace

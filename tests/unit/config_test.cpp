// Configuration: globs, rule selection by prefix, reading config files, finding the nearest.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <string_view>

#include "graphmend/config.hpp"
#include "temp_tree.hpp"

using namespace graphmend;
using namespace graphmend::config;

namespace {

TEST(Glob, StarCrossesSlashesLikeRuffsGlobset) {
    EXPECT_TRUE(glob_match("*.py", "a.py"));
    EXPECT_TRUE(glob_match("/p/*.py", "/p/a/b.py"));
    EXPECT_FALSE(glob_match("*.py", "a.pyc"));
    EXPECT_TRUE(glob_match("a?c", "abc"));
    EXPECT_FALSE(glob_match("a?c", "ac"));
}

TEST(Glob, ClassesBracesEscapes) {
    EXPECT_TRUE(glob_match("model_[a-c].py", "model_b.py"));
    EXPECT_FALSE(glob_match("model_[!a-c].py", "model_b.py"));
    EXPECT_TRUE(glob_match("model_[!a-c].py", "model_d.py"));
    EXPECT_TRUE(glob_match("{tests,docs}/*.py", "docs/x.py"));
    EXPECT_FALSE(glob_match("{tests,docs}/*.py", "src/x.py"));
    EXPECT_TRUE(glob_match("a{b,{c,d}e}", "ade"));
    EXPECT_TRUE(glob_match("\\*.py", "*.py"));
    EXPECT_FALSE(glob_match("\\*.py", "a.py"));
}

TEST(Glob, DoubleStarSlashMayMatchNoFolder) {
    EXPECT_TRUE(glob_match("/p/**/x.py", "/p/x.py"));
    EXPECT_TRUE(glob_match("/p/**/x.py", "/p/a/b/x.py"));
    EXPECT_TRUE(glob_match("**/x.py", "x.py"));
    EXPECT_FALSE(glob_match("/p/**/x.py", "/q/x.py"));
}

TEST(Glob, MalformedGlobsAreNamed) {
    EXPECT_TRUE(glob_error("a[b").has_value());
    EXPECT_TRUE(glob_error("{a,b").has_value());
    EXPECT_TRUE(glob_error("a}").has_value());
    EXPECT_FALSE(glob_error("a[]]b").has_value());
    EXPECT_FALSE(glob_error("{a,b}/**/*.py").has_value());
}

TEST(FilePattern, NameWithoutSlashMatchesAnyLastComponent) {
    const auto p = FilePattern::relative_to("gen_*.py", "/proj");
    EXPECT_TRUE(p.matches("/proj/a/b/gen_x.py"));
    EXPECT_TRUE(p.matches("/elsewhere/gen_x.py"));
    EXPECT_FALSE(p.matches("/proj/a/x.py"));
}

TEST(FilePattern, PathWithSlashIsRelativeToItsFolder) {
    const auto p = FilePattern::relative_to("a/gen.py", "/proj");
    EXPECT_TRUE(p.matches("/proj/a/gen.py"));
    EXPECT_FALSE(p.matches("/proj/b/a/gen.py"));
    EXPECT_FALSE(p.matches("/other/a/gen.py"));
}

TEST(Selection, PrefixesSelectRules) {
    EXPECT_TRUE(selects("GM2", "GM201"));
    EXPECT_TRUE(selects("ALL", "GM401"));
    EXPECT_FALSE(selects("GM20", "GM101"));
    EXPECT_TRUE(valid_selector("GM"));
    EXPECT_TRUE(valid_selector("GM20"));
    EXPECT_TRUE(valid_selector("ALL"));
    EXPECT_FALSE(valid_selector("GM0"));  // no code starts GM0 (scripts/add_rule.py: GM[1-9]NN)
    EXPECT_FALSE(valid_selector("G"));
    EXPECT_FALSE(valid_selector("gm201"));
}

std::vector<std::string> resolve(const RuleSelection& config, const RuleSelection& cli = {}) {
    return resolve_rules({&config, &cli});
}

using Codes = std::vector<std::string>;

// The registered codes, in registry order, that one of `prefixes` ("GM2") selects (under) or
// that none of them selects (all_but): the expectations below hold whichever rules are added.
Codes filtered(std::initializer_list<std::string_view> prefixes, bool selected) {
    Codes out;
    for (const auto& code : all_codes()) {
        const bool hit = std::any_of(prefixes.begin(), prefixes.end(), [&](auto p) { return code.starts_with(p); });
        if (hit == selected) out.push_back(code);
    }
    return out;
}

Codes under(std::initializer_list<std::string_view> prefixes) { return filtered(prefixes, true); }
Codes all_but(std::initializer_list<std::string_view> prefixes) { return filtered(prefixes, false); }

TEST(Selection, DefaultIsEverything) { EXPECT_EQ(resolve({}), all_codes()); }

TEST(Selection, ThePrefixesBelowEachSelectSomeRules) {
    for (const auto* p : {"GM1", "GM2", "GM3", "GM4", "GM5"}) EXPECT_FALSE(under({p}).empty()) << p;
    EXPECT_EQ(under({"GM201", "GM202"}), (Codes{"GM201", "GM202"}));
}

TEST(Selection, SelectReplacesAndIgnoreRemoves) {
    EXPECT_EQ(resolve({Codes{"GM2", "GM4"}, {}, {}}), under({"GM2", "GM4"}));
    EXPECT_EQ(resolve({std::nullopt, {}, {"GM1", "GM3"}}), all_but({"GM1", "GM3"}));
}

TEST(Selection, TheMoreSpecificSelectorWinsAndIgnoreWinsTies) {
    // ruff: select GM201 beats ignore GM2 (longer); ignore GM201 beats select GM201.
    EXPECT_EQ(resolve({Codes{"GM201"}, {}, {"GM2"}}), (Codes{"GM201"}));
    EXPECT_EQ(resolve({Codes{"GM"}, {}, {"GM201"}}), all_but({"GM201"}));
    EXPECT_EQ(resolve({Codes{"GM201"}, {}, {"GM201"}}), Codes{});
}

TEST(Selection, CommandLineSelectReplacesTheConfigsAndExtendSelectAdds) {
    const RuleSelection config{Codes{"GM1"}, {}, {}};
    EXPECT_EQ(resolve(config, {Codes{"GM2"}, {}, {}}), under({"GM2"}));
    EXPECT_EQ(resolve(config, {std::nullopt, {"GM4"}, {}}), under({"GM1", "GM4"}));
    EXPECT_EQ(resolve(config, {std::nullopt, {}, {"GM1"}}), Codes{});
}

Config parse(const std::string& text, bool pyproject, std::vector<std::string>& warnings) {
    auto c = parse_config(text, "cfg.toml", pyproject, "/proj", warnings);
    EXPECT_TRUE(c.has_value());
    return c.value_or(Config{});
}

TEST(ConfigFile, ReadsEveryKey) {
    std::vector<std::string> warnings;
    const Config c = parse(
        "select = [\"GM1\", \"GM2\"]\nextend-select = [\"GM4\"]\nignore = [\"GM201\"]\nexclude = [\"gen\"]\n"
        "extend-exclude = [\"a/*.py\"]\nunsafe-fixes = true\nrespect-gitignore = false\ntarget-torch = \"2.12.1\"\n"
        "[per-file-ignores]\n\"tests/*\" = [\"GM1\"]\n\"!src/*\" = [\"GM4\"]\n",
        false, warnings);
    EXPECT_TRUE(warnings.empty());
    EXPECT_EQ(c.rules.select, (Codes{"GM1", "GM2"}));
    EXPECT_EQ(c.rules.extend_select, (Codes{"GM4"}));
    EXPECT_EQ(c.rules.ignore, (Codes{"GM201"}));
    ASSERT_TRUE(c.exclude.has_value());
    EXPECT_EQ(c.exclude->at(0).glob(), "gen");
    EXPECT_TRUE(c.extend_exclude.at(0).matches("/proj/a/x.py"));
    EXPECT_EQ(c.unsafe_fixes, true);
    EXPECT_EQ(c.respect_gitignore, false);
    EXPECT_EQ(c.target_torch, "2.12.1");
    ASSERT_EQ(c.per_file_ignores.size(), 2u);  // in toml++'s key order
    EXPECT_EQ(c.per_file_ignores[0].pattern.glob(), "src/*");
    EXPECT_TRUE(c.per_file_ignores[0].negated);
    EXPECT_EQ(c.per_file_ignores[1].codes, (Codes{"GM1"}));
    EXPECT_FALSE(c.per_file_ignores[1].negated);
    EXPECT_TRUE(c.per_file_ignores[1].pattern.matches("/proj/tests/t.py"));
}

TEST(ConfigFile, PyprojectWithoutSectionIsSkipped) {
    std::vector<std::string> warnings;
    EXPECT_FALSE(parse_config("[tool.ruff]\nselect = [\"E\"]\n", "pyproject.toml", true, "/p", warnings));
    EXPECT_FALSE(parse_config("[project]\nname = \"x\"\n", "pyproject.toml", true, "/p", warnings));
    const auto c = parse_config("[tool.graphmend]\nignore = [\"GM4\"]\n", "pyproject.toml", true, "/p", warnings);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->rules.ignore, (Codes{"GM4"}));
}

std::string error_of(const std::string& text, bool pyproject = false) {
    std::vector<std::string> warnings;
    try {
        parse_config(text, "cfg.toml", pyproject, "/proj", warnings);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

TEST(ConfigFile, ErrorsSayWhere) {
    using ::testing::StartsWith;
    EXPECT_THAT(error_of("select = [\"GM1\",\n  \"GM0\"]\n"), StartsWith("cfg.toml:2:3: unknown rule selector `GM0`"));
    EXPECT_THAT(error_of("select = \"GM1\"\n"), StartsWith("cfg.toml:1:10: `select` must be a list of strings"));
    EXPECT_THAT(error_of("unsafe-fixes = 1\n"), StartsWith("cfg.toml:1:16: `unsafe-fixes` must be true or false"));
    EXPECT_THAT(error_of("select = [\n"), StartsWith("cfg.toml:1:12: invalid TOML"));
    EXPECT_THAT(error_of("exclude = [\"a[\"]\n"), StartsWith("cfg.toml:1:12: invalid glob"));
    EXPECT_THAT(error_of("target-torch = \"two\"\n"), StartsWith("cfg.toml:1:16: `target-torch` must be"));
    EXPECT_THAT(error_of("[tool]\ngraphmend = 3\n", true), StartsWith("cfg.toml:2:13: [tool.graphmend] must be a table"));
    EXPECT_THAT(error_of("[per-file-ignores]\n\"x\" = [\"E501\"]\n"),
                StartsWith("cfg.toml:2:8: unknown rule selector `E501`"));
}

TEST(ConfigFile, UnknownKeysAndOtherTorchVersionsAreWarnings) {
    std::vector<std::string> warnings;
    parse("lint = 1\ntarget-torch = \"2.5\"\n", false, warnings);
    ASSERT_EQ(warnings.size(), 2u);
    EXPECT_EQ(warnings[0], "cfg.toml:1:1: unknown key `lint`; ignored");
    EXPECT_NE(warnings[1].find("target-torch = \"2.5\": graphmend's rules encode the behaviour of torch 2.12"),
              std::string::npos);
}

TEST(Settings, PerFileIgnoresAndNegation) {
    std::vector<std::string> warnings;
    const Config c = parse("[per-file-ignores]\n\"tests/*\" = [\"GM1\"]\n\"!src/*\" = [\"GM4\"]\n", false, warnings);
    const Settings s = resolve_settings(&c, {});
    EXPECT_EQ(s.for_file("/proj/tests/t.py")->selected, all_but({"GM1", "GM4"}));
    EXPECT_EQ(s.for_file("/proj/src/m.py")->selected, all_codes());
    EXPECT_EQ(s.for_file("/proj/m.py")->selected, all_but({"GM4"}));
}

TEST(Settings, CommandLineWinsForUnsafeFixesAndGitignore) {
    std::vector<std::string> warnings;
    const Config c = parse("unsafe-fixes = true\n", false, warnings);
    Overrides cli;
    EXPECT_EQ(resolve_settings(&c, cli).unsafe_fixes, true);
    cli.unsafe_fixes = false;
    cli.no_respect_gitignore = true;
    const Settings s = resolve_settings(&c, cli);
    EXPECT_EQ(s.unsafe_fixes, false);
    EXPECT_FALSE(s.respect_gitignore);
}

TEST(Settings, ExcludeReplacesTheDefaultsAndExtendExcludeAdds) {
    std::vector<std::string> warnings;
    EXPECT_TRUE(resolve_settings(nullptr, {}).excluded("/p/.venv"));
    EXPECT_TRUE(resolve_settings(nullptr, {}).excluded("/p/a/__pycache__"));
    const Config replaced = parse("exclude = [\"gen\"]\n", false, warnings);
    EXPECT_FALSE(resolve_settings(&replaced, {}).excluded("/p/.venv"));
    EXPECT_TRUE(resolve_settings(&replaced, {}).excluded("/p/gen"));
    const Config extended = parse("extend-exclude = [\"gen\"]\n", false, warnings);
    EXPECT_TRUE(resolve_settings(&extended, {}).excluded("/p/.venv"));
    EXPECT_TRUE(resolve_settings(&extended, {}).excluded("/p/gen"));
}

TEST(Resolver, NearestConfigWinsAndPyprojectWithoutSectionIsSkipped) {
    TempTree t;
    t.write("pyproject.toml", "[tool.graphmend]\nselect = [\"GM1\"]\n");
    t.write("a/pyproject.toml", "[project]\nname = \"a\"\n");
    t.write("a/b/graphmend.toml", "select = [\"GM2\"]\n");
    t.write("c/.graphmend.toml", "select = [\"GM3\"]\n");
    t.write("c/graphmend.toml", "select = [\"GM4\"]\n");
    Resolver r{Overrides{}};
    EXPECT_EQ(r.for_folder(t.root / "a").selected, under({"GM1"}));
    EXPECT_EQ(r.for_folder(t.root / "a/b/d").selected, under({"GM2"}));
    EXPECT_EQ(r.for_folder(t.root / "c").selected, under({"GM3"}));  // .graphmend.toml first
    EXPECT_EQ(r.for_file((t.root / "a/b/m.py").string())->selected, under({"GM2"}));
}

TEST(Resolver, ConfigFlagAndIsolated) {
    TempTree t;
    t.write("pyproject.toml", "[tool.graphmend]\nselect = [\"GM1\"]\n");
    t.write("x/cfg.toml", "select = [\"GM4\"]\n");
    Overrides fixed;
    fixed.config_file = (t.root / "x/cfg.toml").string();
    Resolver r{fixed};
    EXPECT_EQ(r.for_folder(t.root).selected, under({"GM4"}));
    Overrides isolated;
    isolated.isolated = true;
    Resolver i{isolated};
    EXPECT_EQ(i.for_folder(t.root).selected, all_codes());
}

TEST(Resolver, MalformedConfigThrows) {
    TempTree t;
    t.write("pyproject.toml", "[tool.graphmend]\nselect = [\"GM1\"\n");
    Resolver r{Overrides{}};
    EXPECT_THROW(r.for_folder(t.root / "a"), ConfigError);
}

}  // namespace

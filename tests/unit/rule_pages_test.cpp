// Rule pages (include/graphmend/rule_pages.hpp): every registered rule has its page,
// docs/rules/<CODE>.md embedded byte for byte, and `graphmend rule` prints them.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "graphmend/rule.hpp"
#include "graphmend/rule_pages.hpp"
#include "graphmend/rule_pages_text.hpp"

namespace {

namespace fs = std::filesystem;
using graphmend::output::rule_page;
using graphmend::output::rule_pages;

const fs::path kRoot = GRAPHMEND_SOURCE_DIR;

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct CliResult {
    int status;
    std::string out;
};

// Runs `graphmend ARGS` and keeps its stdout (and stderr, with `2>&1` in ARGS).
CliResult run_graphmend(const std::string& args) {
    const std::string cmd = "'" GRAPHMEND_BINARY "' " + args;
    FILE* pipe = ::popen(cmd.c_str(), "r");
    if (pipe == nullptr) throw std::runtime_error("popen failed");
    std::string out;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
    const int status = ::pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(RulePages, EveryRegisteredRuleHasItsPage) {
    ASSERT_FALSE(graphmend::rules::registry().empty());
    for (const auto& rule : graphmend::rules::registry()) {
        const auto& info = rule->info();
        const auto page = rule_page(info.code);
        ASSERT_TRUE(page.has_value()) << info.code << ": no docs/rules/" << info.code << ".md";
        EXPECT_EQ(page->code, info.code);
        EXPECT_EQ(page->name, info.name);
        const std::string heading = "# " + std::string(info.code) + " " + std::string(info.name);
        EXPECT_EQ(page->text.substr(0, heading.size()), heading) << "the page's first line names the rule";
        EXPECT_EQ(page->text, slurp(kRoot / "docs/rules" / (std::string(info.code) + ".md")));
        const auto by_name = rule_page(info.name);
        ASSERT_TRUE(by_name.has_value()) << info.name;
        EXPECT_EQ(by_name->code, info.code);
    }
}

TEST(RulePages, EveryPageIsARegisteredRule) {
    std::set<std::string> docs;
    for (const auto& e : fs::directory_iterator(kRoot / "docs/rules")) {
        if (e.path().extension() == ".md") docs.insert(e.path().stem().string());
    }
    std::set<std::string> embedded;
    for (const auto& page : graphmend::output::embedded::kPages) embedded.insert(std::string(page.code));
    EXPECT_EQ(embedded, docs) << "every docs/rules/*.md is named by a code and embedded";
    for (const auto& code : docs) EXPECT_TRUE(rule_page(code).has_value()) << code << " is no registered rule";
    EXPECT_EQ(rule_pages().size(), graphmend::rules::registry().size());
}

TEST(RulePages, UnknownRulesHaveNoPage) {
    EXPECT_FALSE(rule_page("GM000").has_value());
    EXPECT_FALSE(rule_page("").has_value());
    EXPECT_FALSE(rule_page("gm101").has_value());
}

TEST(RuleCommand, PrintsThePageByCodeAndByName) {
    const std::string page = slurp(kRoot / "docs/rules/GM201.md");
    const CliResult by_code = run_graphmend("rule GM201");
    EXPECT_EQ(by_code.status, 0);
    EXPECT_EQ(by_code.out, page);
    const CliResult by_name = run_graphmend("rule predicated-control-flow");
    EXPECT_EQ(by_name.status, 0);
    EXPECT_EQ(by_name.out, page);
}

TEST(RuleCommand, AllPrintsEveryPageInRegistryOrder) {
    std::string expected;
    for (const auto& rule : graphmend::rules::registry()) {
        if (!expected.empty()) expected += "\n";
        expected += slurp(kRoot / "docs/rules" / (std::string(rule->info().code) + ".md"));
    }
    const CliResult all = run_graphmend("rule --all");
    EXPECT_EQ(all.status, 0);
    EXPECT_EQ(all.out, expected);
}

TEST(RuleCommand, UnknownRuleIsAUsageErrorListingTheCodes) {
    const CliResult unknown = run_graphmend("rule GM000 2>&1");
    EXPECT_EQ(unknown.status, 2);
    EXPECT_NE(unknown.out.find("unknown rule 'GM000'"), std::string::npos) << unknown.out;
    for (const auto& rule : graphmend::rules::registry()) {
        EXPECT_NE(unknown.out.find(std::string(rule->info().code)), std::string::npos) << unknown.out;
    }
    EXPECT_EQ(run_graphmend("rule 2>&1").status, 2) << "a code or --all is required";
    EXPECT_EQ(run_graphmend("rule GM101 --all 2>&1").status, 2) << "a code and --all exclude each other";
}

}  // namespace

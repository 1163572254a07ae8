// The command line and its sessions (include/graphmend/app.hpp), called in this process: exit
// codes, what `check` and `fix --diff` leave on disk, stdin's text, usage errors, and what the
// command line parses into.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "graphmend/app.hpp"
#include "graphmend/fixer.hpp"
#include "graphmend/rule.hpp"
#include "temp_tree.hpp"

namespace {

namespace fs = std::filesystem;
using graphmend::app::Command;
using graphmend::app::Invocation;
using graphmend::app::Options;

// A module with one fixable site (a print in forward: deferred).
const std::string kModel =
    "import torch\n"
    "from torch import nn\n"
    "\n"
    "\n"
    "class Model(nn.Module):\n"
    "    def forward(self, x):\n"
    "        print(\"sum\", x.sum())\n"
    "        return x\n";

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct Ran {
    int code;
    std::string out;  // stdout
    std::string err;  // stderr
};

// A session (run_command, so that usage errors and configuration errors are caught as main
// catches them), stdin's text `in`, with stdout and stderr kept.
Ran session(Command command, const Options& opt, const std::string& in = "") {
    Invocation invocation;
    invocation.command = command;
    invocation.options = opt;
    invocation.options.threads = 1;
    std::istringstream stdin_text(in);
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    const int code = graphmend::app::run_command(invocation, stdin_text);
    std::string out = testing::internal::GetCapturedStdout();
    std::string err = testing::internal::GetCapturedStderr();
    return {code, std::move(out), std::move(err)};
}

Options on(std::vector<std::string> paths) {
    Options opt;
    opt.paths = std::move(paths);
    return opt;
}

// parse_command_line over `args` (the program's name first), with stdout and stderr kept.
struct Parsed {
    std::variant<Invocation, int> result;
    std::string out;
    std::string err;
};

Parsed parse(std::vector<std::string> args) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    auto result = graphmend::app::parse_command_line(static_cast<int>(argv.size()), argv.data());
    std::string out = testing::internal::GetCapturedStdout();
    std::string err = testing::internal::GetCapturedStderr();
    return {std::move(result), std::move(out), std::move(err)};
}

TEST(Session, CheckOfAFixableSiteExitsOneAndWritesNothing) {
    TempTree tree;
    tree.write("model.py", kModel);
    const std::string path = (tree.root / "model.py").string();
    const Ran r = session(Command::Check, on({path}));
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find(path + ":7:"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(path), kModel);
    EXPECT_EQ(fs::exists(tree.root / "_graphmend_runtime.py"), false);

    Options zero = on({path});
    zero.exit_zero = true;
    EXPECT_EQ(session(Command::Check, zero).code, 0);
}

TEST(Session, CheckOfAFileWithoutSitesExitsZero) {
    TempTree tree;
    tree.write("clean.py", "import torch\n\n\ndef f(x):\n    return x + 1\n");
    const Ran r = session(Command::Check, on({(tree.root / "clean.py").string()}));
    EXPECT_EQ(r.code, 0) << r.err;
}

TEST(Session, DiffPrintsTheDiffAndWritesNothing) {
    TempTree tree;
    tree.write("pkg/model.py", kModel);
    Options opt = on({tree.root.string()});
    opt.diff = true;
    const Ran r = session(Command::Fix, opt);
    EXPECT_EQ(r.code, 1) << r.err;  // as ruff's --diff: a file that would change is a finding
    const std::string model = (tree.root / "pkg/model.py").string();
    EXPECT_EQ(r.out.rfind("--- a/", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("pkg/model.py\n+++ b/"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\n-        print(\"sum\", x.sum())\n"), std::string::npos) << r.out;
    // The folder's file imports the runtime module: its diff is shown, and it is not written.
    EXPECT_NE(r.out.find("_graphmend_runtime.py"), std::string::npos);
    EXPECT_EQ(slurp(model), kModel);
    EXPECT_EQ(fs::exists(tree.root / "_graphmend_runtime.py"), false);
    EXPECT_EQ(fs::exists(tree.root / "pkg/_graphmend_runtime.py"), false);
}

TEST(Session, FixRewritesTheFileInPlace) {
    TempTree tree;
    tree.write("model.py", kModel);
    const fs::path path = tree.root / "model.py";
    const Ran r = session(Command::Fix, on({path.string()}));
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, "");
    const std::string fixed = slurp(path);
    EXPECT_NE(fixed, kModel);
    // A file named by itself gets the inline runtime (--runtime auto).
    EXPECT_EQ(fixed, graphmend::fix_files({{path.string(), kModel}}, {}).at(0).fixed);

    Options again = on({path.string()});
    again.exit_non_zero_on_fix = true;
    EXPECT_EQ(session(Command::Fix, again).code, 0) << "a second fix rewrites nothing";
}

TEST(Session, FixOfStdinPrintsTheFixedText) {
    const Ran r = session(Command::Fix, on({"-"}), kModel);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, graphmend::fix_files({{"-", kModel}}, {}).at(0).fixed);
}

TEST(Session, CheckOfStdinNamesItByStdinFilename) {
    Options opt = on({"-"});
    opt.stdin_filename = "models/net.py";
    const Ran r = session(Command::Check, opt, kModel);
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("models/net.py:7:"), std::string::npos) << r.err;
}

TEST(Session, UsageErrorsExitTwoBeforeAnyFileIsRead) {
    TempTree tree;
    tree.write("a.py", kModel);
    tree.write("b.py", kModel);
    Options two = on({(tree.root / "a.py").string(), (tree.root / "b.py").string()});
    two.output = (tree.root / "out.py").string();
    Ran r = session(Command::Fix, two);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, "error: -o/--output takes exactly one input file\n");
    EXPECT_FALSE(fs::exists(tree.root / "out.py"));

    Options named = on({(tree.root / "a.py").string()});
    named.stdin_filename = "x.py";
    r = session(Command::Check, named);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, "error: --stdin-filename names stdin's text: give - as the path\n");

    Options machine = on({"-"});
    machine.diff = true;
    machine.output_format = "json";
    r = session(Command::Fix, machine, kModel);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, "error: stdout carries the diff: write the json report with --output-file\n");
    EXPECT_EQ(r.out, "");
}

TEST(Session, AMissingConfigurationExitsTwo) {
    TempTree tree;
    tree.write("a.py", kModel);
    Options opt = on({(tree.root / "a.py").string()});
    opt.config.config = (tree.root / "missing.toml").string();
    const Ran r = session(Command::Check, opt);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("missing.toml"), std::string::npos) << r.err;
}

TEST(Session, AFileNotFoundExitsTwo) {
    TempTree tree;
    const Ran r = session(Command::Check, on({(tree.root / "none.py").string()}));
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("none.py"), std::string::npos) << r.err;
}

TEST(CommandLine, ParsesACheck) {
    const Parsed p = parse({"graphmend", "check", "-q", "--select", "GM1", "-j", "3", "a.py", "b"});
    ASSERT_TRUE(std::holds_alternative<Invocation>(p.result)) << p.err;
    const auto& inv = std::get<Invocation>(p.result);
    EXPECT_EQ(inv.command, Command::Check);
    EXPECT_EQ(inv.options.paths, (std::vector<std::string>{"a.py", "b"}));
    EXPECT_TRUE(inv.options.quiet);
    EXPECT_EQ(inv.options.threads, 3u);
    EXPECT_EQ(inv.options.config.select, std::vector<std::string>{"GM1"});
    EXPECT_EQ(inv.options.runtime, "auto");
}

TEST(CommandLine, ParsesAFixAndTheLastRuntime) {
    const Parsed p = parse({"graphmend", "fix", "--diff", "--runtime", "module", "--runtime", "inline", "m"});
    ASSERT_TRUE(std::holds_alternative<Invocation>(p.result)) << p.err;
    const auto& inv = std::get<Invocation>(p.result);
    EXPECT_EQ(inv.command, Command::Fix);
    EXPECT_TRUE(inv.options.diff);
    EXPECT_EQ(inv.options.runtime, "inline");
}

TEST(CommandLine, ParsesARule) {
    const Parsed p = parse({"graphmend", "rule", "--all"});
    ASSERT_TRUE(std::holds_alternative<Invocation>(p.result)) << p.err;
    EXPECT_EQ(std::get<Invocation>(p.result).command, Command::Rule);
    EXPECT_TRUE(std::get<Invocation>(p.result).all_rules);
}

TEST(CommandLine, VerifyTakesTheCommandAfterTheDashes) {
    const Parsed p = parse({"graphmend", "verify", "src", "--backend", "user", "--timeout", "30", "--select", "GM1",
                            "--", "python", "train.py", "--steps", "2", "--"});
    ASSERT_TRUE(std::holds_alternative<Invocation>(p.result)) << p.err;
    const auto& inv = std::get<Invocation>(p.result);
    EXPECT_EQ(inv.command, Command::Verify);
    EXPECT_EQ(inv.verify.path, "src");
    EXPECT_EQ(inv.verify.command, (std::vector<std::string>{"python", "train.py", "--steps", "2", "--"}));
    EXPECT_EQ(inv.verify.backend, "user");
    EXPECT_EQ(inv.verify.timeout_s, 30);
    EXPECT_EQ(inv.options.config.select, std::vector<std::string>{"GM1"});
}

TEST(CommandLine, FixVerifyNeedsACommandAndOnePathAndDashesNeedVerify) {
    const Parsed ok = parse({"graphmend", "fix", "--verify", "--unsafe-fixes", "m", "--", "python", "run.py"});
    ASSERT_TRUE(std::holds_alternative<Invocation>(ok.result)) << ok.err;
    const auto& inv = std::get<Invocation>(ok.result);
    EXPECT_TRUE(inv.fix_verify);
    EXPECT_EQ(inv.verify.path, "m");
    EXPECT_TRUE(inv.verify.unsafe_fixes);
    EXPECT_EQ(inv.verify.command, (std::vector<std::string>{"python", "run.py"}));
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"graphmend", "fix", "--verify", "m"},
             {"graphmend", "fix", "--verify", "a", "b", "--", "python"},
             {"graphmend", "fix", "--verify", "--diff", "m", "--", "python"},
             {"graphmend", "check", "m", "--", "python"}}) {
        const Parsed bad = parse(args);
        ASSERT_TRUE(std::holds_alternative<int>(bad.result)) << args.back();
        EXPECT_EQ(std::get<int>(bad.result), 2);
        EXPECT_NE(bad.err.find("error: "), std::string::npos) << bad.err;
    }
}

TEST(CommandLine, AnUnknownCommandNamesTheClosest) {
    const Parsed p = parse({"graphmend", "chekc", "a.py"});
    ASSERT_TRUE(std::holds_alternative<int>(p.result));
    EXPECT_EQ(std::get<int>(p.result), 2);
    EXPECT_EQ(p.err, "error: unknown command `chekc` (did you mean `check`?)\nRun with --help for more information.\n");
    const Parsed far = parse({"graphmend", "lint"});
    EXPECT_EQ(far.err, "error: unknown command `lint`; the commands are `fix`, `check`, `rule`, `verify`\n"
                       "Run with --help for more information.\n");
}

TEST(CommandLine, RuleHelpTakesItsExampleFromTheRegistry) {
    const Parsed p = parse({"graphmend", "--help"});
    ASSERT_TRUE(std::holds_alternative<int>(p.result));
    EXPECT_EQ(std::get<int>(p.result), 0);
    const auto& first = graphmend::rules::registry().front()->info();
    const std::string example =
        "print a rule's page, by code (" + std::string(first.code) + ") or name (" + std::string(first.name) + ")";
    EXPECT_NE(p.out.find(example), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("print a rule's page, by code (GM101) or name (deferred-side-effect)"), std::string::npos);
}

}  // namespace

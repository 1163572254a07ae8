// The runtime as a module (include/graphmend/runtime_module.hpp): the import a rewritten file
// gets (dots, names, the folder-project form, the main guard, CRLF, tabs), idempotency, an
// import extended by a later pass or run, the files that keep the inline block, the module's
// text, and the plan that refuses a `_graphmend_runtime.py` graphmend did not write.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "graphmend/fixer.hpp"
#include "graphmend/output.hpp"
#include "temp_tree.hpp"
#include "graphmend/runtime_module.hpp"
#include "graphmend/runtime_sources.hpp"

namespace fs = std::filesystem;
using namespace graphmend;

namespace {

fs::path temp_folder(const std::string& name) { return named_temp_folder("runtime-test", name); }

void write(const fs::path& path, const std::string& text) { write_file(path, text); }

// One file fixed in the Module form (its folders must exist: they decide its project).
FileOutcome fix_module(const fs::path& path, const std::string& text) {
    return fix_files({{path.string(), text, nullptr, RuntimeForm::Module}}, FixOptions{}).at(0);
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

const std::string kPrint =
    "import torch\n"
    "from torch import nn\n"
    "\n"
    "\n"
    "class Model(nn.Module):\n"
    "    def forward(self, x):\n"
    "        print(\"sum\", x.sum())\n"
    "        return x\n";

const std::string kBranch =
    "\n"
    "\n"
    "class Other(nn.Module):\n"
    "    def forward(self, x):\n"
    "        if x.sum() > 0:\n"
    "            x = x * 2\n"
    "        return x\n";

// Three package levels: `pkg/models/t5/modeling.py` imports from `pkg` with three dots.
fs::path package(const std::string& name) {
    const fs::path root = temp_folder(name) / "pkg";
    for (const fs::path& dir : {root, root / "models", root / "models" / "t5"}) write(dir / "__init__.py", "");
    return root;
}

TEST(RuntimeModule, PackageFileImportsFromTheOutermostPackageWithOneDotPerLevel) {
    const fs::path root = package("dots");
    const auto deep = fix_module(root / "models" / "t5" / "modeling.py", kPrint);
    EXPECT_TRUE(deep.fixed.ends_with("        return x\n\n\nfrom ..._graphmend_runtime import _graphmend_print  # noqa: E402\n"))
        << deep.fixed;
    EXPECT_TRUE(deep.imports_runtime);
    const auto top = fix_module(root / "top.py", kPrint);
    EXPECT_TRUE(top.fixed.ends_with("\nfrom ._graphmend_runtime import _graphmend_print  # noqa: E402\n")) << top.fixed;
    // An __init__.py is its package: `pkg/models/__init__.py` is one level below `pkg`.
    const auto init = fix_module(root / "models" / "__init__.py", kPrint);
    EXPECT_TRUE(init.fixed.ends_with("\nfrom .._graphmend_runtime import _graphmend_print  # noqa: E402\n"))
        << init.fixed;
}

TEST(RuntimeModule, FolderProjectTriesTheRelativeImportThenTheAbsoluteOne) {
    const auto out = fix_module(temp_folder("hub") / "modeling_hub.py", kPrint);
    EXPECT_TRUE(out.fixed.ends_with(
              "        return x\n\n\ntry:\n"
              "    from ._graphmend_runtime import _graphmend_print\n"
              "except ImportError:  # not imported as a package: run as a script\n"
              "    from _graphmend_runtime import _graphmend_print\n"))
        << out.fixed;
    EXPECT_EQ(out.fixed.find(runtime::kMarker), std::string::npos) << "no inline block in the Module form";
}

TEST(RuntimeModule, ImportsOnlyTheNamesTheFileUsesSorted) {
    const auto out = fix_module(temp_folder("names") / "m.py", kPrint + kBranch);
    EXPECT_NE(out.fixed.find("from ._graphmend_runtime import _graphmend_if, _graphmend_print\n"), std::string::npos)
        << out.fixed;
    EXPECT_EQ(out.fixed.find("_graphmend_lazy"), std::string::npos);
}

TEST(RuntimeModule, SecondRunChangesNothing) {
    const fs::path root = package("again");
    const fs::path path = root / "models" / "m.py";
    const auto first = fix_module(path, kPrint + kBranch);
    ASSERT_TRUE(first.changed());
    const auto second = fix_module(path, first.fixed);
    EXPECT_FALSE(second.changed()) << second.fixed;
    const auto folder = fix_module(temp_folder("again-hub") / "m.py", kPrint + kBranch);
    EXPECT_FALSE(fix_module(temp_folder("again-hub") / "m.py", folder.fixed).changed());
}

TEST(RuntimeModule, LaterRunExtendsTheImportInPlace) {
    const fs::path path = temp_folder("later") / "m.py";
    const auto first = fix_module(path, kPrint);
    const auto second = fix_module(path, first.fixed + kBranch);
    ASSERT_TRUE(second.changed());
    EXPECT_EQ(count(second.fixed, "_graphmend_runtime import"), 2u) << second.fixed;  // relative + absolute
    // Where the first run put it, above the code added since.
    const std::string import = "\n\n\ntry:\n    from ._graphmend_runtime import _graphmend_if, _graphmend_print\n"
                               "except ImportError:  # not imported as a package: run as a script\n"
                               "    from _graphmend_runtime import _graphmend_if, _graphmend_print\n\n\nclass Other";
    EXPECT_NE(second.fixed.find(import), std::string::npos) << second.fixed;
}

TEST(RuntimeModule, FixedPointPassExtendsTheImportOfTheFirstPass) {
    // The inner `if` is rewritten in the first pass (_graphmend_if), the outer one, whose test
    // is an `and` of tensors, in the second (_graphmend_and).
    const std::string text =
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        h = x * 2\n"
        "        if x.sum() > 0 and x.min() < 1:\n"
        "            if h.max() > 2:\n                h = h * 3\n            else:\n                h = h - 1\n"
        "            h = h + 1\n"
        "        return h\n";
    const fs::path root = package("passes");
    const auto out = fix_module(root / "m.py", text);
    ASSERT_EQ(std::count(out.applied.begin(), out.applied.end(), true), 2) << out.fixed;
    EXPECT_EQ(count(out.fixed, "_graphmend_runtime import"), 1u) << out.fixed;
    EXPECT_TRUE(out.fixed.ends_with("from ._graphmend_runtime import _graphmend_and, _graphmend_if  # noqa: E402\n"))
        << out.fixed;
    EXPECT_FALSE(fix_module(root / "m.py", out.fixed).changed());
}

TEST(RuntimeModule, ImportGoesBeforeTheMainGuard) {
    const std::string guard = "\n\nif __name__ == \"__main__\":\n    Model()(torch.ones(2))\n";
    const auto out = fix_module(temp_folder("guard") / "m.py", kPrint + guard);
    EXPECT_TRUE(out.fixed.ends_with("    from _graphmend_runtime import _graphmend_print\n" + guard.substr(1)))
        << out.fixed;
    // The lines above keep their numbers.
    EXPECT_EQ(syntax::count_newlines(out.fixed.substr(0, out.fixed.find("try:\n"))),
              syntax::count_newlines(kPrint) + 2);
}

// A rewritten function called while the module is imported (`TABLE = check(...)`) needs the
// helpers bound before that statement: the import (or the inline block) goes there.
TEST(RuntimeModule, ImportGoesBeforeModuleCodeThatRunsTheFilesFunctions) {
    const std::string source =
        "import torch\n"
        "from torch import nn\n"
        "\n"
        "\n"
        "def check(t):\n"
        "    print(\"checked\", t.sum())\n"
        "    return t\n"
        "\n"
        "\n"
        "class Model(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return check(x)\n"
        "\n"
        "\n"
        "LIMIT = 3\n"
        "TABLE = check(torch.ones(3))\n";
    const auto out = fix_module(temp_folder("import_time") / "m.py", source);
    const auto import_at = out.fixed.find("from _graphmend_runtime import _graphmend_print");
    ASSERT_NE(import_at, std::string::npos) << out.fixed;
    EXPECT_LT(out.fixed.find("LIMIT = 3"), import_at);
    EXPECT_LT(import_at, out.fixed.find("TABLE = check("));
    for (const std::string& body : {std::string("class C:\n    T = check(torch.ones(1))\n"),
                                    std::string("@check\ndef f():\n    pass\n"),
                                    std::string("def f(t=check(torch.ones(1))):\n    return t\n")}) {
        const std::string text = "import torch\n\n\ndef check(t):\n    print(t.sum())\n    return t\n\n\n" + body;
        const syntax::Tree tree = syntax::Tree::parse(text);
        const auto print = static_cast<std::uint32_t>(text.find("print"));
        const auto place = runtime_module::runtime_place(tree.root(), {{print, print + 5}});
        ASSERT_TRUE(place.has_value()) << body;
        EXPECT_EQ(*place, text.find(body)) << body;
    }
    // Calls made later (in a function, a lambda): the end, as before.
    const std::string later = "import torch\n\n\ndef check(t):\n    print(t.sum())\n    return t\n\n\n"
                              "def g():\n    return check(torch.ones(1))\n\n\nh = lambda: check(1)\nZ = torch.ones(2)\n";
    const auto print = static_cast<std::uint32_t>(later.find("print"));
    EXPECT_FALSE(runtime_module::runtime_place(syntax::Tree::parse(later).root(), {{print, print + 5}}).has_value());
    // A decorator or a class the module calls at import time whose run reaches nothing rewritten.
    const std::string other = "import torch\n\n\ndef check(t):\n    print(t.sum())\n    return t\n\n\n"
                              "def deco(f):\n    def wrapper(x):\n        return check(f(x))\n    return wrapper\n\n\n"
                              "class Acts:\n    def __init__(self):\n        self.n = 1\n\n\n"
                              "@deco\ndef g(x):\n    return x\n\n\nACTS = Acts()\n";
    const auto at = static_cast<std::uint32_t>(other.find("print"));
    EXPECT_FALSE(runtime_module::runtime_place(syntax::Tree::parse(other).root(), {{at, at + 5}}).has_value());
}

TEST(RuntimeModule, PackageScriptWithoutRelativeImportsKeepsTheInlineBlock) {
    const fs::path root = package("script");
    const std::string guard = "\n\nif __name__ == \"__main__\":\n    Model()(torch.ones(2))\n";
    const auto script = fix_module(root / "train.py", kPrint + guard);
    EXPECT_NE(script.fixed.find(runtime::kMarker), std::string::npos);
    EXPECT_FALSE(script.imports_runtime);
    // With a relative import of its own it cannot run by path anyway: it imports the module.
    const auto module = fix_module(root / "run.py", "from . import models\n" + kPrint + guard);
    EXPECT_TRUE(module.imports_runtime);
    EXPECT_EQ(module.fixed.find(runtime::kMarker), std::string::npos);
}

TEST(RuntimeModule, FileWithAnInlineBlockKeepsIt) {
    const fs::path path = temp_folder("inline") / "m.py";
    const auto inline_fixed = fix_files({{path.string(), kPrint}}, FixOptions{}).at(0);
    ASSERT_NE(inline_fixed.fixed.find(runtime::kMarker), std::string::npos);
    const auto out = fix_module(path, inline_fixed.fixed + kBranch);
    EXPECT_EQ(out.fixed.find("_graphmend_runtime import"), std::string::npos) << out.fixed;
    EXPECT_FALSE(out.imports_runtime);
}

TEST(RuntimeModule, CrlfFileGetsACrlfImport) {
    std::string crlf;
    for (char c : kPrint + kBranch) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    const auto out = fix_module(temp_folder("crlf") / "m.py", crlf);
    ASSERT_TRUE(out.changed());
    EXPECT_TRUE(out.fixed.ends_with("\r\n    from _graphmend_runtime import _graphmend_if, _graphmend_print\r\n"));
    for (std::size_t i = 0; i < out.fixed.size(); ++i) {
        if (out.fixed[i] == '\n') {
            ASSERT_TRUE(i > 0 && out.fixed[i - 1] == '\r') << "bare LF at byte " << i;
        }
    }
    EXPECT_FALSE(fix_module(temp_folder("crlf") / "m.py", out.fixed).changed());
}

TEST(RuntimeModule, TryFormUsesTheFilesIndentation) {
    std::string tabs;
    for (std::size_t i = 0; i < kPrint.size();) {
        const bool four = kPrint.compare(i, 4, "    ") == 0;
        tabs += four ? '\t' : kPrint[i];
        i += four ? 4 : 1;
    }
    const auto out = fix_module(temp_folder("tabs") / "m.py", tabs);
    EXPECT_TRUE(out.fixed.ends_with("try:\n\tfrom ._graphmend_runtime import _graphmend_print\n"
                                    "except ImportError:  # not imported as a package: run as a script\n"
                                    "\tfrom _graphmend_runtime import _graphmend_print\n"))
        << out.fixed;
}

TEST(RuntimeModule, FileImportingTheModuleKeepsItWhenTheInlineFormIsAsked) {
    const fs::path path = package("keeps") / "m.py";
    const auto first = fix_module(path, kPrint);
    const auto out = fix_files({{path.string(), first.fixed + kBranch, nullptr, RuntimeForm::Inline}}, FixOptions{}).at(0);
    ASSERT_TRUE(out.changed());
    EXPECT_EQ(out.fixed.find(runtime::kMarker), std::string::npos) << out.fixed;
    EXPECT_NE(out.fixed.find("\nfrom ._graphmend_runtime import _graphmend_if, _graphmend_print  # noqa: E402\n"),
              std::string::npos)
        << out.fixed;
    EXPECT_TRUE(out.imports_runtime);
}

TEST(RuntimeModule, InlineFormIsUnchanged) {
    const fs::path path = temp_folder("inline-form") / "m.py";
    const auto out = fix_files({{path.string(), kPrint, nullptr, RuntimeForm::Inline}}, FixOptions{}).at(0);
    EXPECT_NE(out.fixed.find(runtime::kMarker), std::string::npos);
    EXPECT_EQ(out.fixed.find("_graphmend_runtime import"), std::string::npos);
    EXPECT_FALSE(out.imports_runtime);
}

TEST(RuntimeModule, TextHoldsEveryBlockAndParses) {
    const std::string& text = runtime_module::text();
    EXPECT_TRUE(runtime_module::written_by_graphmend(text));
    EXPECT_TRUE(text.starts_with(std::string(runtime_module::kHeader) + GRAPHMEND_VERSION + " "));
    for (const auto& block : runtime::kBlocks) {
        EXPECT_NE(text.find(std::string(runtime::kMarker) + std::string(block.stem)), std::string::npos);
    }
    EXPECT_FALSE(syntax::Tree::parse(text).error().has_value());
    for (const char* name : {"_graphmend_print", "_graphmend_log", "_graphmend_warn", "_graphmend_when",
                             "_graphmend_check", "_graphmend_lazy", "_graphmend_args", "_graphmend_if",
                             "_graphmend_and", "_graphmend_or", "_graphmend_not", "_graphmend_scalar"}) {
        EXPECT_TRUE(runtime_module::exports().contains(name)) << name;
    }
    EXPECT_FALSE(runtime_module::written_by_graphmend("def helper():\n    pass\n"));
}

// A project with one rewritten file, in the Module form.
std::vector<FileOutcome> rewritten_project(const fs::path& folder) {
    return fix_files({{(folder / "m.py").string(), kPrint, nullptr, RuntimeForm::Module},
                      {(folder / "n.py").string(), kPrint + kBranch, nullptr, RuntimeForm::Inline}},
                     FixOptions{});
}

TEST(RuntimePlan, AbsentModuleIsPlannedNew) {
    const fs::path folder = temp_folder("plan-new");
    auto outcomes = rewritten_project(folder);
    const auto modules = runtime_module::plan(outcomes);
    ASSERT_EQ(modules.size(), 1u);
    EXPECT_EQ(modules[0].path, (folder / "_graphmend_runtime.py").generic_string());
    EXPECT_FALSE(modules[0].existing.has_value());
    EXPECT_TRUE(modules[0].changed());
    EXPECT_EQ(modules[0].importers, 1u);
    EXPECT_TRUE(outcomes[0].changed() && outcomes[1].changed());
}

TEST(RuntimePlan, ModuleOfAnotherVersionIsRewrittenAndTheSameIsNot) {
    const fs::path folder = temp_folder("plan-old");
    write(folder / "_graphmend_runtime.py", std::string(runtime_module::kHeader) + "0.0.1\n");
    auto outcomes = rewritten_project(folder);
    auto modules = runtime_module::plan(outcomes);
    ASSERT_EQ(modules.size(), 1u);
    EXPECT_TRUE(modules[0].changed());
    runtime_module::write(modules, outcomes);
    EXPECT_EQ(syntax::read_file((folder / "_graphmend_runtime.py").string()), runtime_module::text());
    auto again = rewritten_project(folder);
    EXPECT_FALSE(runtime_module::plan(again).at(0).changed());
}

TEST(RuntimePlan, ForeignModuleRefusesTheWholeProject) {
    const fs::path folder = temp_folder("plan-foreign");
    write(folder / "_graphmend_runtime.py", "# my own helpers\n");
    auto outcomes = rewritten_project(folder);
    auto modules = runtime_module::plan(outcomes);
    ASSERT_EQ(modules.size(), 1u);
    ASSERT_TRUE(modules[0].error.has_value());
    EXPECT_FALSE(modules[0].changed());
    for (const auto& o : outcomes) {  // the inline file of the project too
        EXPECT_FALSE(o.changed()) << o.path;
        ASSERT_TRUE(o.error.has_value()) << o.path;
        EXPECT_NE(o.error->find("not written by graphmend"), std::string::npos) << *o.error;
        EXPECT_EQ(std::count(o.applied.begin(), o.applied.end(), true), 0);
    }
    runtime_module::write(modules, outcomes);
    EXPECT_EQ(syntax::read_file((folder / "_graphmend_runtime.py").string()), "# my own helpers\n");
}

TEST(RuntimePlan, FolderWalkNeverCollectsTheModule) {
    const fs::path folder = temp_folder("walk");
    write(folder / "_graphmend_runtime.py", runtime_module::text());
    write(folder / "m.py", kPrint);
    const auto files = output::collect_python_files({folder.string()});
    ASSERT_EQ(files.size(), 1u);
    EXPECT_TRUE(files[0].ends_with("m.py"));
}

}  // namespace

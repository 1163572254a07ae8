// Projects and the compiled scope (analysis.hpp): where a file's project is, imports that
// never cross from one Hub checkout to another, results that do not depend on the order of
// the inputs, torch.compile entry points besides forward, disable-decorated functions, and
// nn.Module bases outside the inputs (the shipped transformers table).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <unistd.h>

#include "graphmend/analysis.hpp"
#include "graphmend/fixer.hpp"
#include "graphmend/output.hpp"
#include "temp_tree.hpp"

namespace fs = std::filesystem;
using namespace graphmend;

namespace {

const fs::path kRoot = GRAPHMEND_SOURCE_DIR;
const fs::path kCheckouts = kRoot / "tests/checkouts";

fs::path temp_folder(const std::string& name) { return named_temp_folder("project-test", name); }

void write(const fs::path& path, const std::string& text) { write_file(path, text); }

std::vector<InputFile> read_inputs(const std::vector<std::string>& paths) {
    std::vector<InputFile> inputs;
    for (const auto& f : output::collect_python_files(paths)) inputs.push_back({f, syntax::read_file(f)});
    return inputs;
}

// path -> "line:col CODE status" of every site, for comparing runs.
using Sites = std::map<std::string, std::vector<std::string>>;

Sites sites_of(const std::vector<FileOutcome>& outcomes) {
    Sites out;
    for (const auto& o : outcomes) {
        auto& list = out[fs::weakly_canonical(o.path).string()];
        for (std::size_t s = 0; s < o.sites.size(); ++s) {
            const auto& site = o.sites[s];
            const auto where = syntax::SourceText(o.original).position(site.begin);
            list.push_back(std::to_string(where.line) + ":" + std::to_string(where.col) + " " + site.code + " " +
                           (o.applied[s] ? "fixed" : "refused"));
        }
    }
    return out;
}

std::size_t count(const Sites& sites, const std::string& status) {
    std::size_t n = 0;
    for (const auto& [path, list] : sites) {
        for (const auto& s : list) n += s.ends_with(status) ? 1 : 0;
    }
    return n;
}

// The project built from files given as (path, text); paths need not exist. Pruned: the
// files come as the driver gives them (an index of names and the text), and the project
// loads what its analysis reads.
analysis::Project project_of(const std::vector<std::pair<std::string, std::string>>& files, bool pruned = false) {
    std::vector<analysis::SourceFile> parsed;
    for (const auto& [path, text] : files) {
        syntax::Tree tree = syntax::Tree::parse(text);
        analysis::ModulePlace place = analysis::place_module(path);
        auto index = analysis::index_module(tree.root());
        if (pruned) {
            index.forget_nodes();
            tree = syntax::Tree::parse(std::string());
        }
        parsed.push_back({path, std::move(place.module_name), place.is_package_init, std::move(tree), std::move(index),
                          std::move(place.project), place.isolated, pruned, pruned ? text : std::string()});
    }
    return analysis::Project(std::move(parsed));
}

// The names of the in-scope functions of one file, sorted.
std::set<std::string> scope_names(const analysis::Project& project, std::size_t file) {
    std::set<std::string> names;
    for (const auto& fn : project.scope_of(file)) names.emplace(fn.field("name").text());
    return names;
}

// --- where projects are -----------------------------------------------------------------------

TEST(ProjectRoots, HubCheckoutIsAFolderProjectNamedAfterItsFolder) {
    const auto place = analysis::place_module((kCheckouts / "phi-a/utils_phi.py").string());
    EXPECT_EQ(place.module_name, "phi-a.utils_phi");
    EXPECT_TRUE(place.isolated);
    EXPECT_EQ(place.project, (kCheckouts / "phi-a").lexically_normal().string());
    EXPECT_FALSE(place.is_package_init);
}

TEST(ProjectRoots, PackageIsTheOutermostInitChain) {
    const fs::path pkg = kRoot / "tests/fixtures/deferred-side-effect/package";
    const auto place = analysis::place_module((pkg / "models/modeling.py").string());
    EXPECT_EQ(place.module_name, "package.models.modeling");
    EXPECT_FALSE(place.isolated);
    EXPECT_EQ(place.project, pkg.lexically_normal().string());
    const auto init = analysis::place_module((pkg / "models/__init__.py").string());
    EXPECT_EQ(init.module_name, "package.models");
    EXPECT_TRUE(init.is_package_init);
}

TEST(ProjectRoots, ModuleNameDoesNotDependOnTheFolderGiven) {
    const fs::path cwd = fs::current_path();
    fs::current_path(kCheckouts / "alpha");
    const auto from_inside = analysis::place_module("modeling_alpha.py");
    fs::current_path(kRoot);
    const auto from_root = analysis::place_module("tests/checkouts/alpha/modeling_alpha.py");
    fs::current_path(cwd);
    EXPECT_EQ(from_inside.module_name, "alpha.modeling_alpha");
    EXPECT_EQ(from_root.module_name, from_inside.module_name);
    EXPECT_EQ(from_root.project, from_inside.project);
}

// --- tests/checkouts/README.md ----------------------------------------------------------------

Sites run_checkouts(const std::vector<std::string>& folders) {
    std::vector<std::string> paths;
    for (const auto& f : folders) paths.push_back((kCheckouts / f).string());
    return sites_of(fix_files(read_inputs(paths), FixOptions{}));
}

TEST(Checkouts, AlphaHasFourSitesAllFixed) {
    const Sites sites = run_checkouts({"alpha"});
    const auto& model = sites.at(fs::weakly_canonical(kCheckouts / "alpha/modeling_alpha.py").string());
    EXPECT_EQ(model, (std::vector<std::string>{"19:9 GM101 fixed", "20:9 GM101 fixed", "41:9 GM201 fixed",
                                               "43:9 GM101 fixed"}));
    EXPECT_EQ(count(sites, "fixed"), 4u);
    EXPECT_EQ(count(sites, "refused"), 0u);
}

TEST(Checkouts, PhiAHasTwoSitesFixed) {
    const Sites sites = run_checkouts({"phi-a"});
    EXPECT_EQ(sites.at(fs::weakly_canonical(kCheckouts / "phi-a/modeling_phi.py").string()),
              std::vector<std::string>{"13:9 GM101 fixed"});
    EXPECT_EQ(sites.at(fs::weakly_canonical(kCheckouts / "phi-a/utils_phi.py").string()),
              std::vector<std::string>{"9:5 GM101 fixed"});
    EXPECT_EQ(count(sites, "fixed") + count(sites, "refused"), 2u);
}

TEST(Checkouts, PhiBHasNoSites) {
    const Sites sites = run_checkouts({"phi-b"});
    EXPECT_EQ(count(sites, "fixed") + count(sites, "refused"), 0u);
}

TEST(Checkouts, AllAtOnceInAnyOrderMatchesTheSeparateRuns) {
    Sites separate;
    for (const char* f : {"alpha", "delta", "phi-a", "phi-b"}) separate.merge(run_checkouts({f}));
    ASSERT_EQ(count(separate, "fixed"), 8u);
    std::vector<std::string> order = {"alpha", "delta", "phi-a", "phi-b"};
    do {
        EXPECT_EQ(run_checkouts(order), separate) << order[0] << " " << order[1] << " " << order[2] << " " << order[3];
    } while (std::next_permutation(order.begin(), order.end()));
    EXPECT_EQ(sites_of(fix_files(read_inputs({kCheckouts.string()}), FixOptions{})), separate);
}

// The CLI fixes a batch one independent group at a time (src/app/session.cpp): each checkout is a group,
// and fixing the groups one by one gives every file the sites and bytes of one run over all.
// (delta holds a package, which makes a batch one group: the Hub checkouts are given.)
TEST(Checkouts, EachCheckoutIsAGroupAndTheGroupsGiveTheBatchsOutcomes) {
    const auto inputs = read_inputs({(kCheckouts / "alpha").string(), (kCheckouts / "phi-a").string(),
                                     (kCheckouts / "phi-b").string()});
    std::vector<std::string> paths;
    for (const auto& in : inputs) paths.push_back(in.path);
    const auto groups = independent_groups(paths);
    ASSERT_EQ(groups.size(), 3u);  // alpha, phi-a, phi-b
    std::vector<std::size_t> order;
    for (const auto& g : groups) order.insert(order.end(), g.begin(), g.end());
    std::vector<std::size_t> expected(paths.size());
    for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = i;
    EXPECT_EQ(order, expected);  // every input once, in order
    const auto all = fix_files(inputs, FixOptions{});
    std::vector<FileOutcome> by_group;
    for (const auto& g : groups) {
        std::vector<InputFile> part;
        for (std::size_t i : g) part.push_back(inputs[i]);
        for (auto& o : fix_files(part, FixOptions{})) by_group.push_back(std::move(o));
    }
    ASSERT_EQ(by_group.size(), all.size());
    EXPECT_EQ(sites_of(by_group), sites_of(all));
    for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(by_group[i].fixed, all[i].fixed) << all[i].path;
}

// A name in another folder project is another thing: the scans of a site's mentions (GM503's
// call sites, GM501's module builds, defaults no construction passes) look only at files that
// can name the site's file. Before, `reference_points` mentioned in a sibling checkout
// refused GM503's fix in the batch but not in a run of the checkout alone.
TEST(Checkouts, ASiblingCheckoutMentioningTheSameNameChangesNoSite) {
    const TempTree tree;
    tree.write("a/modeling_a.py", syntax::read_file((kRoot / "tests/fixtures/host-int-values/levels.py").string()));
    tree.write("b/modeling_b.py", "def hook(obj):\n    return obj.reference_points\n");
    const std::string a = (tree.root / "a").string();
    const Sites alone = sites_of(fix_files(read_inputs({a}), FixOptions{}));
    ASSERT_EQ(count(alone, "fixed"), 5u);
    Sites both = sites_of(fix_files(read_inputs({tree.root.string()}), FixOptions{}));
    both.erase(fs::weakly_canonical(tree.root / "b/modeling_b.py").string());
    EXPECT_EQ(both, alone);
}

// A package among the inputs may be imported by every folder project, and a project whose
// files are not consecutive would be fixed in two parts: then the batch is one group.
TEST(Checkouts, APackageOrASplitProjectMakesOneGroup) {
    const TempTree tree;
    tree.write("a/m.py", "x = 1\n");
    tree.write("b/m.py", "x = 1\n");
    tree.write("pkg/__init__.py", "");
    tree.write("pkg/k.py", "x = 1\n");
    const std::string a = (tree.root / "a/m.py").string();
    const std::string a2 = (tree.root / "a/n.py").string();
    const std::string b = (tree.root / "b/m.py").string();
    const std::string k = (tree.root / "pkg/k.py").string();
    EXPECT_EQ(independent_groups({a, a2, b}), (std::vector<std::vector<std::size_t>>{{0, 1}, {2}}));
    EXPECT_EQ(independent_groups({a, b, k}), (std::vector<std::vector<std::size_t>>{{0, 1, 2}}));
    EXPECT_EQ(independent_groups({a, b, a2}), (std::vector<std::vector<std::size_t>>{{0, 1, 2}}));
    EXPECT_TRUE(independent_groups({}).empty());
}

TEST(Checkouts, FileOrderInsideTheInputsDoesNotMatter) {
    auto inputs = read_inputs({kCheckouts.string()});
    const Sites forward = sites_of(fix_files(inputs, FixOptions{}));
    std::reverse(inputs.begin(), inputs.end());
    EXPECT_EQ(sites_of(fix_files(inputs, FixOptions{})), forward);
    std::rotate(inputs.begin(), inputs.begin() + 3, inputs.end());
    EXPECT_EQ(sites_of(fix_files(inputs, FixOptions{})), forward);
}

TEST(Checkouts, ReportPerCheckoutAndInTotal) {
    const fs::path cwd = fs::current_path();
    fs::current_path(kCheckouts);
    auto inputs = read_inputs({"phi-b", "alpha", "phi-a"});
    fs::current_path(cwd);
    const auto outcomes = fix_files(inputs, FixOptions{});
    EXPECT_EQ(output::project_report(output::Results{outcomes, output::Mode::Fix, {}, {}, {}}),
              "project alpha: 2 files, 4 sites found, 1 fixed, 3 fixed-when, 0 refused\n"
              "project phi-a: 3 files, 2 sites found, 0 fixed, 2 fixed-when, 0 refused\n"
              "project phi-b: 3 files, 0 sites found, 0 fixed, 0 refused\n");
    const auto json = output::json_report(outcomes, output::Mode::Fix);
    ASSERT_EQ(json["projects"].size(), 3u);
    EXPECT_EQ(json["projects"][1]["project"], "phi-a");
    EXPECT_EQ(json["projects"][1]["fixed-when"], 2);  // prints of tensors: deferred while none requires grad
    EXPECT_EQ(json["totals"]["fixed"], 1);
    EXPECT_EQ(json["totals"]["fixed-when"], 5);
    const auto alpha = fix_files(read_inputs({(kCheckouts / "alpha").string()}), FixOptions{});
    EXPECT_EQ(output::project_report(output::Results{alpha, output::Mode::Fix, {}, {}, {}}), "");
    // check writes nothing: the same sites are fixable there.
    EXPECT_EQ(output::project_report(output::Results{outcomes, output::Mode::Check, {}, {}, {}}),
              "project alpha: 2 files, 4 sites found, 1 fixable, 3 fixable-when, 0 refused\n"
              "project phi-a: 3 files, 2 sites found, 0 fixable, 2 fixable-when, 0 refused\n"
              "project phi-b: 3 files, 0 sites found, 0 fixable, 0 refused\n");
    const auto checked = output::json_report(outcomes, output::Mode::Check)["totals"];
    EXPECT_EQ(checked["fixable"], 1);
    EXPECT_EQ(checked["fixable-when"], 5);
    EXPECT_EQ(checked["fixed"], 0);
    EXPECT_EQ(checked["fixed-when"], 0);
}

// --- isolation between folder projects ----------------------------------------------------------

// The files under `root`, in path order and reversed, have no site.
void expect_no_sites_in_either_order(const fs::path& root) {
    for (const bool reversed : {false, true}) {
        auto inputs = read_inputs({root.string()});
        if (reversed) std::reverse(inputs.begin(), inputs.end());
        const Sites sites = sites_of(fix_files(inputs, FixOptions{}));
        EXPECT_EQ(count(sites, "fixed") + count(sites, "refused"), 0u) << root << " reversed=" << reversed;
    }
}

TEST(Isolation, RelativeImportNeverResolvesInASiblingCheckout) {
    const fs::path root = temp_folder("siblings");
    // a/ imports .helpers, which it lacks; b/helpers.py has one: it must not be used.
    write(root / "a/modeling_a.py",
          "from torch import nn\nfrom .helpers import dbg\n\nclass A(nn.Module):\n    def forward(self, x):\n"
          "        dbg(x)\n        return x\n");
    write(root / "b/helpers.py", "def dbg(x):\n    print('b', x.sum())\n");
    write(root / "b/modeling_b.py", "class B:\n    def forward(self, x):\n        return x\n");
    expect_no_sites_in_either_order(root);
}

TEST(Isolation, ScriptsImportTheirOwnSiblingsByBareName) {
    const fs::path root = temp_folder("scripts");
    const std::string helper_print = "def dbg(x):\n    print('here', x.sum())\n";
    write(root / "eins/helpers.py", helper_print);  // same name, first in path order, imported by nothing
    write(root / "zwei/helpers.py", helper_print);
    write(root / "zwei/model.py",
          "from torch import nn\nfrom helpers import dbg\n\nclass M(nn.Module):\n    def forward(self, x):\n"
          "        dbg(x)\n        return x\n");
    const Sites sites = sites_of(fix_files(read_inputs({root.string()}), FixOptions{}));
    EXPECT_EQ(sites.at(fs::weakly_canonical(root / "zwei/helpers.py").string()), std::vector<std::string>{"2:5 GM101 fixed"});
    EXPECT_TRUE(sites.at(fs::weakly_canonical(root / "eins/helpers.py").string()).empty());
}

TEST(Isolation, CheckoutsWithTheSameFolderNameStayApart) {
    const fs::path root = temp_folder("same-name");
    // a/ckpt's Base is an nn.Module; b/ckpt's is not, and b/ckpt's model must use its own.
    write(root / "a/ckpt/utils.py", "from torch import nn\n\nclass Base(nn.Module):\n    pass\n");
    write(root / "b/ckpt/utils.py", "class Base:\n    pass\n");
    write(root / "b/ckpt/modeling.py",
          "from .utils import Base\n\nclass M(Base):\n    def forward(self, x):\n        print(x.sum())\n"
          "        return x\n");
    expect_no_sites_in_either_order(root);
}

TEST(Isolation, PackagesStayVisibleFromCheckouts) {
    const fs::path root = temp_folder("package-and-checkout");
    write(root / "lib/mylib/__init__.py", "");
    write(root / "lib/mylib/base.py", "from torch import nn\n\nclass Base(nn.Module):\n    pass\n");
    write(root / "checkout/modeling_c.py",
          "from mylib.base import Base\n\nclass C(Base):\n    def forward(self, x):\n        print(x.sum())\n"
          "        return x\n");
    const Sites sites = sites_of(fix_files(read_inputs({(root / "lib").string(), (root / "checkout").string()}), FixOptions{}));
    EXPECT_EQ(sites.at(fs::weakly_canonical(root / "checkout/modeling_c.py").string()),
              std::vector<std::string>{"5:9 GM101 fixed"});
}

// torch_geometric's form: `from pkg.nn import MessagePassing`, where pkg/nn/__init__.py holds
// `from .conv import *` and conv/__init__.py imports the class: a star re-export resolves.
TEST(Isolation, StarReExportsResolveToTheClass) {
    const fs::path root = temp_folder("star-reexport");
    write(root / "pkg/__init__.py", "");
    write(root / "pkg/nn/__init__.py", "from .conv import *  # noqa\n");
    write(root / "pkg/nn/conv/__init__.py", "from .base import MessagePassing\n");
    write(root / "pkg/nn/conv/base.py", "from torch import nn\n\nclass MessagePassing(nn.Module):\n    pass\n");
    write(root / "pkg/models/visnet.py",
          "from pkg.nn import MessagePassing\n\nclass Embedding(MessagePassing):\n    def forward(self, x):\n"
          "        print(x.sum())\n        return x\n");
    write(root / "pkg/models/star.py",
          "from pkg.nn import *\n\nclass Embedding(MessagePassing):\n    def forward(self, x):\n"
          "        print(x.sum())\n        return x\n");
    const Sites sites = sites_of(fix_files(read_inputs({(root / "pkg").string()}), FixOptions{}));
    EXPECT_EQ(sites.at(fs::weakly_canonical(root / "pkg/models/visnet.py").string()),
              std::vector<std::string>{"5:9 GM101 fixed"});
    EXPECT_EQ(sites.at(fs::weakly_canonical(root / "pkg/models/star.py").string()),
              std::vector<std::string>{"5:9 GM101 fixed"});
}

// --- torch.compile entry points and disabled functions ---------------------------------------------

const std::string kCompiled = R"(import torch
from torch import compile as tc


@torch.compile
def decorated(x):
    return x


@torch.compile(dynamic=False)
def decorated_call(x):
    return helper_of_decorated(x)


def helper_of_decorated(x):
    return x


@tc
def decorated_alias(x):
    return x


@torch.compiler.compile(fullgraph=True)
def decorated_compiler_api(x):
    return x


@torch._dynamo.optimize("eager")
def decorated_optimize(x):
    return x


def passed(x):
    return x


def passed_in_function(x):
    return x


def passed_to_factory(x):
    return x


compiled = torch.compile(passed, fullgraph=True)


def main():
    def nested(x):
        return x

    a = torch.compile(nested)
    b = torch.compile(model=passed_in_function)
    c = torch.compile(dynamic=True)(passed_to_factory)
    return a, b, c


class Trainer:
    def step(self, x):
        return self.inner(x)

    def inner(self, x):
        return x

    def other(self, x):
        return x

    def build(self):
        return torch.compile(self.step)


class Static:
    def run(self, x):
        return x


static_compiled = torch.compile(Static.run)


def never_compiled(x):
    return x


@torch.compiler.disable
def disabled(x):
    return x


@torch.compiler.set_stance("force_eager")
def stance_only(x):
    return x
)";

TEST(CompiledScope, DecoratedAndPassedFunctionsAreInScope) {
    const auto project = project_of({{"/nonexistent-graphmend/compiled/model.py", kCompiled}});
    EXPECT_EQ(scope_names(project, 0),
              (std::set<std::string>{"decorated", "decorated_call", "helper_of_decorated", "decorated_alias",
                                     "decorated_compiler_api", "decorated_optimize", "passed", "passed_in_function",
                                     "passed_to_factory", "nested", "step", "inner", "run"}));
}

TEST(CompiledScope, CompileCallInAnotherFileOfTheCheckout) {
    const auto project = project_of({
        {"/nonexistent-graphmend/ck/train.py",
         "import torch\nfrom .ops import fused\n\nstep = torch.compile(fused)\n"},
        {"/nonexistent-graphmend/ck/ops.py", "def fused(x):\n    return x\n\ndef unused(x):\n    return x\n"},
        {"/nonexistent-graphmend/other/ops.py", "def fused(x):\n    return x\n"},
    });
    EXPECT_EQ(scope_names(project, 1), std::set<std::string>{"fused"});
    EXPECT_TRUE(scope_names(project, 2).empty()) << "resolved into another checkout";
}

// --scope-root (SourceFile::scope_roots): `graphmend verify` tells the lines of the frames
// Dynamo traced; the innermost `def` holding each is an entry point, and the walk goes on into
// its calls. A line at module level or on a blank line adds nothing.
TEST(CompiledScope, LinesToldFromOutsideAreEntryPoints) {
    const std::string text =
        "import torch\n"                      // 1
        "\n"                                  // 2
        "def helper(x):\n"                    // 3
        "    return x\n"                      // 4
        "\n"                                  // 5
        "def solve(x):\n"                     // 6
        "    def inner(y):\n"                 // 7
        "        return y\n"                  // 8
        "    return helper(inner(x))\n"       // 9
        "\n"                                  // 10
        "class Scheduler:\n"                  // 11
        "    def step(self, t):\n"            // 12
        "        return self.scale(t)\n"      // 13
        "\n"                                  // 14
        "    def scale(self, t):\n"           // 15
        "        return t\n"                  // 16
        "\n"                                  // 17
        "def unused(x):\n"                    // 18
        "    return x\n";                     // 19
    for (const bool pruned : {false, true}) {
        for (const auto& [roots, expected] : std::vector<std::pair<std::vector<std::uint32_t>, std::set<std::string>>>{
                 {{}, {}},
                 {{9}, {"solve", "inner", "helper"}},
                 {{8}, {"inner"}},
                 {{13}, {"step", "scale"}},
                 {{1, 2, 10}, {}},
             }) {
            std::vector<analysis::SourceFile> parsed;
            syntax::Tree tree = syntax::Tree::parse(text);
            analysis::ModulePlace place = analysis::place_module("/nonexistent-graphmend/roots/solver.py");
            auto index = analysis::index_module(tree.root());
            if (pruned) {
                index.forget_nodes();
                tree = syntax::Tree::parse(std::string());
            }
            parsed.push_back({"/nonexistent-graphmend/roots/solver.py", std::move(place.module_name),
                              place.is_package_init, std::move(tree), std::move(index), std::move(place.project),
                              place.isolated, pruned, pruned ? text : std::string()});
            parsed.back().scope_roots = roots;
            const analysis::Project project(std::move(parsed));
            EXPECT_EQ(scope_names(project, 0), expected) << "roots " << roots.size() << " pruned " << pruned;
        }
    }
}

const std::string kDisabled = R"(import torch
from torch import nn


def traced_helper(x):
    return x


def only_from_disabled(x):
    return x


@torch.compiler.disable
def disabled(x):
    return only_from_disabled(x)


@torch._dynamo.disable
def dynamo_disabled(x):
    return x


@torch.compiler.disable(recursive=False)
def disabled_alone(x):
    return callee_of_disabled_alone(x)


def callee_of_disabled_alone(x):
    return x


@torch.compiler.allow_in_graph
def in_graph(x):
    return x


class M(nn.Module):
    def forward(self, x):
        x = traced_helper(x)
        x = disabled(x)
        x = dynamo_disabled(x)
        x = disabled_alone(x)
        x = in_graph(x)
        return self.mask(x)

    @torch.compiler.disable
    def mask(self, x):
        return x


class Skipped(nn.Module):
    @torch.compiler.disable
    def forward(self, x):
        return traced_helper(x)
)";

TEST(CompiledScope, DisabledFunctionsAreNotInScope) {
    const auto project = project_of({{"/nonexistent-graphmend/disabled/model.py", kDisabled}});
    EXPECT_EQ(scope_names(project, 0), (std::set<std::string>{"forward", "traced_helper", "callee_of_disabled_alone"}));
    // Exactly one forward (M's) is in scope.
    std::size_t forwards = 0;
    for (const auto& fn : project.scope_of(0)) forwards += fn.field("name").text() == "forward" ? 1 : 0;
    EXPECT_EQ(forwards, 1u);
}

TEST(CompiledScope, DisabledPrintIsLeftAlone) {
    const auto out = fix_files({{"/nonexistent-graphmend/disabled/print.py",
                                 "import torch\nfrom torch import nn\n\n@torch.compiler.disable\ndef log(x):\n"
                                 "    print(x.sum())\n\nclass M(nn.Module):\n    def forward(self, x):\n"
                                 "        log(x)\n        print(x.mean())\n        return x\n"}},
                               FixOptions{});
    ASSERT_EQ(out.at(0).sites.size(), 1u);
    EXPECT_EQ(syntax::SourceText(out[0].original).position(out[0].sites[0].begin).line, 11u);
}

// --- nn.Module bases outside the inputs ------------------------------------------------------------

TEST(InstalledBases, TableKnowsTransformersAndTorch) {
    for (const char* name : {"transformers.PreTrainedModel", "transformers.modeling_utils.PreTrainedModel",
                             "transformers.models.llama.modeling_llama.LlamaAttention",
                             "transformers.models.llama.LlamaDecoderLayer", "transformers.LlamaModel",
                             "transformers.models.t5.modeling_t5.T5PreTrainedModel",
                             "transformers.modeling_layers.GradientCheckpointingLayer",
                             "transformers.activations.GELUActivation", "transformers.pytorch_utils.Conv1D",
                             "torch.nn.Module", "torch.nn.modules.linear.Linear", "torch.fx.GraphModule"}) {
        EXPECT_TRUE(analysis::is_external_module_class(name)) << name;
    }
    for (const char* name : {"transformers.PretrainedConfig", "transformers.GenerationMixin",
                             "transformers.models.t5.configuration_t5.T5Config", "transformers.utils.logging",
                             "transformers.models.llama.modeling_llama.LlamaAttentionX",
                             "transformers.models.t5.modeling_t5.LlamaAttention", "torch.nn.functional.relu",
                             "PreTrainedModel", "mypkg.PreTrainedModel"}) {
        EXPECT_FALSE(analysis::is_external_module_class(name)) << name;
    }
}

TEST(InstalledBases, HubModelSubclassingPreTrainedModelIsAModule) {
    const auto project = project_of({{"/nonexistent-graphmend/hub/modeling_x.py",
                                      "from transformers import PreTrainedModel, PretrainedConfig\n"
                                      "from transformers.models.llama.modeling_llama import LlamaMLP\n\n"
                                      "class X(PreTrainedModel):\n    def forward(self, x):\n        return x\n\n"
                                      "class Mlp(LlamaMLP):\n    def forward(self, x):\n        return x\n\n"
                                      "class Cfg(PretrainedConfig):\n    def forward(self, x):\n        return x\n"}});
    EXPECT_TRUE(project.is_module_class(0, "X"));
    EXPECT_TRUE(project.is_module_class(0, "Mlp"));
    EXPECT_FALSE(project.is_module_class(0, "Cfg"));
}

TEST(InstalledBases, RelativeImportLeavingTheInputsResolvesThroughTheTable) {
    // A model folder of an installed-style transformers tree, given alone: its
    // `from ...modeling_utils import PreTrainedModel` leaves the inputs.
    const fs::path root = temp_folder("installed");
    write(root / "transformers/__init__.py", "");
    write(root / "transformers/models/__init__.py", "");
    write(root / "transformers/models/foo/__init__.py", "");
    const std::string model =
        "from ...modeling_utils import PreTrainedModel\nfrom ...activations import ACT2FN\n\n"
        "class FooPreTrainedModel(PreTrainedModel):\n    pass\n\nclass FooModel(FooPreTrainedModel):\n"
        "    def forward(self, x):\n        print(x.sum())\n        return x\n";
    write(root / "transformers/models/foo/modeling_foo.py", model);
    const auto out = fix_files(read_inputs({(root / "transformers/models/foo").string()}), FixOptions{});
    const auto it = std::find_if(out.begin(), out.end(), [](const auto& o) { return o.path.ends_with("modeling_foo.py"); });
    ASSERT_NE(it, out.end());
    ASSERT_EQ(it->sites.size(), 1u);
    EXPECT_TRUE(it->applied[0]);
}


// torch's own sources among the inputs: `nn.Module` still means torch's Module (issue 12: a tree
// that also held torch's package got 0 rewrites, its `nn.Module` resolving into that package,
// where `from .modules import *` hides the class).
TEST(InstalledBases, TorchSourcesAmongTheInputsChangeNothing) {
    const std::string model =
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        print(x.sum())\n        return torch.relu(x)\n";
    const fs::path alone = temp_folder("torch-alone");
    write(alone / "model.py", model);
    const fs::path with = temp_folder("torch-neighbour");
    write(with / "model.py", model);
    write(with / "torch/__init__.py", "from torch.nn import *\n");
    write(with / "torch/nn/__init__.py", "from .modules import *  # noqa: F403\n");
    write(with / "torch/nn/modules/__init__.py", "from .module import Module\n");
    write(with / "torch/nn/modules/module.py", "class Module:\n    def forward(self, *input):\n        raise NotImplementedError\n");
    const auto a = fix_files(read_inputs({alone.string()}), FixOptions{});
    const auto b = fix_files(read_inputs({with.string()}), FixOptions{});
    const auto model_of = [](const std::vector<FileOutcome>& out) {
        return *std::find_if(out.begin(), out.end(), [](const auto& o) { return o.path.ends_with("model.py"); });
    };
    ASSERT_EQ(model_of(a).sites.size(), 1u);
    EXPECT_TRUE(model_of(a).applied[0]);
    EXPECT_EQ(model_of(b).fixed, model_of(a).fixed);
}

// transformers' `is_torchdynamo_compiling` is known by what its module binds (no global torch,
// so Dynamo skips its frame), not by the name of the folder holding the package.
TEST(InstalledBases, TransformersCompileTestIsKnownInAFolderOfAnyName) {
    const std::string utils =
        "import importlib\n\ndef is_torchdynamo_compiling():\n    try:\n        import torch\n\n"
        "        return torch.compiler.is_compiling()\n    except Exception:\n        return False\n";
    const std::string wrapper_utils =
        "import torch\n\ndef is_torchdynamo_compiling():\n    return torch.compiler.is_compiling()\n";
    std::vector<std::size_t> fixed;
    for (const auto& [name, text] : {std::pair{"transformers", utils}, std::pair{"tf_copy", utils},
                                     std::pair{"tf_wrapper", wrapper_utils}}) {
        const fs::path root = temp_folder(std::string("gm202-") + name);
        write(root / name / "__init__.py", "");
        write(root / name / "utils/__init__.py", "from .import_utils import is_torchdynamo_compiling\n");
        write(root / name / "utils/import_utils.py", text);
        write(root / name / "models/__init__.py", "");
        std::string stack = syntax::read_file((kRoot / "tests/fixtures/compile-skipped-default/stacks.py").string());
        const std::string absolute = "from transformers.utils import is_torchdynamo_compiling";
        ASSERT_NE(stack.find(absolute), std::string::npos);
        stack.replace(stack.find(absolute), absolute.size(), "from ..utils import is_torchdynamo_compiling");
        write(root / name / "models/stack.py", stack);
        const auto out = fix_files(read_inputs({(root / name).string()}), FixOptions{});
        const auto it = std::find_if(out.begin(), out.end(), [](const auto& o) { return o.path.ends_with("stack.py"); });
        ASSERT_NE(it, out.end());
        std::size_t gm202 = 0;
        for (std::size_t i = 0; i < it->sites.size(); ++i) gm202 += it->sites[i].code == "GM202" && it->applied[i];
        fixed.push_back(gm202);
    }
    EXPECT_EQ(fixed[0], 2u);  // as in the fixture's own report
    EXPECT_EQ(fixed[1], fixed[0]);
    // A wrapper whose module binds torch: Dynamo traces it. Only the stack testing torch's own
    // is_compiling is fixed.
    EXPECT_EQ(fixed[2], 1u);
}

}  // namespace

namespace {

// A folder project where each way the analysis reaches a file is needed: the forward's file
// (an entry), a helper it calls (the scope), a class it names (mid.py, one step from the
// scope), that class's base (base.py, up the hierarchy: its __init__ makes `self.scale` a
// tensor, which makes the forward's test data-dependent), and files nothing reaches.
const std::vector<std::pair<std::string, std::string>> kReach{
    {"prune_reach/model.py",
     "import torch\n"
     "from .mid import Mid\n"
     "from .helpers import double\n"
     "\n"
     "\n"
     "class Model(Mid):\n"
     "    def forward(self, x):\n"
     "        if self.scale > 0:\n"
     "            x = x + 1\n"
     "        return double(x)\n"},
    {"prune_reach/mid.py", "from .base import Base\n\n\nclass Mid(Base):\n    pass\n"},
    {"prune_reach/base.py",
     "import torch\n"
     "from torch import nn\n"
     "\n"
     "\n"
     "class Base(nn.Module):\n"
     "    def __init__(self):\n"
     "        super().__init__()\n"
     "        self.scale = nn.Parameter(torch.ones(1))\n"},
    {"prune_reach/helpers.py", "def double(x):\n    return x * 2\n\n\ndef unused(y):\n    return y\n"},
    {"prune_reach/unrelated.py", "import json\n\n\ndef load(p):\n    return json.load(open(p))\n"},
    {"prune_reach/user.py", "from .model import Model\n\nMODEL = Model()\n"},
};

}  // namespace

TEST(Pruning, LoadsTheFilesTheAnalysisReadsAndNoOthers) {
    const analysis::Project project = project_of(kReach, true);
    std::map<std::string, bool> loaded;
    for (const auto& f : project.files()) loaded[f.path] = !f.pruned;
    EXPECT_TRUE(loaded["prune_reach/model.py"]);    // an entry
    EXPECT_TRUE(loaded["prune_reach/helpers.py"]);  // the scope
    EXPECT_TRUE(loaded["prune_reach/mid.py"]);      // named by the scope's file
    EXPECT_TRUE(loaded["prune_reach/base.py"]);     // a base of a loaded file's class
    EXPECT_FALSE(loaded["prune_reach/unrelated.py"]);
    EXPECT_FALSE(loaded["prune_reach/user.py"]);
    // A pruned file is still read by a scan for the mentions of a name.
    for (std::size_t f = 0; f < project.files().size(); ++f) {
        if (project.files()[f].path != "prune_reach/user.py") continue;
        EXPECT_TRUE(analysis::mentions(project.files()[f], "MODEL"));
        EXPECT_TRUE(analysis::mentions(project.files()[f], "Model"));
        EXPECT_FALSE(analysis::mentions(project.files()[f], "Mod"));  // a word, not a substring
        EXPECT_TRUE(project.tree_of(f).root().is("module"));
        EXPECT_EQ(project.tree_of(f).root().text(), kReach.back().second);
    }
}

TEST(Pruning, SitesAreThoseOfARunKeepingEveryTree) {
    std::vector<InputFile> inputs;
    for (const auto& [path, text] : kReach) inputs.push_back({path, text});
    FixOptions keep;
    keep.keep_trees = true;
    const auto every = fix_files(inputs, keep);
    const auto pruned = fix_files(inputs, FixOptions{});
    ASSERT_EQ(every.size(), pruned.size());
    std::size_t fixed = 0;
    for (std::size_t i = 0; i < every.size(); ++i) {
        EXPECT_EQ(pruned[i].fixed, every[i].fixed) << every[i].path;
        EXPECT_EQ(pruned[i].applied, every[i].applied) << every[i].path;
        ASSERT_EQ(pruned[i].sites.size(), every[i].sites.size()) << every[i].path;
        for (std::size_t s = 0; s < every[i].sites.size(); ++s) {
            EXPECT_EQ(pruned[i].sites[s].code, every[i].sites[s].code);
            EXPECT_EQ(pruned[i].sites[s].reason, every[i].sites[s].reason);
        }
        fixed += std::count(pruned[i].applied.begin(), pruned[i].applied.end(), true);
    }
    // The forward's test reads base.py's tensor attribute: a GM201 site, fixed.
    EXPECT_EQ(fixed, 1u);
}

// --- loggers imported from another module (issue 28) ---------------------------------------------

// A logger bound in another input module is a logger; one from a module outside the inputs is
// taken as one only when both names say so (loguru's `logger` is no logging.Logger).
TEST(ImportedLoggers, KindsByWhereTheNameComesFrom) {
    const std::string dir = "/nonexistent-graphmend/logs/";
    const auto project = project_of({
        {dir + "log_utils.py", "import logging\nlogger = logging.getLogger('x')\nLEVEL = 20\n"
                               "rebound = logging.getLogger('y')\nrebound = rebound.getChild('z')\n"},
        {dir + "model.py", "from .log_utils import logger\nfrom .log_utils import logger as log\n"
                           "from .log_utils import LEVEL\nfrom .log_utils import rebound as rebound_logger\n"
                           "from .helpers import logger as helper_logger\nfrom .log_helpers import logger as lh\n"
                           "from loguru import logger as loguru_logger\n"
                           "from transformers.utils.logging import logger as hf_logger\nfrom logging import root\n"
                           "from .helpers import table\n"},
        {dir + "star.py", "from .log_utils import *\n"},
        {dir + "own.py", "import logging\nfrom .log_utils import logger\nlogger = logging.getLogger('own')\n"},
    });
    const auto kind = [&](std::size_t file, const std::string& name) {
        return project.imported_logger(file, name).kind;
    };
    using K = analysis::ImportedLogger;
    EXPECT_EQ(kind(1, "logger"), K::Logger);
    EXPECT_EQ(kind(1, "log"), K::Logger);  // an alias: the runtime finds it by the name the module binds
    EXPECT_EQ(kind(2, "logger"), K::Logger);  // through the star import
    EXPECT_EQ(kind(1, "LEVEL"), K::None);
    EXPECT_EQ(kind(1, "rebound_logger"), K::Unknown);  // bound there by more than getLogger(...)
    EXPECT_EQ(kind(1, "helper_logger"), K::Unknown);   // helpers.py is not among the inputs and says nothing
    EXPECT_EQ(kind(1, "lh"), K::Assumed);              // log_helpers.py is not among the inputs, but says so
    EXPECT_EQ(kind(1, "loguru_logger"), K::Unknown);
    EXPECT_EQ(kind(1, "hf_logger"), K::Assumed);
    EXPECT_EQ(kind(1, "root"), K::Assumed);  // logging.root
    EXPECT_EQ(kind(1, "table"), K::None);
    EXPECT_EQ(kind(3, "logger"), K::None);  // bound in the module itself: ModuleIndex::loggers
    EXPECT_NE(project.imported_logger(1, "lh").detail.find("assumed a logging.Logger"), std::string::npos);
    EXPECT_NE(project.imported_logger(1, "logger").detail.find("logs.log_utils"), std::string::npos);
}

TEST(ImportedLoggers, LoggingCallOnAnImportedLoggerIsFixedAndAnUnknownOneRefused) {
    const std::string dir = "/nonexistent-graphmend/imported-logger/";
    const std::string model =
        "import torch\nfrom torch import nn\nfrom .log_utils import logger\nfrom loguru import logger as lg\n\n"
        "class M(nn.Module):\n    def forward(self, x):\n        x = x + 1\n        logger.info('shape %s', tuple(x.shape))\n"
        "        lg.info('shape {}', tuple(x.shape))\n        return x\n";
    const auto out = fix_files({{dir + "log_utils.py", "import logging\n\nlogger = logging.getLogger(__name__)\n"},
                                {dir + "model.py", model}},
                               FixOptions{});
    ASSERT_EQ(out.at(1).sites.size(), 2u);
    EXPECT_TRUE(out[1].applied[0]);
    EXPECT_EQ(out[1].sites[0].what, "logger.info(...)");
    EXPECT_NE(out[1].sites[0].detail.find("from .log_utils import logger"), std::string::npos);
    // `x + 1` is a tensor op before it: deferred, the message joins its graph (lone_effects.hpp).
    EXPECT_NE(out[1].fixed.find("_graphmend_log(\"logger\", \"info\", lambda: None, \"forward\", 'shape %s'"), std::string::npos);
    EXPECT_FALSE(out[1].applied[1]);
    EXPECT_NE(out[1].sites[1].reason.find("loguru"), std::string::npos);
    // A local of the same name is not the imported logger.
    const auto local = fix_files({{dir + "log_utils.py", "import logging\n\nlogger = logging.getLogger(__name__)\n"},
                                  {dir + "model.py", "from torch import nn\nfrom .log_utils import logger\n\n"
                                                     "class M(nn.Module):\n    def forward(self, x, logger):\n"
                                                     "        logger.info('x')\n        return x\n"}},
                                 FixOptions{});
    EXPECT_TRUE(local.at(1).sites.empty());
}

// tests/checkouts/README.md, delta: the logger of DeltaModel.forward is imported from log_utils.py;
// DeltaScheduler.step is compiled by sample.py (`torch.compile(scheduler.step)`), its class reached
// through the package's lazy `__getattr__`, and its `timestep: int` is a tensor by the caller's argument.
TEST(Checkouts, DeltaLoggerAndCompiledSchedulerStepAreFixed) {
    const Sites sites = run_checkouts({"delta"});
    EXPECT_EQ(sites.at(fs::weakly_canonical(kCheckouts / "delta/delta/modeling_delta.py").string()),
              std::vector<std::string>{"14:9 GM101 fixed"});
    EXPECT_EQ(sites.at(fs::weakly_canonical(kCheckouts / "delta/delta/scheduling_delta.py").string()),
              std::vector<std::string>{"16:22 GM201 fixed"});
    EXPECT_EQ(count(sites, "fixed") + count(sites, "refused"), 2u);
}

// --- bases that do not resolve (issue 28) ----------------------------------------------------------

std::vector<analysis::Note> notes_of(const std::vector<std::pair<std::string, std::string>>& files, std::size_t file,
                                     bool pruned = false) {
    return project_of(files, pruned).notes(file);
}

// A model file copied out of its package: `from ...modeling_utils import PreTrainedModel` leaves
// the folder, and the class is taken from the table by the import's last part and its name.
TEST(UnresolvedBases, RelativeImportLeavingTheFolderFallsBackToTheTable) {
    const std::string model =
        "from torch import nn\nfrom ...modeling_utils import PreTrainedModel\nfrom ... import modeling_utils\n"
        "from ..utils import Base\n\n"
        "class FooPreTrainedModel(PreTrainedModel):\n    pass\n\n"
        "class FooModel(FooPreTrainedModel):\n    def forward(self, x):\n        return x\n\n"
        "class Other(modeling_utils.PreTrainedModel):\n    def forward(self, x):\n        return x\n\n"
        "class Unused(PreTrainedModel):\n    pass\n\n"
        "class Mine(Base):\n    def forward(self, x):\n        return x\n";
    for (const bool pruned : {false, true}) {
        const auto project = project_of({{"/nonexistent-graphmend/copied/modeling_foo.py", model}}, pruned);
        EXPECT_TRUE(project.is_module_class(0, "FooPreTrainedModel"));
        EXPECT_TRUE(project.is_module_class(0, "FooModel"));
        EXPECT_TRUE(project.is_module_class(0, "Other"));
        EXPECT_FALSE(project.is_module_class(0, "Mine"));
        EXPECT_EQ(scope_names(project, 0), (std::set<std::string>{"forward"}));
        const auto& notes = project.notes(0);
        ASSERT_EQ(notes.size(), 3u) << pruned;
        EXPECT_EQ(notes[0].line, 6u);  // FooPreTrainedModel: FooModel's forward needs it; Unused is not noted
        EXPECT_EQ(notes[0].message,
                  "class `FooPreTrainedModel`: base `PreTrainedModel` comes from `from ...modeling_utils import "
                  "PreTrainedModel`, which leaves the folder `copied`: taken as "
                  "`transformers.modeling_utils.PreTrainedModel`, an nn.Module in graphmend's table of transformers "
                  "4.52.4");
        EXPECT_EQ(notes[1].line, 13u);
        EXPECT_NE(notes[1].message.find("base `modeling_utils.PreTrainedModel` comes from `from ... import "
                                        "modeling_utils`"),
                  std::string::npos);
        EXPECT_EQ(notes[2].line, 20u);
        EXPECT_EQ(notes[2].message,
                  "class `Mine`: base `Base` could not be resolved: it comes from `from ..utils import Base`, which "
                  "leaves the folder `copied`, and graphmend's table of transformers 4.52.4's nn.Module classes has "
                  "no `Base` in a module `...utils`; its forward is not in scope");
    }
}

TEST(UnresolvedBases, EachWayABaseFailsIsNotedWhereItMatters) {
    const std::string dir = "/nonexistent-graphmend/unresolved/";
    const auto notes = notes_of(
        {{dir + "model.py",
          "import torch\nfrom torch import nn\nfrom typing import Generic, TypeVar\nfrom diffusers import ModelMixin\n"
          "from transformers import NotAModule\nfrom .helpers import Helper\nfrom .missing import Gone\n\n"
          "T = TypeVar('T')\nAlias = nn.Module\n\n"
          "class A(ModelMixin):\n    def forward(self, x):\n        return x\n\n"                // 12
          "class B(NotAModule):\n    def forward(self, x):\n        return x\n\n"                // 16
          "class C(Alias):\n    def forward(self, x):\n        return x\n\n"                     // 20
          "class D(Undefined):\n    def forward(self, x):\n        return x\n\n"                 // 24
          "class Mid(Gone):\n    pass\n\n"                                                       // 28
          "class Leaf(Mid):\n    def forward(self, x):\n        return x\n\n"                    // 31
          "class Leaf2(Mid):\n    def forward(self, x):\n        return x\n\n"                   // 35
          "class E(Helper):\n    def forward(self, x):\n        return x\n\n"                    // 39
          "class F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        return x\n\n"
          "class G(Generic[T]):\n    def forward(self, x):\n        return x\n\n"
          "class H(object):\n    def forward(self, x):\n        return x\n\n"
          "class I(make_base()):\n    def forward(self, x):\n        return x\n\n"              // 56
          "class J(Gone):\n    def helper(self, x):\n        return x\n"},
         {dir + "helpers.py", "class Helper:\n    pass\n"}},
        0);
    std::vector<std::pair<std::uint32_t, std::string>> got;
    for (const auto& n : notes) got.emplace_back(n.line, n.message);
    const std::vector<std::pair<std::uint32_t, std::string>> want = {
        {12, "class `A`: base `ModelMixin` is `diffusers.ModelMixin`, outside the inputs and not a known nn.Module "
             "(torch.nn's, or transformers 4.52.4's in graphmend's table); its forward is not in scope"},
        {16, "class `B`: base `NotAModule` is `transformers.NotAModule`, which graphmend's table of transformers "
             "4.52.4's nn.Module classes does not list (a class added later is not in it); its forward is not in scope"},
        {20, "class `C`: base `Alias` could not be resolved: `Alias` is bound by an assignment, which graphmend does "
             "not follow; its forward is not in scope"},
        {24, "class `D`: base `Undefined` could not be resolved: the module binds no `Undefined` at module level; its "
             "forward is not in scope"},
        {28, "class `Mid`: base `Gone` could not be resolved: it comes from `from .missing import Gone`, whose module "
             "`unresolved.missing` is not among the inputs, and graphmend's table of transformers 4.52.4's nn.Module "
             "classes has no `Gone` in a module `...missing`; the forward of `Leaf` (and of 1 more) is not in scope"},
        {56, "class `I`: base `make_base()` is not a dotted name, which graphmend does not follow; its forward is not "
             "in scope"},
    };
    EXPECT_EQ(got, want);  // E: Helper is a plain class of the inputs; F, G, H: known not to be nn.Modules; J: no forward
}

TEST(UnresolvedBases, StarImportOfTorchNnIsTakenWithANote) {
    const auto project = project_of({{"/nonexistent-graphmend/star/model.py",
                                      "from torch.nn import *\n\nclass M(Module):\n    def forward(self, x):\n"
                                      "        return x\n"}});
    EXPECT_TRUE(project.is_module_class(0, "M"));
    ASSERT_EQ(project.notes(0).size(), 1u);
    EXPECT_EQ(project.notes(0)[0].message,
              "class `M`: base `Module` is bound by no import of its own: taken as `torch.nn.Module`, an nn.Module, "
              "through `from torch.nn import *`");
    // A star import that names no nn.Module: the base may come from it, which is all that is known.
    const auto other = project_of({{"/nonexistent-graphmend/star/model.py",
                                    "from somelib import *\n\nclass M(Thing):\n    def forward(self, x):\n"
                                    "        return x\n"}});
    EXPECT_FALSE(other.is_module_class(0, "M"));
    ASSERT_EQ(other.notes(0).size(), 1u);
    EXPECT_EQ(other.notes(0)[0].message,
              "class `M`: base `Thing` could not be resolved: it may come from `from somelib import *`, of a module "
              "graphmend does not read; its forward is not in scope");
}

// A forward in scope otherwise (compiled by a call) needs no note; the notes reach the outcome,
// from the first pass only, and the reports.
TEST(UnresolvedBases, NotesReachTheOutcomeAndTheReports) {
    const std::string model =
        "import torch\nfrom .base import Base\n\nclass M(Base):\n    def forward(self, x):\n"
        "        print(x)\n        return x\n\nclass N(Base):\n    def forward(self, x):\n        return x\n\n"
        "@torch.compile\ndef run(x):\n    return N.forward(None, x)\n";
    const auto out = fix_files({{"/nonexistent-graphmend/notes/model.py", model}}, FixOptions{});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(out[0].sites.empty());
    ASSERT_EQ(out[0].notes.size(), 1u);
    EXPECT_EQ(out[0].notes[0].line, 4u);
    const std::string text = output::text_report(out[0], output::Mode::Check);
    EXPECT_NE(text.find("note: /nonexistent-graphmend/notes/model.py:4: class `M`: base `Base` could not be resolved"),
              std::string::npos)
        << text;
    const auto json = output::json_report(out, output::Mode::Check);
    ASSERT_EQ(json["files"][0]["notes"].size(), 1u);
    EXPECT_EQ(json["files"][0]["notes"][0]["line"], 4);
    EXPECT_EQ(json["files"][0]["notes"][0]["message"], out[0].notes[0].message);
}

// --- scope from the user's code (issue 31): a script compiles what a sibling package defines -----

namespace {

// The project of a TempTree's files (their paths exist, so packages are found), given in `order`.
analysis::Project project_in(const TempTree& tree, const std::vector<std::pair<std::string, std::string>>& files,
                             bool pruned = false) {
    std::vector<std::pair<std::string, std::string>> at;
    for (const auto& [path, text] : files) {
        tree.write(path, text);
        at.emplace_back((tree.root / path).string(), text);
    }
    return project_of(at, pruned);
}

const char* kScheduler = R"(import torch


class Scheduler:
    def __init__(self, steps=10):
        self.alphas = torch.linspace(0.99, 0.5, steps)

    def step(self, out, t, sample):
        return self._mix(out, sample) * self.alphas[t]

    def _mix(self, out, sample):
        return out + sample

    def unused(self):
        return 0


class Other:
    def step(self, x):
        return x
)";

}  // namespace

// delta's spelling: `_import_structure` read by a module `__getattr__` through `_owner`.
TEST(UserScope, ACompiledBoundMethodThroughALazyGetattrInitIsARoot) {
    const TempTree tree;
    const std::string init = R"(import importlib

_import_structure = {"scheduling": ["Scheduler", "Other"]}
_owner = {name: module for module, names in _import_structure.items() for name in names}


def __getattr__(name):
    if name in _owner:
        return getattr(importlib.import_module(f".{_owner[name]}", __name__), name)
    raise AttributeError(name)
)";
    const std::string script = R"(import torch

from pkg import Scheduler


def main():
    scheduler = Scheduler()
    step = torch.compile(scheduler.step)
    for t in range(3):
        step(1, t, 2)
)";
    for (const bool pruned : {false, true}) {
        const auto project = project_in(
            tree, {{"run.py", script}, {"pkg/__init__.py", init}, {"pkg/scheduling.py", kScheduler}}, pruned);
        EXPECT_EQ(scope_names(project, 2), (std::set<std::string>{"step", "_mix"})) << pruned;
        EXPECT_TRUE(scope_names(project, 0).empty());  // main is a driver, not traced
        ASSERT_EQ(project.drivers().size(), 1u);
        EXPECT_EQ(project.drivers()[0].node.field("name").text(), "main");
    }
}

// transformers' and diffusers' spelling: `_import_structure` filled in pieces, a `_LazyModule`, a
// `from_pretrained` constructor, and the bound method compiled through an alias.
TEST(UserScope, LazyModuleImportStructureFromPretrainedAndAnAlias) {
    const TempTree tree;
    const std::string init = R"(import sys
from typing import TYPE_CHECKING

from .utils import _LazyModule

_import_structure = {"configuration": ["Config"]}
try:
    import torch
except ImportError:
    pass
else:
    _import_structure["scheduling"] = ["Other"]
    _import_structure["scheduling"].extend(["Scheduler"])

sys.modules[__name__] = _LazyModule(__name__, globals()["__file__"], _import_structure, module_spec=__spec__)
)";
    const std::string script = R"(import torch
import lib

scheduler = lib.Scheduler.from_pretrained("path")
run = scheduler.step
step = torch.compile(run, fullgraph=True)
)";
    const auto project = project_in(tree, {{"run.py", script}, {"lib/__init__.py", init},
                                           {"lib/configuration.py", "class Config:\n    pass\n"},
                                           {"lib/scheduling.py", kScheduler}, {"lib/utils.py", "_LazyModule = object\n"}});
    EXPECT_EQ(scope_names(project, 3), (std::set<std::string>{"step", "_mix"}));
}

// What nothing compiles stays out: a class of the package never compiled, a map that no
// `__getattr__` or `_LazyModule` reads, and a method of an nn.Module that no call reaches.
TEST(UserScope, WhatNothingCompilesStaysOut) {
    const TempTree tree;
    const std::string script = R"(import torch

from pkg import Scheduler, Model


def main():
    model = torch.compile(Model())
    scheduler = Scheduler()
    scheduler.step(1, 2, 3)
)";
    const std::string model = R"(from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return x

    def helper(self, x):
        return x
)";
    const auto lazy = project_in(tree, {{"run.py", script},
                                        {"pkg/__init__.py", "import importlib\n\n_import_structure = {'scheduling': "
                                                            "['Scheduler'], 'modeling': ['Model']}\n\n\ndef "
                                                            "__getattr__(name):\n    return _import_structure\n"},
                                        {"pkg/scheduling.py", kScheduler}, {"pkg/modeling.py", model}});
    EXPECT_TRUE(scope_names(lazy, 2).empty());
    EXPECT_EQ(scope_names(lazy, 3), (std::set<std::string>{"forward"}));
    EXPECT_TRUE(lazy.drivers().empty());
    // No `__getattr__`: `_import_structure` is a dict like any other, and names nothing.
    const TempTree plain_tree;
    const std::string compiled = "import torch\nfrom pkg import Scheduler\n\ns = Scheduler()\nf = torch.compile(s.step)\n";
    const auto plain = project_in(plain_tree, {{"run.py", compiled},
                                               {"pkg/__init__.py", "_import_structure = {'scheduling': ['Scheduler']}\n"},
                                               {"pkg/scheduling.py", kScheduler}});
    EXPECT_TRUE(scope_names(plain, 2).empty());
}

// The lazy map of a package init, as the index reads it.
TEST(UserScope, IndexReadsTheLazyExportsOfAnInit) {
    const auto index_of = [](const std::string& text) {
        const syntax::Tree tree = syntax::Tree::parse(text);
        return analysis::index_module(tree.root()).lazy_exports;
    };
    using Map = std::map<std::string, std::string>;
    EXPECT_EQ(index_of("_owner = {'A': 'mod_a', 'B': 'sub.mod_b'}\n\ndef __getattr__(name):\n    return _owner[name]\n"),
              (Map{{"A", "mod_a"}, {"B", "sub.mod_b"}}));
    EXPECT_EQ(index_of("_import_structure = {'m': ['A']}\n_import_structure['m'].append('B')\n"
                       "_import_structure['n'] = ('C',)\nsys.modules[__name__] = _LazyModule(__name__)\n"),
              (Map{{"A", "m"}, {"B", "m"}, {"C", "n"}}));
    EXPECT_TRUE(index_of("_import_structure = {'m': ['A']}\n").empty());
    EXPECT_TRUE(index_of("def __getattr__(name):\n    return {'A': f'{name}'}[name]\n").empty());
    // The bodies of else/except clauses are module level too (diffusers' `try: ... else:`).
    const syntax::Tree tree = syntax::Tree::parse("try:\n    import a\nexcept E:\n    import b\nelse:\n    import c\n");
    const auto index = analysis::index_module(tree.root());
    EXPECT_NE(index.find_import("b"), nullptr);
    EXPECT_NE(index.find_import("c"), nullptr);
}

// A module imported under another name (`from vision.ops import boxes as box_ops`, torchvision's
// spelling) or by `importlib.import_module(...)`: its functions are reached and compiled.
TEST(UserScope, ModulesUnderOtherNamesAreFollowed) {
    const TempTree tree;
    const std::string model = R"(import importlib

import torch
from torch import nn

from vision.ops import boxes as box_ops

misc = importlib.import_module("vision.ops.misc")
extra = importlib.import_module(".extra", __package__)


class Model(nn.Module):
    def forward(self, x):
        return box_ops.remove_small(x)


step = torch.compile(misc.helper)
more = torch.compile(extra.other)
)";
    const auto project = project_in(tree, {{"vision/__init__.py", ""}, {"vision/model.py", model},
                                           {"vision/extra.py", "def other(x):\n    return x\n"},
                                           {"vision/ops/__init__.py", ""},
                                           {"vision/ops/boxes.py", "def remove_small(x):\n    return x\n\n\n"
                                                                   "def unused(x):\n    return x\n"},
                                           {"vision/ops/misc.py", "def helper(x):\n    return x\n"}});
    EXPECT_EQ(scope_names(project, 1), (std::set<std::string>{"forward"}));
    EXPECT_EQ(scope_names(project, 2), (std::set<std::string>{"other"}));
    EXPECT_EQ(scope_names(project, 4), (std::set<std::string>{"remove_small"}));
    EXPECT_EQ(scope_names(project, 5), (std::set<std::string>{"helper"}));
}

// The runtime helpers the rewrites call exist: every `_graphmend_*` name a golden expectation
// (tests/fixtures/**/*.expected.py and the files of *.expected/ folders, the handed cases'
// included) reads is defined by a runtime block that file carries (its stand-in line
// `# <graphmend runtime block: STEM>`), by the runtime module it imports, or by the file itself
// (a local the rewrite binds: `_graphmend_valid`, a lambda's `_graphmend_prev`). The golden
// tests fold the runtime blocks into those stand-ins, so a helper renamed or dropped from
// src/runtime/*.py, or one a rule spells without a block that defines it, fails here rather
// than in the fixed files. The rules spell helpers as runtime::name::* (generated from the
// blocks by cmake/EmbedRuntime.cmake): a misspelled one does not compile. Also: the code the
// blocks share (src/runtime/shared/) is in place in each embedded block.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "graphmend/runtime_binding.hpp"
#include "graphmend/runtime_module.hpp"
#include "graphmend/runtime_sources.hpp"
#include "graphmend/syntax.hpp"

namespace fs = std::filesystem;
using namespace graphmend;
using syntax::Node;

namespace {

const fs::path kRoot = GRAPHMEND_SOURCE_DIR;
constexpr std::string_view kPrefix = "_graphmend_";
constexpr std::string_view kStandIn = "# <graphmend runtime block: ";

// Every fixed text the golden tests expect.
std::vector<fs::path> expectations() {
    std::vector<fs::path> out;
    for (const auto& entry : fs::recursive_directory_iterator(kRoot / "tests/fixtures")) {
        if (!entry.is_regular_file() || entry.path().extension() != ".py") continue;
        bool in_expected_folder = false;
        for (fs::path p = entry.path().parent_path(); p != kRoot && p.has_parent_path(); p = p.parent_path()) {
            in_expected_folder = in_expected_folder || p.filename().string().ends_with(".expected");
        }
        if (entry.path().filename().string().ends_with(".expected.py") || in_expected_folder) {
            out.push_back(entry.path());
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

// True when identifier `id` is bound where it stands: an assignment, `for` or walrus target
// (unpacked or not), a parameter, or the name of a definition.
bool binds(const Node& id) {
    Node c = id;
    Node p = id.parent();
    while (p.is("pattern_list") || p.is("tuple_pattern") || p.is("list_pattern") || p.is("list_splat_pattern") ||
           p.is("parenthesized_expression")) {
        c = p;
        p = p.parent();
    }
    const std::string_view field = c.field_name();
    if (p.is("assignment") || p.is("augmented_assignment") || p.is("for_statement") || p.is("for_in_clause")) {
        return field == "left";
    }
    if (p.is("named_expression") || p.is("default_parameter") || p.is("typed_parameter") ||
        p.is("typed_default_parameter") || p.is("function_definition") || p.is("class_definition")) {
        return field == "name" || p.is("typed_parameter");
    }
    return p.is("lambda_parameters") || p.is("parameters");
}

struct Uses {
    std::map<std::string, int> read;  // name -> the first line that reads it
    std::set<std::string> bound;      // names the file binds itself
    std::set<std::string> stems;      // the runtime blocks the file carries
    std::set<std::string> imported;   // names it imports from the runtime module
};

Uses uses_of(const std::string& text) {
    Uses u;
    const syntax::Tree tree = syntax::Tree::parse(text);
    syntax::walk(tree.root(), [&](const Node& n) {
        if (n.is("comment")) {
            for (std::string_view mark : {kStandIn, runtime::kMarker}) {
                if (!n.text().starts_with(mark)) continue;
                const std::string_view rest = n.text().substr(mark.size());
                u.stems.emplace(rest.substr(0, rest.find_first_of(" >")));
            }
            return false;
        }
        if (n.is("import_from_statement")) {
            std::string_view module = n.field("module_name").text();
            while (module.starts_with('.')) module.remove_prefix(1);
            if (module != runtime_module::kName) return false;
            for (const Node& c : n.children()) {
                if (c.field_name() == "name") u.imported.emplace((c.is("aliased_import") ? c.field("alias") : c).text());
            }
            return false;
        }
        if (!n.is("identifier") || !n.text().starts_with(kPrefix)) return true;
        const Node parent = n.parent();
        if (parent.is("attribute") && parent.field("attribute") == n) return false;  // rt._graphmend_x
        if (parent.is("keyword_argument") && parent.field("name") == n) return false;
        if (binds(n)) {
            u.bound.emplace(n.text());
        } else {
            u.read.emplace(std::string(n.text()), static_cast<int>(n.position().line));
        }
        return false;
    });
    return u;
}

// Why `name`, read by a file with uses `u`, is not defined there, or "".
std::string undefined(const std::string& name, const Uses& u) {
    if (u.bound.contains(name)) return "";
    if (u.imported.contains(name)) {
        return runtime_module::exports().contains(name) ? "" : "imported, but the runtime module does not define it";
    }
    const runtime::Helper* helper = runtime::helper_named(name);
    if (helper == nullptr) return "no runtime block defines it (src/runtime/*.py)";
    if (!u.stems.contains(std::string(helper->stem))) {
        return fmt::format("defined by the runtime block {}, which the file does not carry", helper->stem);
    }
    return "";
}

TEST(RuntimeNames, EveryHelperAnExpectationReadsIsDefined) {
    std::size_t files = 0;
    std::set<std::string> helpers_read;
    for (const fs::path& path : expectations()) {
        const Uses u = uses_of(syntax::read_file(path.string()));
        ++files;
        for (const auto& [name, line] : u.read) {
            const std::string why = undefined(name, u);
            EXPECT_EQ(why, "") << fs::relative(path, kRoot).string() << ":" << line << ": " << name;
            if (runtime::helper_named(name) != nullptr) helpers_read.insert(name);
        }
    }
    // Not vacuous: the goldens cover the fixtures of every rule and most helpers.
    EXPECT_GT(files, 50u);
    EXPECT_GT(helpers_read.size(), 30u);
}

TEST(RuntimeNames, UsesSeeBlocksImportsAndLocals) {
    const Uses u = uses_of(
        "from ._graphmend_runtime import _graphmend_if, _graphmend_print  # noqa: E402\n"
        "def f(x, _graphmend_prev=0):\n"
        "    y, _graphmend_valid = _graphmend_pairs(x, 2)\n"
        "    z = [_graphmend_e for _graphmend_e in range(3)]\n"
        "    return (_graphmend_a := _graphmend_nope(x)), rt._graphmend_attr, _graphmend_if(x, lambda _graphmend_l: 1)\n"
        "# <graphmend runtime block: static_dispatch>\n");
    EXPECT_EQ(u.stems, (std::set<std::string>{"static_dispatch"}));
    EXPECT_EQ(u.imported, (std::set<std::string>{"_graphmend_if", "_graphmend_print"}));
    EXPECT_EQ(u.bound, (std::set<std::string>{"_graphmend_prev", "_graphmend_valid", "_graphmend_e", "_graphmend_a",
                                              "_graphmend_l"}));
    EXPECT_EQ(undefined("_graphmend_pairs", u), "");
    EXPECT_EQ(undefined("_graphmend_if", u), "");
    EXPECT_EQ(undefined("_graphmend_nope", u), "no runtime block defines it (src/runtime/*.py)");
    EXPECT_EQ(undefined("_graphmend_subset_at", u),
              "defined by the runtime block row_subset, which the file does not carry");
    EXPECT_FALSE(u.read.contains("_graphmend_attr"));
}

// The generated table names what the blocks define, and the runtime module exports it all.
TEST(RuntimeNames, TableMatchesTheBlocksAndTheModule) {
    for (const runtime::Helper& h : runtime::kHelpers) {
        ASSERT_TRUE(h.name.starts_with(kPrefix)) << h.name;
        const runtime::Block* block = runtime::block_named(h.stem);
        ASSERT_NE(block, nullptr) << h.stem;
        const std::string name(h.name);
        const bool defined = block->source.find("\ndef " + name + "(") != std::string_view::npos ||
                             block->source.find("\n" + name + " = ") != std::string_view::npos;
        EXPECT_TRUE(defined) << name << " in " << h.stem;
        EXPECT_TRUE(runtime_module::exports().contains(name)) << name;
    }
    EXPECT_EQ(runtime::name::if_, "_graphmend_if");
    EXPECT_EQ(runtime::helper_named("_graphmend_no_rows")->stem, runtime::stem::static_dispatch);
}

// binding.py binds the per-file helpers of the deferred_effects block to each importing file:
// each name it lists is one of them.
TEST(RuntimeNames, PerFileHelpersAreDeferredEffectsHelpers) {
    const std::string_view binding = runtime::binding_py;
    const std::string_view key = "\n_graphmend_per_file = (";
    const auto at = binding.find(key);
    ASSERT_NE(at, std::string_view::npos);
    const std::string_view list = binding.substr(at + key.size(), binding.find(')', at) - at - key.size());
    std::size_t listed = 0;
    for (std::size_t q = list.find('"'); q != std::string_view::npos; q = list.find('"', list.find('"', q + 1) + 1)) {
        const std::string name(list.substr(q + 1, list.find('"', q + 1) - q - 1));
        const runtime::Helper* helper = runtime::helper_named(name);
        ASSERT_NE(helper, nullptr) << name;
        EXPECT_EQ(helper->stem, runtime::stem::deferred_effects) << name;
        ++listed;
    }
    EXPECT_EQ(listed, 5u);
}

// Every `# graphmend-shared:` line of src/runtime/*.py became the shared code, its
// placeholders replaced: the frame skipping of src/runtime/shared/skip_frames.py is in each block once.
TEST(RuntimeBlocks, SharedCodeIsInPlace) {
    for (const runtime::Block& b : runtime::kBlocks) {
        EXPECT_EQ(b.source.find("graphmend-shared"), std::string_view::npos) << b.stem;
        EXPECT_EQ(b.source.find("@VAR@"), std::string_view::npos) << b.stem;
        EXPECT_EQ(b.source.find("@START@"), std::string_view::npos) << b.stem;
        const std::string_view skip = "ef.set_code_exec_strategy(code, strategy)\n";
        const auto at = b.source.find(skip);
        EXPECT_NE(at, std::string_view::npos) << b.stem;
        EXPECT_EQ(b.source.find(skip, at + 1), std::string_view::npos) << b.stem;
    }
}

}  // namespace

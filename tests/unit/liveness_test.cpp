// Syntactic liveness queries (liveness.hpp): which names a node binds, and which simple
// assignment reaches a read.
#include <gtest/gtest.h>

#include <string>

#include "graphmend/analysis.hpp"
#include "graphmend/liveness.hpp"

using namespace graphmend;
using syntax::Node;

namespace {

Node first_function(const syntax::Tree& tree) {
    Node found;
    syntax::walk(tree.root(), [&](const Node& n) {
        if (!found && n.is("function_definition")) found = n;
        return !found;
    });
    return found;
}

}  // namespace

TEST(Liveness, BindsSeesEveryKindOfTarget) {
    const char* cases[][2] = {
        {"def f():\n    x = 1\n", "x"},
        {"def f():\n    a, x = g()\n", "x"},
        {"def f():\n    [a, x] = g()\n", "x"},
        {"def f():\n    a, *x = g()\n", "x"},
        {"def f():\n    for x in g():\n        pass\n", "x"},
        {"def f():\n    for a, x in g():\n        pass\n", "x"},
        {"def f():\n    with g() as x:\n        pass\n", "x"},
        {"def f():\n    if (x := g()):\n        pass\n", "x"},
        {"def f():\n    import x\n", "x"},
        {"def f():\n    from m import y as x\n", "x"},
        {"def f():\n    x += 1\n", "x"},
        {"def f():\n    x: int = 1\n", "x"},
        {"def f():\n    try:\n        pass\n    except E as x:\n        pass\n", "x"},
    };
    for (const auto& [source, name] : cases) {
        const syntax::Tree tree = syntax::Tree::parse(source);
        EXPECT_TRUE(analysis::binds(first_function(tree).field("body"), name)) << source;
    }
    const char* reads[] = {
        "def f():\n    g(x)\n",
        "def f():\n    y = x.a\n",
        "def f():\n    g(x=1)\n",
        "def f():\n    y.x = 1\n",
        "def f():\n    y[x] = 1\n",
    };
    for (const char* source : reads) {
        const syntax::Tree tree = syntax::Tree::parse(source);
        EXPECT_FALSE(analysis::binds(first_function(tree).field("body"), "x")) << source;
    }
}

namespace {

// The text of the value that reaches the read of `name` on the line holding `marker`, or "-".
std::string reaching(const std::string& source, const std::string& marker, const std::string& name) {
    const syntax::Tree tree = syntax::Tree::parse(source);
    const auto found = analysis::reaching_assignments(first_function(tree));
    const auto line = tree.source().position(static_cast<std::uint32_t>(source.find(marker))).line;
    std::string out = "-";
    syntax::walk(tree.root(), [&](const Node& n) {
        if (n.is("identifier") && n.text() == name && n.position().line == line && analysis::is_read(n)) {
            if (const auto it = found.find(n.begin()); it != found.end()) out = std::string(it->second.text());
        }
        return true;
    });
    return out;
}

}  // namespace

TEST(Liveness, ReachingAssignmentsFollowStraightLineCode) {
    const std::string straight = R"(def f(p):
    kv = enc(p)
    kv = kv.permute(2, 0)
    kv = kv.split(2)  # A
    return kv  # B
)";
    EXPECT_EQ(reaching(straight, "# A", "kv"), "kv.permute(2, 0)");
    EXPECT_EQ(reaching(straight, "# B", "kv"), "kv.split(2)");
    EXPECT_EQ(reaching(straight, "# A", "p"), "-");  // a parameter
}

TEST(Liveness, ReachingAssignmentsStopAtEveryOtherBinding) {
    const std::string branches = R"(def f(x, c):
    y = x.sum()
    if c:
        y = y.item()  # A
    g(y)  # B
    z = x
    for i in range(3):
        g(z)  # C
        z = z.tolist()
    g(z)  # D
    w = x
    try:
        w = w.tolist()
        g(w)  # E
    except E:
        g(w)  # F
    g(w)  # G
    v = x
    with m():
        v = 1
        g(v)  # H
    g(v)  # I
    u = x
    a, u = t  # J
    g(u)  # K
    s = x
    g(s, (s := 2), s)  # L
    q = x
    q += 1
    g(q)  # M
    r = x
    del r
    g(r)  # N
    o = x
    h = lambda: o  # O
    g([o for _ in t])  # P
    k = x
    def inner():
        nonlocal k
        k = 2
    g(k)  # Q
)";
    EXPECT_EQ(reaching(branches, "# A", "y"), "x.sum()");
    EXPECT_EQ(reaching(branches, "# B", "y"), "-");
    EXPECT_EQ(reaching(branches, "# C", "z"), "-");
    EXPECT_EQ(reaching(branches, "# D", "z"), "-");
    EXPECT_EQ(reaching(branches, "# E", "w"), "w.tolist()");
    EXPECT_EQ(reaching(branches, "# F", "w"), "-");
    EXPECT_EQ(reaching(branches, "# G", "w"), "-");
    EXPECT_EQ(reaching(branches, "# H", "v"), "1");
    EXPECT_EQ(reaching(branches, "# I", "v"), "-");
    EXPECT_EQ(reaching(branches, "# K", "u"), "-");
    EXPECT_EQ(reaching(branches, "# L", "s"), "-");
    EXPECT_EQ(reaching(branches, "# M", "q"), "-");
    EXPECT_EQ(reaching(branches, "# N", "r"), "-");
    EXPECT_EQ(reaching(branches, "# O", "o"), "-");  // read when called, not here
    EXPECT_EQ(reaching(branches, "# P", "o"), "-");
    EXPECT_EQ(reaching(branches, "# Q", "k"), "-");
}

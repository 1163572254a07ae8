// The Python builder (include/graphmend/emit.hpp): expressions as Python spells them, and
// statements laid out in a file's line ending and indentation.
#include <gtest/gtest.h>

#include "graphmend/emit.hpp"
#include "graphmend/runtime_sources.hpp"

using namespace graphmend;

namespace {

TEST(Emit, Expressions) {
    EXPECT_EQ(emit::call(runtime::name::span_index, {"m"}), "_graphmend_span_index(m)");
    EXPECT_EQ(emit::call("f", {}), "f()");
    EXPECT_EQ(emit::call("f", {"a", emit::keyword("module", "self")}), "f(a, module=self)");
    EXPECT_EQ(emit::lambda("x"), "lambda: x");
    EXPECT_EQ(emit::lambda({}, "x"), "lambda: x");
    EXPECT_EQ(emit::lambda({"row", "col"}, "(x,)"), "lambda row, col: (x,)");
    EXPECT_EQ(emit::walrus("i", emit::call("f", {"i"})), "(i := f(i))");
    EXPECT_EQ(emit::tuple({}), "()");
    EXPECT_EQ(emit::tuple({"a"}), "(a,)");
    EXPECT_EQ(emit::tuple({"a", "b"}), "(a, b)");
    EXPECT_EQ(emit::tuple({"a", "b"}, true), "(a, b,)");
    EXPECT_EQ(emit::tuple({"a"}, true), "(a,)");
    EXPECT_EQ(emit::string("p2"), "\"p2\"");
    EXPECT_EQ(emit::string("a\"b\\c"), "\"a\\\"b\\\\c\"");
}

TEST(Emit, LinesInTheFilesStyle) {
    emit::Lines lines({"\r\n", "\t"}, "\t");
    lines.add("a = 1").open("if __debug__").add("f(a)").open("for i in x").add("g(i)").close().close().add("b");
    EXPECT_EQ(lines.text(), "a = 1\r\n\tif __debug__:\r\n\t\tf(a)\r\n\t\tfor i in x:\r\n\t\t\tg(i)\r\n\tb");
    EXPECT_FALSE(lines.empty());
    EXPECT_TRUE(emit::Lines({}, "    ").empty());
}

TEST(Emit, StyleAtAStatement) {
    const syntax::Tree spaces = syntax::Tree::parse("def f():\r\n  if x:\r\n    pass\r\n");
    const syntax::Node stmt = spaces.root().named_children()[0].field("body").named_children()[0];
    ASSERT_TRUE(stmt.is("if_statement"));
    const emit::Style s = emit::Style::at(stmt);
    EXPECT_EQ(s.eol, "\r\n");
    EXPECT_EQ(s.unit, "    ");  // four spaces for a level, as GM201's layout has always written
    const syntax::Tree tabs = syntax::Tree::parse("def f():\n\tif x:\n\t\tpass\n");
    const emit::Style t = emit::Style::at(tabs.root().named_children()[0].field("body").named_children()[0]);
    EXPECT_EQ(t.eol, "\n");
    EXPECT_EQ(t.unit, "\t");
}

}  // namespace

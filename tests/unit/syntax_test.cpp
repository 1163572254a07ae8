// The syntax layer's names and readings (issue 29): the grammar's type and field names the
// build generates, and what is read off a node's text.
#include <gtest/gtest.h>
#include <tree_sitter/api.h>

#include <cstdint>
#include <optional>
#include <string>

#include "graphmend/syntax.hpp"

using namespace graphmend;

extern "C" const TSLanguage* tree_sitter_python();

namespace {

// graphmend/grammar_names.hpp, which TypeName and FieldName check names against, names each
// symbol and field as tree-sitter does.
TEST(GrammarNames, EverySymbolAndFieldIsNamedAsTreeSitterNamesIt) {
    const TSLanguage* language = tree_sitter_python();
    ASSERT_EQ(syntax::grammar::kSymbolCount, ts_language_symbol_count(language));
    for (std::uint32_t s = 0; s < syntax::grammar::kSymbolCount; ++s) {
        const auto symbol = static_cast<TSSymbol>(s);
        const std::uint16_t type = syntax::grammar::kTypeOfSymbol[s];
        EXPECT_EQ(syntax::grammar::kTypeNames[type], ts_language_symbol_name(language, symbol)) << s;
        const TSSymbolType kind = ts_language_symbol_type(language, symbol);
        if (kind == TSSymbolTypeRegular || kind == TSSymbolTypeAnonymous) EXPECT_TRUE(syntax::grammar::kTypeVisible[type]) << s;
    }
    EXPECT_EQ(syntax::grammar::kTypeNames[syntax::grammar::kErrorType], "ERROR");
    ASSERT_EQ(std::size(syntax::grammar::kFieldNames), ts_language_field_count(language) + 1);
    for (std::uint16_t f = 1; f < std::size(syntax::grammar::kFieldNames); ++f) {
        EXPECT_EQ(syntax::FieldName::of_id(f).name(), ts_language_field_name_for_id(language, f)) << f;
        EXPECT_EQ(ts_language_field_id_for_name(language, syntax::grammar::kFieldNames[f].data(),
                                                static_cast<std::uint32_t>(syntax::grammar::kFieldNames[f].size())),
                  f);
    }
    static_assert(syntax::FieldName("body").name() == "body");
    static_assert(syntax::TypeName("is not").name() == "is not");
}

// is() compares types by name, as comparing type() did: an anonymous `type` keyword and a named
// `type` node (an annotation) are both "type"; ERROR is a type.
TEST(GrammarNames, IsComparesTheTypesName) {
    const auto tree = syntax::Tree::parse("type T = int\nx: int = 1\ny = a is not b\n");
    int keywords = 0;
    int annotations = 0;
    bool is_not = false;
    syntax::walk(tree.root(), [&](const syntax::Node& n) {
        EXPECT_EQ(n.is("type"), n.type() == "type");
        if (n.is("type")) ++(n.named() ? annotations : keywords);
        if (n.is("is not")) is_not = true;
        return true;
    });
    EXPECT_EQ(keywords, 1);
    EXPECT_GE(annotations, 2);  // `int` in the alias and in the annotation
    EXPECT_TRUE(is_not);
    const auto broken = syntax::Tree::parse("x = (\n");
    bool error = false;
    syntax::walk(broken.root(), [&](const syntax::Node& n) { return !(error = error || n.is("ERROR")); });
    EXPECT_TRUE(error);
}

TEST(GrammarNames, AFieldIsFoundByItsName) {
    const auto tree = syntax::Tree::parse("f(a, b=1)\n");
    const syntax::Node call = tree.root().named_children().at(0).named_children().at(0);
    ASSERT_TRUE(call.is("call"));
    EXPECT_EQ(call.field("function").text(), "f");
    EXPECT_TRUE(call.field("function").in_field("function"));
    EXPECT_EQ(call.field("function").field_name(), "function");
    EXPECT_FALSE(call.field("arguments").in_field("function"));
    EXPECT_FALSE(call.field("body").valid());
}

TEST(Syntax, TextIsTheNodesSourceAsAString) {
    const auto tree = syntax::Tree::parse("x = f(a)  # c\n");
    const syntax::Node call = tree.root().named_children().at(0).named_children().at(0).field("right");
    EXPECT_EQ(text(call), "f(a)");
    EXPECT_EQ(syntax::text(syntax::Node()), "");
}

// One reader of integer literals (issue 29): the old ones read `0x10` as 0 (std::stoi) or
// refused hex, octal, binary and `_` outright.
TEST(IntLiterals, TextIsReadAsPython3ReadsIt) {
    EXPECT_EQ(syntax::parse_int("0"), 0);
    EXPECT_EQ(syntax::parse_int("00"), 0);
    EXPECT_EQ(syntax::parse_int("0_0"), 0);
    EXPECT_EQ(syntax::parse_int("42"), 42);
    EXPECT_EQ(syntax::parse_int("1_000_000"), 1000000);
    EXPECT_EQ(syntax::parse_int("0x10"), 16);
    EXPECT_EQ(syntax::parse_int("0XfF"), 255);
    EXPECT_EQ(syntax::parse_int("0x_1f"), 31);
    EXPECT_EQ(syntax::parse_int("0o17"), 15);
    EXPECT_EQ(syntax::parse_int("0O7_7"), 63);
    EXPECT_EQ(syntax::parse_int("0b101"), 5);
    EXPECT_EQ(syntax::parse_int("0B_1_0"), 2);
    EXPECT_EQ(syntax::parse_int("9223372036854775807"), INT64_MAX);
    EXPECT_EQ(syntax::parse_int("0x7fff_ffff_ffff_ffff"), INT64_MAX);
    // Not Python 3 integers, or past int64: nullopt, no exception.
    for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1.0", "1e3", "10j", "10L", "010", "0_1", "_1", "1_",
                            "1__0", "0x", "0x_", "0x__1", "0x1_", "0xg", "0o8", "0b2", "0b", "x10",
                            "9223372036854775808", "18446744073709551616", "0x1_0000_0000_0000_0000",
                            "99999999999999999999999999"}) {
        EXPECT_EQ(syntax::parse_int(bad), std::nullopt) << bad;
    }
}

TEST(IntLiterals, ANodeIsReadThroughParenthesesAndMinus) {
    const auto value = [](const std::string& expr) {
        const auto tree = syntax::Tree::parse("x = " + expr + "\n");
        return syntax::int_value(tree.root().named_children().at(0).named_children().at(0).field("right"));
    };
    EXPECT_EQ(value("7"), 7);
    EXPECT_EQ(value("-7"), -7);
    EXPECT_EQ(value("- 0x10"), -16);
    EXPECT_EQ(value("(-0b11)"), -3);
    EXPECT_EQ(value("-(2)"), -2);
    EXPECT_EQ(value("--5"), 5);
    EXPECT_EQ(value("-(-(0o10))"), 8);
    EXPECT_EQ(value("-9223372036854775808"), INT64_MIN);
    EXPECT_EQ(value("9223372036854775808"), std::nullopt);
    EXPECT_EQ(value("-9223372036854775809"), std::nullopt);
    EXPECT_EQ(value("--9223372036854775808"), std::nullopt);
    EXPECT_EQ(value(std::string(5000, '-') + "1"), 1);  // no recursion
    for (const char* other : {"+1", "~1", "1 + 1", "n", "1.5", "2j", "-2j", "True", "'1'"}) {
        EXPECT_EQ(value(other), std::nullopt) << other;
    }
    EXPECT_EQ(syntax::int_value(syntax::Node()), std::nullopt);
}

}  // namespace

#include <gtest/gtest.h>

#include "graphmend/edits.hpp"

using graphmend::edits::apply;
using graphmend::edits::Edit;
using graphmend::edits::OverlapError;

TEST(Edits, KeepsEveryByteOutsideTheEdits) {
    const std::string text = "a\r\n\tb  # c\r\n";
    EXPECT_EQ(apply(text, {{3, 4, "    "}}), "a\r\n    b  # c\r\n");
    EXPECT_EQ(apply(text, {}), text);
}

TEST(Edits, AppliesInAnyOrder) {
    EXPECT_EQ(apply("abcdef", {{4, 5, "E"}, {0, 1, "A"}, {6, 6, "!"}}), "AbcdEf!");
}

TEST(Edits, RejectsOverlaps) {
    EXPECT_THROW((void)apply("abcdef", {{0, 3, "x"}, {2, 4, "y"}}), OverlapError);
    EXPECT_THROW((void)apply("abcdef", {{2, 2, "x"}, {2, 2, "y"}}), OverlapError);
    EXPECT_NO_THROW((void)apply("abcdef", {{0, 2, "x"}, {2, 4, "y"}}));
}

TEST(Edits, RejectsEditsOutsideTheText) { EXPECT_THROW((void)apply("abc", {{2, 9, ""}}), std::out_of_range); }

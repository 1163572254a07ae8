#include <gtest/gtest.h>

#include "graphmend/edits.hpp"

using graphmend::edits::Acceptance;
using graphmend::edits::accept;
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

TEST(Edits, AcceptsFixesThatDoNotOverlap) {
    std::vector<Edit> accepted{{0, 10, "x"}};
    EXPECT_EQ(accept(accepted, {{10, 12, "y"}, {20, 20, "z"}}).outcome, Acceptance::Accepted);
    EXPECT_EQ(accepted.size(), 3u);
    // Every edit inside one accepted edit: covered by that rewrite.
    const Acceptance within = accept(accepted, {{2, 4, "a"}, {5, 6, "b"}});
    EXPECT_EQ(within.outcome, Acceptance::Within);
    EXPECT_EQ(within.within, 0u);
    // Overlapping, not inside: refused, and nothing is added.
    EXPECT_EQ(accept(accepted, {{8, 11, "c"}}).outcome, Acceptance::Overlaps);
    EXPECT_EQ(accept(accepted, {{20, 20, "d"}}).outcome, Acceptance::Overlaps);  // inserts at one offset
    EXPECT_EQ(accepted.size(), 3u);
}

// The span-loop matcher's parts, shared by the files of this folder only (see span_loop.hpp
// for the form, span_loop.cpp for what is proven before a loop is rewritten):
// - loop_body.cpp: the loop body's writes and tests, in their elementwise spelling (Matcher);
// - span_loop.cpp: the loop's form and the checks around it (match_span_loop).
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "graphmend/rule.hpp"
#include "graphmend/syntax.hpp"

namespace graphmend::rules::span_loop_detail {

using syntax::Node;

// The text without blanks (spaces, tabs, line breaks): `prev + 1` and `prev+1` compare equal.
std::string squeezed(std::string_view t);

// The indices of `X[a, b, c]`, comments left out.
std::vector<Node> indices_of(const Node& subscript);

// The body of the loop after `ROW, COL = IDX[I]` (and before `PREV = COL`): its writes, as the
// static form's stores, and the names its tests read. Filled by `block`; on failure `why` says
// why.
struct Matcher {
    const Context& ctx;
    const Node& def;
    std::string row, col, prev, idx, loop_var;
    std::set<std::string> targets;   // the tensors written
    std::vector<Node> free;          // names the tests read other than the separator's
    std::vector<std::string> stores;
    bool raises = false;
    std::string why;

    // Records `reason` at `at` (the first one only); false.
    bool fail(const Node& at, std::string reason) {
        if (why.empty()) why = fmt::format("line {}: {}", at.position().line, std::move(reason));
        return false;
    }

    // True for ROW, COL and PREV.
    bool separator_name(std::string_view name) const {
        return name == row || name == col || (!prev.empty() && name == prev);
    }

    // An operand of a test: names, numbers, attributes of names other than the separator's,
    // and `+`, `-`, `*` of them: nothing that can raise where the original would not evaluate
    // it (the static form evaluates every test at every position, where `and`/`or` skipped).
    // `mentions` is set when the separator's row, column or PREV is read.
    bool operand(const Node& e, bool& mentions);

    // A test in its elementwise spelling, or "" (with `why` set).
    std::string test(const Node& e);

    // `PREV + 1 : COL + 1`.
    bool span(const Node& s);

    // A write `X[ROW, ...] = VALUE` under `guard`.
    bool write(const Node& a, const std::string& guard);

    // `a & b`, either may be "" (true).
    static std::string conjoin(const std::string& a, const std::string& b);

    // The statements `steps`, writes and `if`s of writes, under `guard` (the static form's
    // test, "" for always); false (with `why` set) at one of another form.
    bool block(const std::vector<Node>& steps, const std::string& guard);
};

}  // namespace graphmend::rules::span_loop_detail

// The value analysis's private parts, shared by its files: values.cpp (the summaries, the
// interprocedural fixed point, joins), value_eval.cpp (expressions), value_calls.cpp (calls)
// and value_narrowing.cpp (isinstance tests, the parts of an `if` Dynamo never traces).
// Not installed: nothing outside src/analysis/ includes it. See include/graphmend/values.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graphmend/values.hpp"

namespace graphmend::analysis {

constexpr int kMaxDepth = 24;
constexpr int kReachingHop = 4;  // the depth one reaching assignment costs: at most 6 hops
constexpr std::size_t kMaxItems = 8;

struct Values::Frame {
    std::size_t file = 0;
    const Summary* summary = nullptr;                   // null outside analysed functions
    const std::map<std::string, Value>* env = nullptr;  // the function's names
    const std::set<std::string>* locals = nullptr;      // names the function binds
    /// Names a select's branch binds (branch_value), read before the function's.
    const std::map<std::string, Value>* overlay = nullptr;
};

/// The project class of a value that holds an instance of one (Value::cls "FILE:Class"), as
/// (file, class); nullopt for torch classes and values without a class.
std::optional<std::pair<std::size_t, std::string>> instance_of(const Value& v);

/// The value of a literal (a number, bool, None or string); a Value without kinds for any
/// other expression.
Value literal(const syntax::Node& e);

/// The join of all of a sequence's items (a Value without kinds for none).
Value join_items(const std::vector<Value>& items);

/// True when a comparison's operators are all identity or membership tests (`is`, `is not`,
/// `in`, `not in`): its value is a bool that reads no tensor data.
bool is_identity_or_membership(const syntax::Node& comparison);

/// The value of a call of torch.NAME that returns no tensor (see value_calls.cpp).
std::optional<Value> torch_static_value(const std::string& name);

/// The kinds the reads of a function narrowed by an isinstance test may have, by the read's
/// start byte (see value_narrowing.cpp).
std::map<std::uint32_t, std::uint16_t> isinstance_narrowing(const syntax::Node& fn);

}  // namespace graphmend::analysis

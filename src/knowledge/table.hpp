// What the knowledge layer's files share: a sorted table of names, searched by name, and the
// lists of each file's tables that knowledge::tables() gathers (see graphmend/knowledge.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <span>
#include <string_view>
#include <vector>

#include "graphmend/knowledge.hpp"

namespace graphmend::knowledge::detail {

/// True when the entries' names are sorted and unique (listed() searches them): each table
/// is checked by a static_assert beside it.
template <typename Entry, std::size_t N>
constexpr bool sorted(const std::array<Entry, N>& entries) {
    for (std::size_t i = 1; i < N; ++i) {
        if (!(entries[i - 1].name < entries[i].name)) return false;
    }
    return true;
}

/// The entry named `name` of a sorted table, or nullptr.
template <typename Entry>
const Entry* find(std::span<const Entry> entries, std::string_view name) {
    const auto it = std::lower_bound(entries.begin(), entries.end(), name,
                                     [](const Entry& e, std::string_view n) { return e.name < n; });
    return it != entries.end() && it->name == name ? &*it : nullptr;
}

template <typename Entry, std::size_t N>
bool listed(const std::array<Entry, N>& entries, std::string_view name) {
    return find(std::span<const Entry>(entries), name) != nullptr;
}

/// A table for knowledge::tables(): its entries' names and where they are defined.
template <typename Entry, std::size_t N>
Table table(std::string_view name, std::string_view source, const std::array<Entry, N>& entries) {
    Table t{name, source, {}};
    for (const Entry& e : entries) t.names.push_back(Name{e.name, e.where});
    return t;
}

// Each file's tables, in the order knowledge::tables() lists them.
void add_shape_tables(std::vector<Table>& out);
void add_tensor_tables(std::vector<Table>& out);
void add_module_tables(std::vector<Table>& out);
void add_logger_tables(std::vector<Table>& out);
void add_python_tables(std::vector<Table>& out);
void add_value_raising_tables(std::vector<Table>& out);
void add_untraceable_tables(std::vector<Table>& out);

}  // namespace graphmend::knowledge::detail

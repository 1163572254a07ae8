// Row-wise computation's parts, shared by the rowwise*.cpp files only (see rowwise.hpp for
// what they answer, rowwise.cpp for what is row-wise):
// - rowwise_modules.cpp: the modules a class holds in `self.NAME` (assignments, ModuleList and
//   ModuleDict items, changes to them);
// - rowwise.cpp: what a callable expression names (callable_of);
// - rowwise_flow.cpp, rowwise_calls.cpp: RowFlow, on expressions and on calls and statements.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rowwise.hpp"

namespace graphmend::rules::rowwise_detail {

using syntax::Node;

// The last component of a dotted name.
std::string_view last_part(std::string_view dotted);

// Every `self.NAME = VALUE` in the methods of a class (and of its project bases).
std::vector<std::pair<std::size_t, Node>> self_assignments(const Context& ctx, std::size_t file,
                                                            const std::string& cls, const std::string& name,
                                                            int depth = 0);

// Every `self.NAME[KEY] = VALUE` in the methods of a class: a ModuleDict / ModuleList filled
// item by item.
std::vector<Node> self_item_assignments(const Context& ctx, std::size_t file, const std::string& cls,
                                        const std::string& name);

// A ListOf (in `file`) whose element is what each of `items` (expressions of `item_file`, in
// methods of `cls`) makes, when they all make the same known thing; none otherwise.
Callable one_class_list(const Context& ctx, std::size_t item_file, const std::string& cls,
                        const std::vector<Node>& items, std::size_t file, int depth);

// The items of a ModuleDict / ModuleList subclass `cls` that fills itself in its methods
// (`self[f"expert_{i}"] = C(config)`, transformers 5.x): every item of one class, and nothing
// else adds, removes or replaces items (no other `self.update(...)`, `del self[...]`, no items
// passed to `super().__init__`). A module the class assigns to an attribute of itself is an item
// too (nn.Module.__setattr__ registers it): a ModuleDict's key must then be a string or f-string
// whose literal start no such attribute name has, and a ModuleList may assign none. A ListOf, or
// none.
Callable self_items(const Context& ctx, std::size_t file, const std::string& cls, const Node& key, int depth);

// True when a method of the class calls a mutating method on `self.NAME` (append, extend,
// insert, update, ...) or assigns one of its items.
bool container_changed(const Context& ctx, std::size_t file, const std::string& cls, const std::string& name);

// Whether class `cls` of `file`, which inherits `forward` from class `base` of another file,
// makes a `self.NAME` that base's methods read mean something else: a method of that name
// found first on another class, or bindings of NAME that base's own do not account for (the
// name, or ""). The row-wise check reads an inherited forward in its own file, with base's
// bindings and methods.
std::string overridden_across_files(const Context& ctx, std::size_t file, const std::string& cls,
                                    const analysis::FunctionRef& forward, const Node& base_node,
                                    const std::string& base);

}  // namespace graphmend::rules::rowwise_detail

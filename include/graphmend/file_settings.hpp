// What the configuration says for one file: the type the configuration (config.hpp) makes
// and the driver (fixer.hpp) reads, in a header of its own so that neither includes the other.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace graphmend {

/// What the configuration (see config.hpp) says for one file.
struct FileSettings {
    std::vector<std::string> selected;  // the codes of the rules whose sites are kept
    std::optional<bool> unsafe_fixes;   // set: replaces FixOptions::unsafe_fixes for this file
    /// Sites whose fixes are held back (`fix --verify` reverted them): (line, code). Such a site
    /// is reported refused, with held_reason.
    std::vector<std::pair<std::uint32_t, std::string>> held;
    std::string held_reason;
    /// Lines (1-based) whose innermost enclosing `def` runs under torch.compile (--scope-root:
    /// verify passes the frames Dynamo traced in the original run): entry points of the
    /// compiled scope besides the ones the sources show.
    std::vector<std::uint32_t> scope_roots;
    /// Lines (1-based) where Dynamo reported a data-dependent branch (--data-test: verify passes
    /// the GB0170 breaks of the original run): a test there reads tensor data.
    std::vector<std::uint32_t> data_tests;
    /// Lines (1-based) where Dynamo reported reading a tensor's value into Python (--data-read:
    /// verify passes the GB0124 and GB0109 breaks of the original run).
    std::vector<std::uint32_t> data_reads;
    /// Lines (1-based) where Dynamo reported a data-dependent operator (--data-operator: verify
    /// passes the GB0033 breaks of the original run).
    std::vector<std::uint32_t> data_operators;
};

}  // namespace graphmend

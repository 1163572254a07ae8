// Where a rewritten file gets graphmend's runtime: see runtime_placement.hpp.
#include "runtime_placement.hpp"

#include <algorithm>
#include <stdexcept>

#include "graphmend/runtime_sources.hpp"

namespace graphmend::fix {

using syntax::Node;

namespace {

std::string_view runtime_source(const std::string& stem) {
    if (const runtime::Block* block = runtime::block_named(stem)) return block->source;
    throw std::logic_error("unknown runtime block: " + stem);
}

// The runtime block in the file's line endings and indentation, without leading or
// trailing blank lines. The block is written with 4-space indentation.
std::string runtime_text(const std::string& stem, std::string_view eol, const std::string& indent) {
    std::string_view src = runtime_source(stem);
    while (!src.empty() && src.front() == '\n') src.remove_prefix(1);
    while (!src.empty() && src.back() == '\n') src.remove_suffix(1);
    std::string out;
    bool line_start = true;
    for (std::size_t i = 0; i < src.size(); ++i) {
        if (src[i] == '\n') {
            out += eol;
            line_start = true;
        } else if (line_start && src.substr(i).starts_with("    ")) {
            out += indent;
            i += 3;
        } else {
            line_start = false;
            out += src[i];
        }
    }
    return out;
}

}  // namespace

// The file's indentation unit: a tab, or the spaces of its first indented line.
std::string indent_unit(const analysis::SourceFile& file) {
    // The leading blanks of the first indented block's first statement (docstrings and
    // continuation lines do not count).
    const auto& src = file.tree.source();
    std::string unit;
    syntax::walk(file.tree.root(), [&](const Node& n) {
        if (!unit.empty()) return false;
        if (!n.is("block") || n.named_children().empty()) return true;
        const Node first = n.named_children()[0];
        const Node owner = n.parent();
        if (first.position().line == owner.position().line) return true;
        const std::string_view line = src.slice(src.line_start(first.position().line), first.begin());
        const std::string_view outer = src.slice(src.line_start(owner.position().line), owner.begin());
        if (line.size() > outer.size() && line.find_first_not_of(" \t") == std::string_view::npos) {
            unit = std::string(line.substr(outer.size()));
        }
        return unit.empty();
    });
    return unit.empty() ? "    " : unit;
}

edits::Edit runtime_edit(const analysis::SourceFile& file, const std::vector<std::string>& stems,
                         const std::vector<edits::Edit>& accepted) {
    const auto& source = file.tree.source();
    const std::string& text = source.text();
    const std::string eol(source.eol());
    std::string block;
    const std::string indent = indent_unit(file);
    for (const auto& stem : stems) block += runtime_text(stem, eol, indent) + eol;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> spans;
    for (const auto& e : accepted) spans.emplace_back(e.begin, std::max(e.end, e.begin + 1));
    if (const auto place = runtime_module::runtime_place(file.tree.root(), spans)) {
        return {*place, *place, block + eol + eol};
    }
    const bool ends_with_newline = !text.empty() && text.back() == '\n';
    const auto end = static_cast<std::uint32_t>(text.size());
    return {end, end, (ends_with_newline || text.empty() ? "" : eol) + eol + eol + block};
}

// The runtime block of `stem` the file holds, from its first marker line to the end of its
// end marker line, when its text is not this version's: an edit that writes this version's
// (in the file's line endings and indentation). nullopt when it is current or its end is
// not found (a block edited by hand is left alone).
std::optional<edits::Edit> stale_runtime_edit(const analysis::SourceFile& file, const std::string& stem) {
    const auto& source = file.tree.source();
    const std::string& text = source.text();
    const std::string current = runtime_text(stem, source.eol(), indent_unit(file));
    const std::string first = std::string(runtime::kMarker) + stem + " ";
    const std::string last = "# --- end of graphmend runtime: " + stem + " ---";
    std::size_t begin = std::string::npos;
    for (std::size_t at = text.find(first); at != std::string::npos; at = text.find(first, at + 1)) {
        if (at == 0 || text[at - 1] == '\n') {
            begin = at;
            break;
        }
    }
    if (begin == std::string::npos) return std::nullopt;
    const std::size_t end_at = text.find(last, begin);
    if (end_at == std::string::npos) return std::nullopt;
    const std::size_t end = end_at + last.size();
    if (std::string_view(text).substr(begin, end - begin) == current) return std::nullopt;
    return edits::Edit{static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(end), current};
}

// The Module form: `fixed` with the file's import of the runtime module naming every helper
// it uses (added, or extended in place).
std::string with_module_import(std::string fixed, const runtime_module::ImportForm& form, const std::string& indent,
                               FileOutcome& out) {
    const syntax::Tree tree = syntax::Tree::parse(fixed);
    if (tree.error()) return fixed;  // reported by the caller
    const auto edit = runtime_module::import_edit(tree, form, indent);
    out.imports_runtime = edit.has_value() || runtime_module::imports_module(tree.root());
    return edit ? edits::apply(fixed, {*edit}) : fixed;
}

}  // namespace graphmend::fix

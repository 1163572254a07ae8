// The sources of a project's files: a pruned file read again from disk, and the words of a
// text (SourceFile::words). See include/graphmend/analysis.hpp.
#include <algorithm>
#include <cctype>
#include <functional>

#include "graphmend/analysis.hpp"

namespace graphmend::analysis {

DiskText DiskText::of(std::string_view bytes) {
    return {bytes.size(), std::hash<std::string_view>{}(bytes), false};
}

std::string read_source(const SourceFile& file) {
    if (!file.pruned) return file.tree.source().text();
    if (!file.on_disk) return file.text;
    std::string bytes;
    try {
        bytes = syntax::read_file(file.path);
    } catch (const std::runtime_error& e) {
        throw SourceChanged(e.what());
    }
    const DiskText now = DiskText::of(bytes);
    if (!now.same_bytes(*file.on_disk)) {
        throw SourceChanged(file.path + ": changed on disk while graphmend read it");
    }
    if (file.on_disk->lone_crs) syntax::lf_for_lone_crs(bytes);
    return bytes;
}

namespace {

std::uint32_t word_hash(std::string_view word) {
    const std::uint64_t h = std::hash<std::string_view>{}(word);
    return static_cast<std::uint32_t>(h ^ (h >> 32));
}

}  // namespace

std::vector<std::uint32_t> word_hashes(std::string_view text) {
    const auto in_word = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || static_cast<unsigned char>(c) >= 0x80;
    };
    std::vector<std::uint32_t> out;
    for (std::size_t i = 0; i < text.size();) {
        if (!in_word(text[i])) {
            ++i;
            continue;
        }
        std::size_t end = i;
        while (end < text.size() && in_word(text[end])) ++end;
        out.push_back(word_hash(text.substr(i, end - i)));
        i = end;
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    out.shrink_to_fit();
    return out;
}

bool mentions(const SourceFile& file, std::string_view name) {
    return std::binary_search(file.words.begin(), file.words.end(), word_hash(name));
}

}  // namespace graphmend::analysis

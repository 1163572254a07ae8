// Fuzzing entry point for the whole pipeline: parse -> analyse -> fix -> re-parse (issue 12).
//
// fuzz_one(data, size) runs graphmend's fix on `data` as one file, then checks what a fix
// promises and aborts (a crash the fuzzer or the sanitizers report) when one fails:
// - the fixed text parses, or the input is reported as a syntax or internal error and left
//   byte for byte as it was;
// - a file with no applied fix is byte-identical;
// - a second fix of the fixed text changes nothing (idempotence);
// - every site's byte range lies inside the original text.
//
// Built two ways from this one file:
// - with clang and -fsanitize=fuzzer (-DGRAPHMEND_LIBFUZZER=ON): LLVMFuzzerTestOneInput is the
//   libFuzzer entry point;
// - otherwise (g++, the default here), a standalone driver: `graphmend_fuzz SECONDS CORPUS...`
//   runs every seed file, then mutates seeds (byte flips, deletions, duplications, splices,
//   Python tokens inserted, CRLF or lone-CR line endings) for SECONDS, with a fixed seed per run printed at start
//   (GRAPHMEND_FUZZ_SEED sets it). `graphmend_fuzz --runs=N CORPUS...` mutates N inputs
//   instead: with a fixed seed, the same inputs on every machine, however fast (seed files
//   are read in sorted path order). Each input is first written to ./graphmend-fuzz-input.py,
//   so the one that aborts is left there; a clean run removes the file.
//   `graphmend_fuzz 0 FILE...` replays files.
// The sanitizer build (-DGRAPHMEND_SANITIZE=ON: ASan + UBSan, no recovery) is how CI and
// CONTRIBUTING.md run it.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "graphmend/fixer.hpp"

namespace {

using graphmend::FileOutcome;
using graphmend::FixOptions;

[[noreturn]] void fail(const std::string& what, const std::string& input) {
    std::cerr << "graphmend_fuzz: invariant broken: " << what << "\n--- input (" << input.size() << " bytes) ---\n"
              << input << "\n--- end ---\n";
    std::abort();
}

FileOutcome fix(const std::string& text) { return graphmend::fix_files({{"fuzz.py", text}}, FixOptions{}).at(0); }

}  // namespace

int fuzz_one(const std::uint8_t* data, std::size_t size) {
    if (size > (1U << 20)) return 0;  // inputs stay small: time goes to variety, not length
    const std::string input(reinterpret_cast<const char*>(data), size);
    const FileOutcome first = fix(input);
    if (first.original != input) fail("the outcome's original differs from the input", input);
    for (const auto& site : first.sites) {
        if (site.begin > site.end || site.end > input.size()) fail("a site's range lies outside the text", input);
    }
    if (first.error) {
        if (first.fixed != input) fail("a file with an error was changed", input);
        return 0;
    }
    bool any_applied = false;
    for (const bool a : first.applied) any_applied = any_applied || a;
    if (!any_applied && first.fixed != input) fail("a file with no applied fix was changed", input);
    if (first.fixed == input) return 0;
    // Read back as the driver reads a file (a lone-CR file as its LF copy), the fixed text
    // parses and fixes to itself.
    const FileOutcome second = fix(first.fixed);
    if (second.error) fail("the fixed text does not parse: " + *second.error, input);
    if (second.fixed != first.fixed) fail("a second fix changed the fixed text", input);
    return 0;
}

#ifdef GRAPHMEND_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { return fuzz_one(data, size); }
#else
namespace {

std::string read(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Tokens worth inserting: the syntax the rules look at, and the grammar's hard spots.
const std::vector<std::string> kTokens = {
    "if ", "else:", "elif ", "while ", "for ", " in ", "return ", "raise ", "assert ", "print(", "logger.warning(",
    "warnings.warn(", "torch.where(", ".item()", ".tolist()", ".nonzero()", ".any()", ".all()", ".sum()",
    "torch.isnan(", "self.", "def forward(self, x):\n", "class M(nn.Module):\n", "    ", "\n", "\r\n", "\r", "(",
    ")", "[", "]", "{", "}", ":", ",", "*", "**", "=", "==", " and ", " or ", " not ", "lambda: ", "'", "\"",
    "\"\"\"", "f\"{", "}\"", "#", "\\\n", "async ", "await ", "yield ", "with ", "try:\n", "except E:\n", "@torch.compile\n",
    "x = a, *[1]\n", "(bar.\nbaz)", "\xef\xbb\xbf", "\xff", "\t"};

std::string mutate(std::string s, const std::vector<std::string>& seeds, std::mt19937_64& rng) {
    const auto pick = [&](std::size_t n) { return n == 0 ? std::size_t{0} : std::size_t(rng() % n); };
    const int rounds = 1 + int(rng() % 4);
    for (int r = 0; r < rounds; ++r) {
        const std::size_t at = pick(s.size() + 1);
        switch (rng() % 7) {
            case 6: {  // line endings: all LF -> CRLF or lone CR (the file-level conventions)
                const std::string eol = rng() % 2 ? "\r\n" : "\r";
                std::string out;
                for (const char c : s) out += c == '\n' ? eol : std::string(1, c);
                s = std::move(out);
                break;
            }
            case 0:  // flip a byte
                if (!s.empty()) s[pick(s.size())] ^= char(1U << (rng() % 8));
                break;
            case 1:  // delete a run
                if (!s.empty()) s.erase(at > 0 ? at - 1 : 0, 1 + pick(16));
                break;
            case 2: {  // duplicate a run (deep nesting, long chains)
                const std::size_t len = 1 + pick(32);
                if (at + len <= s.size()) {
                    const std::string run = s.substr(at, len);
                    for (std::size_t k = 0, n = 1 + pick(64); k < n; ++k) s.insert(at, run);
                }
                break;
            }
            case 3:  // splice in part of another seed
                if (!seeds.empty()) {
                    const std::string& o = seeds[pick(seeds.size())];
                    const std::size_t from = pick(o.size());
                    s.insert(at, o.substr(from, pick(400)));
                }
                break;
            default:  // insert a token
                s.insert(at, kTokens[pick(kTokens.size())]);
                break;
        }
    }
    return s;
}

const char* const kInputFile = "graphmend-fuzz-input.py";

void run_one(const std::string& input) {
    std::ofstream(kInputFile, std::ios::binary | std::ios::trunc) << input;
    fuzz_one(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::cerr << "usage: graphmend_fuzz SECONDS|--runs=N CORPUS_DIR_OR_FILE...\n"
                     "  runs every seed, then mutates seeds for SECONDS, or N times (0: replay only)\n";
        return 2;
    }
    const std::string budget = argv[1];
    const bool by_count = budget.rfind("--runs=", 0) == 0;
    const double seconds = by_count ? 0.0 : std::atof(argv[1]);
    const std::uint64_t max_runs = by_count ? std::strtoull(budget.c_str() + 7, nullptr, 10) : 0;
    // Seeds in sorted path order: a directory's listing order differs between file systems,
    // and the mutated inputs follow from the seed list and the random seed.
    std::vector<std::filesystem::path> paths;
    for (int i = 2; i < argc; ++i) {
        const std::filesystem::path p(argv[i]);
        if (std::filesystem::is_directory(p)) {
            std::vector<std::filesystem::path> found;
            for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
                if (e.is_regular_file()) found.push_back(e.path());
            }
            std::sort(found.begin(), found.end());
            paths.insert(paths.end(), found.begin(), found.end());
        } else {
            paths.push_back(p);
        }
    }
    std::vector<std::string> seeds;
    for (const auto& p : paths) seeds.push_back(read(p));
    for (const auto& s : seeds) run_one(s);
    std::filesystem::remove(kInputFile);
    std::cout << "graphmend_fuzz: " << seeds.size() << " seeds pass" << std::endl;
    if ((seconds <= 0 && max_runs == 0) || seeds.empty()) return 0;
    const char* env = std::getenv("GRAPHMEND_FUZZ_SEED");
    const std::uint64_t seed = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
    if (by_count) {
        std::cout << "graphmend_fuzz: seed " << seed << ", " << max_runs << " inputs" << std::endl;
    } else {
        std::cout << "graphmend_fuzz: seed " << seed << ", " << seconds << " s" << std::endl;
    }
    std::mt19937_64 rng(seed);
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::uint64_t runs = 0;
    while (by_count ? runs < max_runs : std::chrono::steady_clock::now() < end) {
        run_one(mutate(seeds[rng() % seeds.size()], seeds, rng));
        ++runs;
    }
    std::filesystem::remove(kInputFile);
    std::cout << "graphmend_fuzz: " << runs << " inputs, no invariant broken, no crash" << std::endl;
    return 0;
}
#endif

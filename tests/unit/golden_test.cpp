// Golden tests: every rule's fixtures under tests/fixtures/<rule>/.
//
// A fixture is a file `NAME.py` (fixed alone) or a folder `NAME/` (its *.py files fixed
// together as one project). Beside it: `NAME.expected.py` (or the folder
// `NAME.expected/`) holds the fixed text, and `NAME.report.txt` the report; a NAME ending
// in `_unsafe` is fixed with --unsafe-fixes. The handed
// cases in tests/cases/ are fixtures too; their expectations live in tests/fixtures/cases/. Fixing the
// expected text again must change nothing. The runtime block a fix appends
// (src/runtime/*.py) is kept in the expectations as one line, `# <graphmend runtime block: STEM>`,
// so that editing the runtime does not touch every golden file.
// GRAPHMEND_UPDATE_GOLDEN=1 rewrites the expectations from the current output (review the
// diff before committing).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "graphmend/fixer.hpp"
#include "graphmend/output.hpp"
#include "graphmend/runtime_sources.hpp"

namespace fs = std::filesystem;
using namespace graphmend;

namespace {

const fs::path kRoot = GRAPHMEND_SOURCE_DIR;

bool is_expectation(const fs::path& p) {
    const auto name = p.filename().string();
    return name.ends_with(".expected.py") || name.ends_with(".expected") || name.ends_with(".report.txt");
}

std::vector<std::string> fixtures() {
    std::vector<std::string> out;
    for (const auto& rule : fs::directory_iterator(kRoot / "tests/fixtures")) {
        if (!rule.is_directory()) continue;
        for (const auto& entry : fs::directory_iterator(rule.path())) {
            const auto& p = entry.path();
            if (is_expectation(p) || p.filename().string().starts_with(".") || p.filename() == "__pycache__") continue;
            if (entry.is_directory() || p.extension() == ".py") out.push_back(fs::relative(p, kRoot).string());
        }
    }
    for (const auto& entry : fs::directory_iterator(kRoot / "tests/cases")) {
        if (entry.path().extension() == ".py") out.push_back(fs::relative(entry.path(), kRoot).string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

// Where a fixture's expectations live, without their suffix.
std::string expectation_base(const std::string& fixture) {
    if (fixture.starts_with("tests/cases/")) return "tests/fixtures/cases/" + fs::path(fixture).stem().string();
    return fs::is_directory(kRoot / fixture) ? fixture : fixture.substr(0, fixture.size() - 3);
}

std::vector<std::string> sources_of(const std::string& fixture) {
    std::vector<std::string> files;
    for (const auto& f : output::collect_python_files({(kRoot / fixture).string()})) {
        if (!is_expectation(f)) files.push_back(fs::relative(f, kRoot).string());
    }
    return files;
}

constexpr std::string_view kBlockStart = graphmend::runtime::kMarker;
constexpr std::string_view kBlockEnd = graphmend::runtime::kEndMarker;

// The text with each runtime block replaced by a one-line stand-in naming it.
std::string fold_runtime(std::string text) {
    for (auto start = text.find(kBlockStart); start != std::string::npos; start = text.find(kBlockStart, start + 1)) {
        const auto stem_begin = start + kBlockStart.size();
        const std::string stem = text.substr(stem_begin, text.find(' ', stem_begin) - stem_begin);
        const auto last = text.find(std::string(kBlockEnd) + stem, start);
        if (last == std::string::npos) break;
        const auto line_end = text.find('\n', last);
        const auto cut_end = line_end == std::string::npos ? text.size() : line_end;
        const bool crlf = cut_end > 0 && text[cut_end - 1] == '\r';
        text.replace(start, cut_end - start - (crlf ? 1 : 0), "# <graphmend runtime block: " + stem + ">");
    }
    return text;
}

// A fixture whose name ends in `_unsafe` is fixed with --unsafe-fixes.
std::vector<FileOutcome> run_fix(const std::string& fixture, const std::vector<std::string>& files,
                                 const std::vector<std::string>& texts) {
    std::vector<InputFile> inputs;
    for (std::size_t i = 0; i < files.size(); ++i) inputs.push_back({files[i], texts[i]});
    FixOptions options;
    options.unsafe_fixes = fs::path(fixture).stem().string().ends_with("_unsafe");
    return fix_files(std::move(inputs), options);
}

// Where a source file's expected fixed text lives.
fs::path expected_path(const std::string& fixture, const std::string& file) {
    if (fs::is_directory(kRoot / fixture)) {
        return kRoot / (fixture + ".expected") / fs::relative(kRoot / file, kRoot / fixture);
    }
    return kRoot / (expectation_base(fixture) + ".expected.py");
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, FixedTextAndReportMatch) {
    const std::string fixture = GetParam();
    const auto files = sources_of(fixture);
    std::vector<std::string> texts;
    for (const auto& f : files) texts.push_back(syntax::read_file((kRoot / f).string()));
    ::chdir(kRoot.c_str());
    const auto outcomes = run_fix(fixture, files, texts);
    std::string report;
    for (const auto& o : outcomes) report += output::text_report(o, output::Mode::Fix);  // as `fix` reports
    const fs::path report_path = kRoot / (expectation_base(fixture) + ".report.txt");
    if (std::getenv("GRAPHMEND_UPDATE_GOLDEN") != nullptr) {
        output::write_atomically(report_path.string(), report);
        for (const auto& o : outcomes) {
            const auto p = expected_path(fixture, o.path);
            fs::create_directories(p.parent_path());
            output::write_atomically(p.string(), fold_runtime(o.fixed));
        }
        GTEST_SKIP() << "expectations rewritten";
    }
    EXPECT_EQ(report, syntax::read_file(report_path.string())) << "report of " << fixture;
    std::vector<std::string> fixed;
    for (const auto& o : outcomes) {
        const std::string want = syntax::read_file(expected_path(fixture, o.path).string());
        EXPECT_EQ(fold_runtime(o.fixed), want) << output::unified_diff(o.path, want, fold_runtime(o.fixed));
        fixed.push_back(o.fixed);
    }
    // A second run over the fixed text changes nothing.
    for (const auto& o : run_fix(fixture, files, fixed)) {
        EXPECT_FALSE(o.changed()) << "not idempotent: " << output::unified_diff(o.path, o.original, o.fixed);
    }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Golden, ::testing::ValuesIn(fixtures()), [](const auto& info) {
    std::string name;
    for (char c : info.param) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return name;
});

}  // namespace

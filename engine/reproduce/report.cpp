// A reproduction's result as JSON (the report), CSV and the text table (reproduce.h).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "reproduce/reproduce.h"
#include "sys/cpu_identity.h"

namespace ensemble::reproduce {
namespace {

using nlohmann::json;

json finiteOrNull(double v) {
    return std::isfinite(v) ? json(v) : json(nullptr);
}

const char* verdictName(Verdict v) {
    switch (v) {
        case Verdict::Pass:
            return "pass";
        case Verdict::Fail:
            return "fail";
        case Verdict::None:
            return "none";
    }
    return "none";
}

std::string reportNumber(double v) {
    if (!std::isfinite(v)) {
        return "";
    }
    // to_chars, not printf: the app runs under the user's LC_NUMERIC, where "%g" writes
    // "0,5" and breaks the CSV line (and the figure that reads it back).
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
    return std::string(buf, r.ptr);
}

// "6.03 ± 0.58", "[1.0, 1.8]" ("145 in [96.6667, 217.5]" with the paper's number), ">= 2",
// "<= 0.7 x random" (a claim against another level), the paper's number of a measurement, or "".
std::string paperText(const Check& c) {
    switch (c.kind) {
        case VerdictKind::Numeric:
            return c.printedValue + " ± " + c.printedSpread;
        case VerdictKind::Band:
            return (c.printedValue.empty() ? "" : c.printedValue + " in ") + "[" +
                   reportNumber(c.low) + ", " + reportNumber(c.high) + "]";
        case VerdictKind::Claim:
            return std::string(c.test == ClaimTest::AtLeast ? ">= " : "<= ") +
                   (c.versus.empty() ? reportNumber(c.threshold)
                                     : reportNumber(c.factor) + " x " + c.versus);
        case VerdictKind::Measurement:
            return c.printedValue;
    }
    return "";
}

// Ours in words: "6.1 ± 0.12", "145" (a level figure: no se), "> 250" (not reached within the
// budget), "-" (not finite).
std::string oursWords(const Aggregate& a) {
    char buf[64];
    if (std::isfinite(a.beyond)) {
        std::snprintf(buf, sizeof buf, "> %.6g", a.beyond);
    } else if (!std::isfinite(a.mean)) {
        std::snprintf(buf, sizeof buf, "-");
    } else if (std::isfinite(a.se)) {
        std::snprintf(buf, sizeof buf, "%.4g ± %.2g", a.mean, a.se);
    } else {
        std::snprintf(buf, sizeof buf, "%.4g", a.mean);
    }
    return buf;
}

// "5.23 ± 0.12" of another published column ("90" when printed without a spread); several
// joined by "; ".
std::string besideText(const Check& c) {
    std::string text;
    for (const Published& p : c.beside) {
        text += (text.empty() ? "" : "; ") + p.printedValue +
                (p.printedSpread.empty() ? "" : " ± " + p.printedSpread);
    }
    return text;
}

json besideJson(const Check& c) {
    json out = json::array();
    for (const Published& p : c.beside) {
        const bool spread = !p.printedSpread.empty();
        json entry = {
            {"label", p.label},
            {"printed", p.printedValue + (spread ? " ± " + p.printedSpread : std::string())},
            {"value", printedNumber(p.printedValue)},
            // floored at half its last digit, as the paper's "spread" is; null: none printed
            {"spread",
             spread ? json(std::max(printedNumber(p.printedSpread), halfLastDigit(p.printedSpread)))
                    : json(nullptr)},
            {"source", p.source}};
        if (!p.printedAs.empty()) {
            entry["printed_as"] = p.printedAs;
        }
        out.push_back(std::move(entry));
    }
    return out;
}

// The label of the result's other published column ("MC dropout"), or empty when no row has
// one: the text table shows the column only then.
std::string besideLabel(const ReproductionResult& result) {
    for (const ResultRow& row : result.rows) {
        if (!row.check->beside.empty()) {
            return row.check->beside.front().label;
        }
    }
    return "";
}

struct VerdictCounts {
    int pass = 0;
    int fail = 0;
    int measured = 0;
};

VerdictCounts countVerdicts(const ReproductionResult& result) {
    VerdictCounts counts;
    for (const ResultRow& row : result.rows) {
        switch (row.judgement.verdict) {
            case Verdict::Pass:
                ++counts.pass;
                break;
            case Verdict::Fail:
                ++counts.fail;
                break;
            case Verdict::None:
                ++counts.measured;
                break;
        }
    }
    return counts;
}

}  // namespace

json reportJson(const ReproductionResult& result) {
    const Reproduction& r = *result.reproduction;
    json rows = json::array();
    for (const ResultRow& row : result.rows) {
        const Check& c = *row.check;
        json paper = nullptr;
        if (c.kind != VerdictKind::Measurement || !c.source.empty()) {
            paper = {{"source", c.source}};
            if (c.kind == VerdictKind::Numeric) {
                paper["printed"] = paperText(c);
                paper["value"] = row.judgement.paper;
                paper["spread"] = row.judgement.paperSe;
            } else if (c.kind == VerdictKind::Band) {
                paper["low"] = c.low;
                paper["high"] = c.high;
            } else if (c.kind == VerdictKind::Claim) {
                paper["claim"] = c.claim;
                paper["printed"] = paperText(c);
                if (!c.versus.empty()) {
                    paper["versus"] = c.versus;
                    paper["factor"] = c.factor;
                }
            }
            if (c.kind != VerdictKind::Numeric && c.kind != VerdictKind::Claim &&
                !c.printedValue.empty()) {
                paper["printed"] = c.printedValue;  // shown beside ours, not judged as a number
                paper["value"] = printedNumber(c.printedValue);
            }
            if (!c.printedAs.empty()) {
                paper["printed_as"] = c.printedAs;
            }
        }
        json ours = {{"n", row.ours.n},
                     {"mean", finiteOrNull(row.ours.mean)},
                     {"se", finiteOrNull(row.ours.se)},
                     {"of", row.ours.level ? "level" : "run"}};
        if (std::isfinite(row.ours.beyond)) {
            ours["not_reached_within"] = row.ours.beyond;
        }
        json out = {{"level", c.level},         {"figure", c.figure},
                    {"kind", toString(c.kind)}, {"ours", std::move(ours)},
                    {"paper", paper},           {"verdict", verdictName(row.judgement.verdict)},
                    {"why", row.judgement.why}};
        if (!c.beside.empty()) {
            out["beside"] = besideJson(c);
        }
        if (c.kind == VerdictKind::Numeric) {
            out["tolerance"] = finiteOrNull(row.judgement.tolerance);
            out["difference"] = finiteOrNull(row.judgement.difference);
        }
        rows.push_back(std::move(out));
    }
    json runs = json::array();
    for (const RunOutcome& o : result.outcomes) {
        json figures = json::object();
        for (const auto& [name, value] : o.figures) {
            figures[name] = finiteOrNull(value);
        }
        runs.push_back({{"level", o.level},
                        {"index", o.index},
                        {"seed", o.seed},
                        {"seconds", o.seconds},
                        {"figures", std::move(figures)}});
    }
    const VerdictCounts counts = countVerdicts(result);
    const CpuIdentity& cpu = cpuIdentity();
    return {
        {"id", r.id},
        {"title", r.title},
        {"paper", r.paper},
        {"where", r.where},
        {"runs_what", r.runs},
        {"unit", r.unit},
        {"count", result.plan.size()},
        {"quick", result.options.quick},
        {"overrides", result.options.overrides},
        {"complete", result.complete},
        {"backend", result.backend},
        {"cpu",
         {{"vendor", cpu.vendor},
          {"family", cpu.family},
          {"model", cpu.model},
          {"stepping", cpu.stepping},
          {"isa", cpu.isa},
          {"brand", cpu.brand}}},
        {"seconds", result.seconds},
        {"deviations", r.deviations},
        {"rows", std::move(rows)},
        {"runs", std::move(runs)},
        {"summary", {{"pass", counts.pass}, {"fail", counts.fail}, {"measured", counts.measured}}}};
}

std::map<std::string, std::string> resultCsvs(const ReproductionResult& result) {
    std::map<std::string, std::string> files;
    // runs.csv: one row per run, one column per figure any run has.
    std::set<std::string> names;
    for (const RunOutcome& o : result.outcomes) {
        for (const auto& entry : o.figures) {
            names.insert(entry.first);
        }
    }
    std::ostringstream runs;
    runs << "level,index,seed,seconds";
    for (const std::string& name : names) {
        runs << ',' << name;
    }
    runs << '\n';
    for (const RunOutcome& o : result.outcomes) {
        runs << o.level << ',' << o.index << ',' << o.seed << ',' << reportNumber(o.seconds);
        for (const std::string& name : names) {
            const auto it = o.figures.find(name);
            runs << ',' << (it == o.figures.end() ? "" : reportNumber(it->second));
        }
        runs << '\n';
    }
    files["runs.csv"] = runs.str();

    std::ostringstream table;
    // Another published column ("MC dropout") goes last, as "beside", when a row has one; then,
    // when a row is a level figure, what ours is of and the budget a figure was not reached in.
    const bool beside = !besideLabel(result).empty();
    const bool levels = std::any_of(result.rows.begin(), result.rows.end(),
                                    [](const ResultRow& row) { return row.ours.level; });
    table << "level,figure,kind,n,ours_mean,ours_se,paper,verdict" << (beside ? ",beside" : "")
          << (levels ? ",ours_of,not_reached_within" : "") << '\n';
    for (const ResultRow& row : result.rows) {
        table << row.check->level << ',' << row.check->figure << ',' << toString(row.check->kind)
              << ',' << row.ours.n << ',' << reportNumber(row.ours.mean) << ','
              << reportNumber(row.ours.se) << ",\"" << paperText(*row.check) << "\","
              << verdictName(row.judgement.verdict);
        if (beside) {
            table << ",\"" << besideText(*row.check) << '"';
        }
        if (levels) {
            table << ',' << (row.ours.level ? "level" : "run") << ','
                  << reportNumber(row.ours.beyond);
        }
        table << '\n';
    }
    files["table.csv"] = table.str();

    // The curves the runs drew, with their headers.
    static const std::map<std::string, std::string> kCurveHeaders = {
        {"curves.csv", "panel,seed,x,mean,std,lower_3sd,upper_3sd"},
        {"points.csv", "panel,seed,x,y"},
        {"active_curves.csv", "acquisition,seed,round,labels,accuracy,nll,ece"},
    };
    for (const RunOutcome& o : result.outcomes) {
        for (const auto& [name, lines] : o.csvLines) {
            std::string& text = files[name];
            if (text.empty()) {
                const auto header = kCurveHeaders.find(name);
                text = (header == kCurveHeaders.end() ? std::string() : header->second) + "\n";
            }
            for (const std::string& line : lines) {
                text += line + '\n';
            }
        }
    }
    return files;
}

namespace {

// `s` and blanks to `width` columns ("±" is two bytes and one column).
std::string reproPadColumns(const std::string& s, int width) {
    int shown = 0;
    for (unsigned char ch : s) {
        shown += (ch & 0xC0) != 0x80 ? 1 : 0;
    }
    return s + std::string(static_cast<std::size_t>(std::max(0, width - shown)), ' ');
}

}  // namespace

std::string resultTable(const ReproductionResult& result) {
    std::ostringstream os;
    char line[320];
    // Another published column ("MC dropout") after the paper's, when a row has one.
    const std::string besideHeader = besideLabel(result);
    const auto besideColumn = [&](const std::string& text) {
        return besideHeader.empty()
                   ? std::string()
                   : reproPadColumns(text,
                                     std::max<int>(14, static_cast<int>(besideHeader.size()))) +
                         " ";
    };
    std::snprintf(line, sizeof line, "%-26s %-20s %s %4s  %s %s%s\n", "level", "figure",
                  reproPadColumns("ours (mean ± se)", 22).c_str(), "n",
                  reproPadColumns("paper", 14).c_str(), besideColumn(besideHeader).c_str(),
                  "verdict");
    os << line;
    for (const ResultRow& row : result.rows) {
        const Check& c = *row.check;
        const std::string ours = oursWords(row.ours);
        const std::string verdict =
            row.judgement.verdict == Verdict::None
                ? std::string("(measured)")
                : std::string(verdictName(row.judgement.verdict)) + "  " + row.judgement.why;
        std::snprintf(line, sizeof line, "%-26s %-20s %s %4d  %s %s%s\n", c.level.c_str(),
                      c.figure.c_str(), reproPadColumns(ours, 22).c_str(), row.ours.n,
                      reproPadColumns(paperText(c), 14).c_str(),
                      besideColumn(besideText(c)).c_str(), verdict.c_str());
        os << line;
    }
    const VerdictCounts counts = countVerdicts(result);
    std::snprintf(line, sizeof line, "%d pass, %d fail, %d measured without a verdict\n",
                  counts.pass, counts.fail, counts.measured);
    os << line;
    if (std::any_of(result.rows.begin(), result.rows.end(),
                    [](const ResultRow& row) { return row.ours.level; })) {
        os << "a level figure (labels to reach an accuracy) is read off the mean curve over the "
              "level's runs: one number, no standard error; \"> N\": not reached within N\n";
    }
    return os.str();
}

std::string costText(double seconds) {
    char buf[32];
    if (seconds <= 0.0) {
        return "not measured";
    }
    if (seconds < 10.0) {
        std::snprintf(buf, sizeof buf, "%.1f s", seconds);
    } else if (seconds < 90.0) {
        std::snprintf(buf, sizeof buf, "%.0f s", seconds);
    } else {
        std::snprintf(buf, sizeof buf, "%.1f min", seconds / 60.0);
    }
    return buf;
}

std::map<std::string, double> resultFigures(const ReproductionResult& result) {
    std::map<std::string, double> figures;
    for (const ResultRow& row : result.rows) {
        if (std::isfinite(row.ours.mean)) {
            figures[row.check->level + "." + row.check->figure] = row.ours.mean;
        }
    }
    const VerdictCounts counts = countVerdicts(result);
    figures["pass"] = counts.pass;
    figures["fail"] = counts.fail;
    return figures;
}

}  // namespace ensemble::reproduce

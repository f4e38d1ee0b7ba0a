// Aggregation over splits or seeds, and the four ways a figure is judged (reproduce.h).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "active/active_study.h"
#include "reproduce/reproduce.h"

namespace ensemble::reproduce {

namespace {

// `v` as printf's %.<precision>g writes it in the C locale, by to_chars: the app runs under the
// user's LC_NUMERIC, where printf writes "0,5", and a verdict's reason is the CLI's, byte for
// byte, in its Reproduce view.
std::string g(double v, int precision) {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, precision);
    return std::string(buf, r.ptr);
}

}  // namespace

Aggregate aggregate(const std::vector<double>& values) {
    // The mean and sample standard deviation are active_study.h's (the curves' own reading).
    const MeanStd spread = meanStd(values);
    Aggregate out;
    out.n = static_cast<int>(values.size());
    out.mean = spread.mean;
    out.se = values.size() < 2 ? std::numeric_limits<double>::quiet_NaN()
                               : spread.std / std::sqrt(static_cast<double>(values.size()));
    return out;
}

double printedNumber(const std::string& printed) {
    double value = 0.0;
    const char* end = printed.data() + printed.size();
    const auto [ptr, ec] = std::from_chars(printed.data(), end, value);
    if (ec != std::errc{} || ptr != end || printed.empty()) {
        throw std::invalid_argument("not a printed number: '" + printed + "'");
    }
    return value;
}

double halfLastDigit(const std::string& printed) {
    printedNumber(printed);  // throws for anything but a number
    const std::size_t point = printed.find('.');
    const int decimals =
        point == std::string::npos ? 0 : static_cast<int>(printed.size() - point - 1);
    return 0.5 * std::pow(10.0, -decimals);
}

Judgement judgeNumeric(const std::string& printedValue, const std::string& printedSpread,
                       const Aggregate& ours) {
    Judgement j;
    j.paper = printedNumber(printedValue);
    // A spread printed as 0.00 is below its last digit, not zero.
    j.paperSe = std::max(printedNumber(printedSpread), halfLastDigit(printedSpread));
    const double oursSe = std::isfinite(ours.se) ? ours.se : 0.0;
    j.tolerance = 2.0 * std::sqrt(j.paperSe * j.paperSe + oursSe * oursSe);
    j.difference = ours.mean - j.paper;
    if (!std::isfinite(ours.mean)) {
        j.verdict = Verdict::Fail;
        j.why = ours.n == 0 ? "no run finished" : "not finite in some run";
        return j;
    }
    j.verdict = std::abs(j.difference) <= j.tolerance ? Verdict::Pass : Verdict::Fail;
    j.why = "|" + g(j.difference, 4) + "| " + (j.verdict == Verdict::Pass ? "<=" : ">") +
            " 2 sqrt(" + g(j.paperSe, 3) + "^2 + " + g(oursSe, 3) + "^2) = " + g(j.tolerance, 4);
    return j;
}

Judgement judgeBand(double low, double high, const Aggregate& ours) {
    Judgement j;
    if (std::isfinite(ours.beyond)) {
        j.verdict = Verdict::Fail;
        j.why = "not reached within " + g(ours.beyond, 6) + " (> " + g(ours.beyond, 6) +
                "), not shown inside [" + g(low, 4) + ", " + g(high, 4) + "]";
        return j;
    }
    const bool inside = std::isfinite(ours.mean) && ours.mean >= low && ours.mean <= high;
    j.verdict = inside ? Verdict::Pass : Verdict::Fail;
    j.why =
        g(ours.mean, 4) + (inside ? " in [" : " outside [") + g(low, 4) + ", " + g(high, 4) + "]";
    return j;
}

Judgement judgeClaim(ClaimTest test, double threshold, const std::vector<double>& values) {
    Judgement j;
    for (double v : values) {
        const bool holds = test == ClaimTest::AtLeast ? v >= threshold : v <= threshold;
        j.held += holds ? 1 : 0;
    }
    const bool all = !values.empty() && j.held == static_cast<int>(values.size());
    j.verdict = all ? Verdict::Pass : Verdict::Fail;
    j.why = "held in " + std::to_string(j.held) + " of " + std::to_string(values.size()) +
            " runs (" + (test == ClaimTest::AtLeast ? ">= " : "<= ") + g(threshold, 4) + ")";
    return j;
}

namespace {

// A side of judgeAgainst as an interval: a finite mean is itself, a figure not reached within
// its budget is (beyond, inf); anything else is not a number.
struct Interval {
    double lo = 0.0;
    double hi = 0.0;
    bool known = false;
};

Interval intervalOf(const Aggregate& a) {
    if (std::isfinite(a.mean)) {
        return {a.mean, a.mean, true};
    }
    if (std::isfinite(a.beyond)) {
        return {a.beyond, std::numeric_limits<double>::infinity(), true};
    }
    return {};
}

std::string intervalText(const Aggregate& a) {
    return std::isfinite(a.mean)     ? g(a.mean, 4)
           : std::isfinite(a.beyond) ? "> " + g(a.beyond, 6)
                                     : std::string("not finite");
}

}  // namespace

Judgement judgeAgainst(ClaimTest test, double factor, const Aggregate& ours,
                       const Aggregate& other) {
    Judgement j;
    const Interval a = intervalOf(ours);
    const Interval b = intervalOf(other);
    const std::string relation = test == ClaimTest::AtLeast ? " >= " : " <= ";
    const std::string text =
        intervalText(ours) + relation + g(factor, 4) + " x " + intervalText(other);
    if (!a.known || !b.known) {
        j.verdict = Verdict::Fail;
        j.why = text + ": not a number on " + (a.known ? "the other side" : "our side");
        return j;
    }
    // Holds for every value of the intervals; refuted for every value; else undetermined (a
    // figure beyond its budget could still land either way).
    const bool holds = test == ClaimTest::AtMost ? a.hi <= factor * b.lo : a.lo >= factor * b.hi;
    const bool refuted = test == ClaimTest::AtMost ? a.lo > factor * b.hi : a.hi < factor * b.lo;
    j.held = holds ? 1 : 0;
    j.verdict = holds ? Verdict::Pass : Verdict::Fail;
    j.why = text + (holds     ? ": holds"
                    : refuted ? ": does not hold"
                              : ": undetermined within the budget (not shown to hold)");
    return j;
}

}  // namespace ensemble::reproduce

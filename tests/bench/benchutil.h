// Timing helper shared by the benchmarks: the median wall time of repeated runs.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace fp8scope::bench {

// Median seconds of `repeats` runs of body, after one untimed run when warmUp is set.
inline double medianSeconds(int repeats, const std::function<void()> &body, bool warmUp = false)
{
    using Clock = std::chrono::steady_clock;
    if (warmUp)
        body();
    std::vector<double> t;
    for (int i = 0; i < repeats; ++i) {
        const auto a = Clock::now();
        body();
        t.push_back(std::chrono::duration<double>(Clock::now() - a).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

// A workload timed against a reference, alternating one run of each `repeats` times, so that both see the
// same phases of a shared machine: the median seconds of each and the median of the per-pair ratios
// reference / work.
struct Paired {
    double workSeconds;
    double referenceSeconds;
    double ratio;
};

inline Paired pairedMedians(int repeats, const std::function<void()> &work, const std::function<void()> &reference)
{
    using Clock = std::chrono::steady_clock;
    const auto time = [](const std::function<void()> &body) {
        const auto a = Clock::now();
        body();
        return std::chrono::duration<double>(Clock::now() - a).count();
    };
    std::vector<double> w, r, q;
    for (int i = 0; i < repeats; ++i) {
        r.push_back(time(reference));
        w.push_back(time(work));
        q.push_back(r.back() / w.back());
    }
    const auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    return {median(w), median(r), median(q)};
}

} // namespace fp8scope::bench

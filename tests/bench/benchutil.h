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

} // namespace fp8scope::bench

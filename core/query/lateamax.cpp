#include "lateamax.h"

#include "catalog.h"

#include <algorithm>
#include <cmath>

namespace fp8scope {

LateAmax lateAmax(const Catalog &catalog, RunRef run, const QString &tensor)
{
    LateAmax result;
    for (const char *stat : {"cur_amax", "amax"}) {
        const Heatmap m = catalog.matrix(run, {QLatin1String(stat), tensor, {}, {}});
        if (m.layers.isEmpty() || m.steps.empty())
            continue;
        const size_t steps = m.steps.size();
        const size_t window = std::min(steps, std::max<size_t>(3, steps / 10));
        const size_t first = steps - window;
        result.statistic = QLatin1String(stat);
        result.firstStep = m.steps[first];
        result.lastStep = m.steps.back();
        result.steps = int(window);
        for (qsizetype l = 0; l < m.layers.size(); ++l) {
            double amax = NAN, least = NAN;
            for (size_t s = first; s < steps; ++s) {
                const double v = m.values[size_t(l) * steps + s];
                if (std::isfinite(v)) {
                    amax = std::isnan(amax) ? v : std::max(amax, v);
                    least = std::isnan(least) ? v : std::min(least, v);
                }
            }
            if (!std::isnan(amax)) {
                result.byLayer.insert(m.layers[l], amax);
                result.leastByLayer.insert(m.layers[l], least);
            }
        }
        return result;
    }
    return result;
}

} // namespace fp8scope

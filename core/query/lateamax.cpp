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
        for (qsizetype l = 0; l < m.layers.size(); ++l) {
            double amax = NAN, least = NAN;
            int logged = 0;
            for (size_t s = first; s < steps; ++s) {
                const double v = m.values[size_t(l) * steps + s];
                if (!std::isfinite(v))
                    continue;
                ++logged;
                amax = std::isnan(amax) ? v : std::max(amax, v);
                // A step whose amax is 0 (an expert no token reached) says nothing of the range's use.
                if (v > 0)
                    least = std::isnan(least) ? v : std::min(least, v);
            }
            if (!std::isnan(amax)) {
                result.byLayer.insert(m.layers[l], amax);
                if (!std::isnan(least))
                    result.leastByLayer.insert(m.layers[l], least);
                result.stepsByLayer.insert(m.layers[l], logged);
            }
        }
        return result;
    }
    return result;
}

} // namespace fp8scope

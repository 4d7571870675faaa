// libFuzzer target: the store's point chunk decoder on arbitrary text (a store edited by hand, or damaged),
// and the encoder on whatever it decoded (which must read back to the same points).
#include "core/store/pointchunks.h"

#include <cmath>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using fp8scope::pointchunks::Point;
    std::vector<Point> points;
    if (!fp8scope::pointchunks::decode(std::string_view(reinterpret_cast<const char *>(data), size), &points))
        return 0;
    std::string text;
    fp8scope::pointchunks::encode(points.data(), points.size(), &text);
    std::vector<Point> again;
    if (!fp8scope::pointchunks::decode(text, &again) || again.size() != points.size())
        std::abort();
    for (size_t i = 0; i < points.size(); ++i) {
        const bool same = again[i].step == points[i].step
            && (again[i].value == points[i].value || (std::isnan(again[i].value) && std::isnan(points[i].value)));
        if (!same)
            std::abort();
    }
    return 0;
}

// The inner loops of the checkpoint audit, compiled for speed (-O3, vectorized with `omp simd` reductions, no
// OpenMP runtime): the audit must cost little more than reading the weights (tests/bench/bench_audit.cpp).
#pragma once

#include <cstdint>

namespace fp8scope::auditkernels {

// The largest |code| (its low 7 bits) of n FP8 codes, leaving out those at or above `limit` (E4M3: 0x7F,
// NaN; E5M2: 0x7C, inf and NaN). FP8 magnitudes grow with their low 7 bits, so its value is the amax.
uint8_t maxMagnitudeCode(const uint8_t *codes, int64_t n, uint8_t limit);

// Sums over one run of elements that share a decode scale: v the codes' values, x the reference's; d = v * s
// (as dequantized), a = v * invS (dequantized the other way). Elements where d or x is not finite are left out.
struct SegmentSums {
    double errSq = 0; // sum (d - x)^2
    double invErrSq = 0; // sum (a - x)^2
    double refSq = 0; // sum x^2
    double deqSq = 0; // sum d^2
    double dot = 0; // sum d x
    float refAmax = 0; // max |x|
    float deqAmax = 0; // max |d|
    float invAmax = 0; // max |a|
};
// Which code adds a segment: the best this processor runs (AVX2 with F16C and FMA where there is one: the codes
// decoded by the half-precision conversion, eight at a time), or the portable loop (a table lookup an element,
// the sums vectorized by the compiler). Both give the same sums up to the order of float additions
// (tst_audit vectorKernelsAgree).
enum class Kernel { Best, Portable };
// Whether Kernel::Best is the vector code on this processor.
bool vectorKernels();

// Adds one run of n elements sharing decode scale s (invS = 1 / s): the FP8 codes (E4M3, or E5M2 when `e5m2`)
// decoded, and the reference's values as float32 or bfloat16 (the bits' upper half).
void addSegment(const uint8_t *codes, bool e5m2, const float *x, int64_t n, float s, float invS, SegmentSums &out,
    Kernel kernel = Kernel::Best);
void addSegment(const uint8_t *codes, bool e5m2, const uint16_t *bf16, int64_t n, float s, float invS, SegmentSums &out,
    Kernel kernel = Kernel::Best);

} // namespace fp8scope::auditkernels

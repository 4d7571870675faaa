// Which translation unit compiles which SIMD target of the CPU kernels (cpukernels-inl.h). Sizeless SVE/RVV
// vectors cannot live in the accumulator struct, so only fixed-width targets are compiled; AVX3_DL adds
// nothing these kernels use over AVX3. On x86 the four SIMD targets are compiled side by side, each in
// cpukernels_<target>.cpp, and cpukernels.cpp compiles the baseline with the dispatch tables; elsewhere
// cpukernels.cpp compiles every target. Included before any Highway header: the target macros it names are
// Highway's, expanded only where Highway tests them.
#pragma once

#define FP8SCOPE_KERNELS_NOT_COMPILED (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128 | HWY_RVV | HWY_AVX3_DL)
#if defined(__x86_64__) || defined(__i386__)
#define FP8SCOPE_KERNELS_OWN_UNITS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX2 | HWY_AVX3)
#else
#define FP8SCOPE_KERNELS_OWN_UNITS 0
#endif

// One x86 SIMD target's CPU kernels in a translation unit of its own: the file that includes this defines
// FP8SCOPE_KERNEL_TARGETS as its target (cpukernels_avx2.cpp: HWY_AVX2). Every other SIMD target is disabled
// here, so Highway compiles this one and the baseline, whose kernels cpukernels.cpp defines (this unit only
// declares them). Off x86 nothing: cpukernels.cpp compiles every target there.
#include "core/numerics/cpukernels-targets.h"

#if defined(__x86_64__) || defined(__i386__)
#define HWY_DISABLED_TARGETS (FP8SCOPE_KERNELS_NOT_COMPILED | (FP8SCOPE_KERNELS_OWN_UNITS & ~(FP8SCOPE_KERNEL_TARGETS)))
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/numerics/cpukernels-inl.h"
#include <hwy/foreach_target.h> // IWYU pragma: keep

#include "core/numerics/cpukernels-inl.h"
#endif

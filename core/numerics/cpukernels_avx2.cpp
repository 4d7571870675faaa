// The CPU kernels compiled for AVX2 (cpukernels-target.h).
#define FP8SCOPE_KERNEL_TARGETS HWY_AVX2
#include "core/numerics/cpukernels-target.h"

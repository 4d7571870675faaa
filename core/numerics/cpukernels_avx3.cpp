// The CPU kernels compiled for AVX3 (cpukernels-target.h).
#define FP8SCOPE_KERNEL_TARGETS HWY_AVX3
#include "core/numerics/cpukernels-target.h"

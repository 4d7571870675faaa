// The CPU kernels compiled for SSSE3 (cpukernels-target.h).
#define FP8SCOPE_KERNEL_TARGETS HWY_SSSE3
#include "core/numerics/cpukernels-target.h"

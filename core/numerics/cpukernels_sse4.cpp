// The CPU kernels compiled for SSE4 (cpukernels-target.h).
#define FP8SCOPE_KERNEL_TARGETS HWY_SSE4
#include "core/numerics/cpukernels-target.h"

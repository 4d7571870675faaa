// `fp8scope-cli blocks`: the block map of one tensor (core/numerics/blockmap), the worst blocks first, and on a
// Transformer Engine DumpTensors file TE's own quantization compared with the reference (core/numerics/techeck).
#pragma once

#include <QStringList>

namespace fp8scope::cli {

// args[0] is the program name; returns the process exit code.
int runBlocks(const QStringList &args);

} // namespace fp8scope::cli

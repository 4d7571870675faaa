// Runs one piece of CLI work as a job on a JobQueue (the same machinery the GUI uses: the queue's worker
// thread owns any CUDA context), waiting in an event loop and showing its progress on a terminal.
#pragma once

#include "core/jobs/jobqueue.h"

#include <functional>

namespace fp8scope::cli {

void runJob(const std::function<void(JobContext &)> &work);

} // namespace fp8scope::cli

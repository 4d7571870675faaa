// Runs one piece of CLI work as a job on a JobQueue (the same machinery the GUI uses: the queue's worker
// thread owns any CUDA context), waiting in an event loop and showing its progress on a terminal.
#pragma once

#include "core/jobs/jobqueue.h"

#include <functional>

namespace fp8scope::cli {

// Returns the job's error (an exception the work threw, out of memory among them), "" when it finished:
// callers say it and exit non-zero, never carry on as if the work had been done.
[[nodiscard]] QString runJob(const std::function<void(JobContext &)> &work);

} // namespace fp8scope::cli

// Where oneDNN compiles and executes: on the calling thread, or, below AVX2,
// on one thread of the extension's own.
//
// With oneDNN 3.2 on SSE4.1 or AVX (ONEDNN_MAX_CPU_ISA=SSE41 or AVX on an AVX2
// machine), a compiled partition whose kernel is its gemm-based convolution
// (x64:gemm:jit) fails on any thread other than the one that compiled it:
// execution returns invalid_arguments, or crashes in the JIT code, whatever the
// OpenMP thread count; from AVX2 up it runs on any thread. So below AVX2 every
// compile and execution is handed to one long-lived thread, and callers wait for
// it (without the GIL): such CPUs run one oneDNN call at a time.
#pragma once
#include "common.hpp"

#include <functional>

namespace onednn_graph {

// Whether oneDNN work runs on the extension's own thread (the ISA is below AVX2).
bool onednn_thread_needed();

// Runs `task` on the thread oneDNN work runs on and returns when it is done;
// an exception it throws is rethrown here. Call it without the GIL.
void on_onednn_thread(const std::function<void()> &task);

} // namespace onednn_graph

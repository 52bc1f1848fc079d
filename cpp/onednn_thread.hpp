// Where oneDNN compiles and executes: on the calling thread, or on one thread of the
// extension's own: below AVX2, and in a process forked after it loaded.
//
// With oneDNN 3.2 on SSE4.1 or AVX (ONEDNN_MAX_CPU_ISA=SSE41 or AVX on an AVX2
// machine), a compiled partition whose kernel is its gemm-based convolution
// (x64:gemm:jit) fails on any thread other than the one that compiled it:
// execution returns invalid_arguments, or crashes in the JIT code, whatever the
// OpenMP thread count; from AVX2 up it runs on any thread. So below AVX2 every
// compile and execution is handed to one long-lived thread, and callers wait for
// it (without the GIL): such CPUs run one oneDNN call at a time.
//
// GNU OpenMP keeps the team of threads a thread opened a parallel region with, for
// its next region. fork() copies that bookkeeping into the child but none of the
// threads, so the forking thread's next region of more than one thread waits for
// threads that do not exist: a DataLoader worker (forked) that runs a model the
// parent ran hangs in a libgomp barrier (stock PyTorch's own OpenMP too, where the
// child does not set one thread). A thread made after the fork has no team yet and
// makes its own. So in a forked child every oneDNN call is handed to a thread the
// child makes on its first call (about 10 us a call more), which takes the calling
// thread's OpenMP thread count (torch.set_num_threads, omp_set_num_threads). oneDNN
// 3.13's SYCL runtime waits for its own scheduler's threads, which no fork keeps
// either, on any thread: there a call in a child forked after oneDNN ran raises.
#pragma once
#include "common.hpp"

#include <functional>

namespace onednn_graph {

// Whether oneDNN work runs on the extension's own thread (the ISA is below AVX2, or
// this process was forked after the extension loaded).
bool onednn_thread_needed();

// Runs `task` on the thread oneDNN work runs on and returns when it is done;
// an exception it throws is rethrown here. Call it without the GIL.
void on_onednn_thread(const std::function<void()> &task);

// Registers the fork handler, and binds in_forked_child().
void bind_onednn_thread(py::module_ &m);

} // namespace onednn_graph

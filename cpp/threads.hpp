// Running one compiled partition on fewer threads than oneDNN would use.
//
// oneDNN 3.2 (OpenMP runtime) opens a parallel region on every execution, and
// on this 2-core VM the fork and join cost more than a tiny problem's work: 1
// thread runs the benchmark's tiny case 1.4-4x faster (README, Performance).
// oneDNN reads the thread count from OpenMP's per-thread setting when it
// compiles (kernels size their work split then) and when it executes, so the
// limit is set around both, in the calling thread only, and restored after.
#pragma once

#include <functional>

namespace onednn_graph {

// Whether the limit can be set: oneDNN uses OpenMP and its runtime library is
// loaded (libgomp, libiomp5 or libomp). Otherwise ThreadLimit does nothing.
bool can_limit_threads();

// Caps the calling thread's OpenMP thread count at `threads` for the scope;
// 0 means no cap.
class ThreadLimit {
public:
    explicit ThreadLimit(int threads);
    ~ThreadLimit();
    ThreadLimit(const ThreadLimit &) = delete;
    ThreadLimit &operator=(const ThreadLimit &) = delete;

private:
    int previous_ = 0;
};

// The threads oneDNN would run on from the calling thread: OpenMP's count for it
// (under a ThreadLimit, the limit), or, where oneDNN is not OpenMP, the CPUs this
// process may run on.
int max_threads();

// Sets the calling thread's OpenMP thread count to `threads` (> 0; where oneDNN uses
// OpenMP): a thread that works for another takes on that one's count.
void set_max_threads(int threads);

// Runs task(i, n) for i in 0..n-1 on n threads, n = max_threads() capped at
// `threads` (0: no cap), and returns when all are done. With OpenMP the threads are
// oneDNN's own pool (the calling thread's team, which oneDNN's kernels have just
// used and which stays warm); otherwise n - 1 threads are started for the call.
// `task` must not throw.
void parallel(int threads, const std::function<void(int, int)> &task);

} // namespace onednn_graph

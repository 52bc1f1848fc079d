// The allocator of the package's engines. oneDNN's Graph API takes its
// temporary scratchpad (internal reorders included) and cached constants
// through the engine's allocator, so counting here tells how much memory
// oneDNN itself took during a call: the benchmark's "no hidden copies" check.
#pragma once
#include "common.hpp"

#include <cstddef>

namespace onednn_graph {

// The engine every package Engine is: oneDNN's engine of `kind` allocating through
// the package's allocator (sycl_engine.cpp's on a SYCL-runtime oneDNN, else the
// counting host allocator here).
dnnl::engine make_counted_engine(dnnl::engine::kind kind, size_t index);

#ifdef ONEDNN_GRAPH_SYCL
// Points the OpenCL loader at the SYCL CPU device beside libdnnl.so.3 unless
// OCL_ICD_FILENAMES is set (sycl_engine.cpp); the module calls it on import.
void prepare_sycl_cpu_device();
#endif

struct AllocationStats {
    size_t current = 0;     // bytes held now
    size_t peak = 0;        // most bytes held at once since the last reset
    size_t allocations = 0; // calls since the process started
    size_t cached = 0;      // bytes freed by oneDNN and kept for reuse (SYCL runtime only)
    size_t fresh = 0;       // allocations that took new memory from the system (SYCL runtime
                            // only; a host build allocates with posix_memalign and counts 0)
};

AllocationStats allocation_stats();
void reset_allocation_peak(); // the peak becomes the current

// The bookkeeping every allocator of the package does: `p` of `size` bytes handed
// to oneDNN, and given back (returns its size, 0 for a pointer never counted).
void count_allocation(void *p, size_t size, bool fresh);
size_t count_deallocation(void *p);
void count_cached(size_t bytes_now);

} // namespace onednn_graph

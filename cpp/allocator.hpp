// The allocator of the package's engines. oneDNN's Graph API takes its
// temporary scratchpad (internal reorders included) and cached constants
// through the engine's allocator, so counting here tells how much memory
// oneDNN itself took during a call: the benchmark's "no hidden copies" check.
// Both engines keep freed blocks for the next execution (BlockCache).
#pragma once
#include "common.hpp"

#include <cstddef>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

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
    size_t cached = 0;      // bytes freed by oneDNN and kept for reuse (BlockCache)
    size_t fresh = 0;       // allocations that took new memory from the system
};

// Freed blocks kept by (size, alignment) for the next execution to reuse, up to
// ONEDNN_GRAPH_CACHE_BYTES in all (1 GiB when unset; 0 keeps nothing). An
// execution's scratchpad is fresh memory otherwise, and each first touch of its
// pages is a fault: on the Graph API's default SYCL allocator about 3,200 faults
// a call and 1.6-1.8x the OpenMP build's time on a 4x256x32x32 ConvTranspose; on
// the OpenMP build with posix_memalign, a Mask R-CNN head's training step
// reordered its 26 MB gradient into a fresh block in 7.2-7.7 ms where the same
// reorder into touched memory took 1.5-1.7 (issue 46, Zen 4). The engine's
// allocator asks take() first, else make_room() (the largest kept blocks, for it
// to free: a cache full of sizes no execution asks for again would otherwise send
// every later scratchpad to fresh memory) and made(); on free, keep() or free.
class BlockCache {
public:
    void *take(size_t size, size_t alignment);   // a kept block, or nullptr
    std::vector<void *> make_room(size_t size);  // blocks given up for `size` more
    void made(void *p, size_t alignment);        // a new block, kept on free where it fits
    bool keep(void *p, size_t size);             // false: not kept (and forgotten)
    void unlock_in_forked_child();               // (another thread may have held the lock)
private:
    std::mutex lock_;
    std::multimap<std::pair<size_t, size_t>, void *> free_blocks_; // (size, alignment) -> block
    std::map<void *, size_t> alignments_;                         // every block made here
    size_t cached_bytes_ = 0;
};

BlockCache &block_cache(); // one per process, never destroyed (as the engines)

// In a child of fork(): the allocator's locks as new (onednn_thread.cpp's fork handler;
// the parent's other threads, which may have held them, are not in the child).
void reset_allocator_locks_in_child();

AllocationStats allocation_stats();
void reset_allocation_peak(); // the peak becomes the current

// The bookkeeping every allocator of the package does: `p` of `size` bytes handed
// to oneDNN, and given back (returns its size, 0 for a pointer never counted).
void count_allocation(void *p, size_t size, bool fresh);
size_t count_deallocation(void *p);
void count_cached(size_t bytes_now);

} // namespace onednn_graph

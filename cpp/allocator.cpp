// See allocator.hpp. A lock and a size map: oneDNN allocates a few buffers per
// execution at most, so the bookkeeping is noise next to the kernels.
#include "allocator.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace onednn_graph {

namespace {

// Never destroyed: oneDNN may free a cached constant after static destructors ran.
struct State {
    std::mutex lock;
    std::unordered_map<void *, size_t> sizes;
    AllocationStats stats;
};

State &state() {
    static State *s = new State;
    return *s;
}

} // namespace

void count_allocation(void *p, size_t size, bool fresh) {
    State &s = state();
    std::lock_guard<std::mutex> guard(s.lock);
    s.sizes[p] = size;
    s.stats.current += size;
    s.stats.peak = std::max(s.stats.peak, s.stats.current);
    ++s.stats.allocations;
    if (fresh) ++s.stats.fresh;
}

size_t count_deallocation(void *p) {
    State &s = state();
    std::lock_guard<std::mutex> guard(s.lock);
    auto it = s.sizes.find(p);
    if (it == s.sizes.end()) return 0;
    const size_t size = it->second;
    s.stats.current -= size;
    s.sizes.erase(it);
    return size;
}

void count_cached(size_t bytes_now) {
    State &s = state();
    std::lock_guard<std::mutex> guard(s.lock);
    s.stats.cached = bytes_now;
}

#ifndef ONEDNN_GRAPH_SYCL
namespace {

void *allocate(size_t size, size_t alignment) {
    void *p = nullptr;
    // posix_memalign wants a power of two no smaller than a pointer; oneDNN asks for 64.
    if (posix_memalign(&p, std::max(alignment, sizeof(void *)), size == 0 ? 1 : size) != 0) return nullptr;
    count_allocation(p, size, false);
    return p;
}

void deallocate(void *p) {
    if (!p) return;
    count_deallocation(p);
    std::free(p);
}

} // namespace

dnnl::engine make_counted_engine(dnnl::engine::kind kind, size_t index) {
    static const dg::allocator *a = new dg::allocator(allocate, deallocate); // never destroyed,
    return dg::make_engine_with_allocator(kind, index, *a);                 // as State
}
#endif

AllocationStats allocation_stats() {
    State &s = state();
    std::lock_guard<std::mutex> guard(s.lock);
    return s.stats;
}

void reset_allocation_peak() {
    State &s = state();
    std::lock_guard<std::mutex> guard(s.lock);
    s.stats.peak = s.stats.current;
}

} // namespace onednn_graph

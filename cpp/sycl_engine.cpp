// The CPU engine of a oneDNN built with the SYCL runtime (PyPI's onednn 2026.x,
// oneDNN 3.13): compiled only in that build (ONEDNN_GRAPH_SYCL).
//
// Two things such a oneDNN needs that the OpenMP build does not:
// - Its CPU device is the OpenCL CPU runtime (libintelocl.so) next to libdnnl.so.3.
//   The OpenCL loader finds it only through OCL_ICD_FILENAMES: the wheel's own
//   .icd file names a conda placeholder path, and the loader reads /etc/OpenCL
//   only. Without it, creating the engine fails ("SYCL cpu devices queried but
//   not found"). prepare_sycl_cpu_device() sets it before the first engine.
// - The Graph API's default SYCL allocator gives every execution fresh USM memory
//   for its scratchpad and frees it after: on a 4x256x32x32 ConvTranspose about
//   3,200 page faults per call and 1.6-1.8x the OpenMP build's time (issue 20,
//   Zen 4). The engine's allocator here keeps freed blocks, by size, for the
//   next execution to reuse, up to 1 GiB in all, or the number of bytes in
//   ONEDNN_GRAPH_SYCL_CACHE_BYTES (0: keep nothing, as the default allocator);
//   a new block that would not fit gives back the largest ones kept.
//
// A host allocator is refused on this runtime ("could not create allocator for
// cpu"), so the allocator is the SYCL interop one and allocates USM, as oneDNN's
// default does.
#include "allocator.hpp"
#include "common.hpp"

#include <oneapi/dnnl/dnnl_graph_sycl.hpp>
#include <oneapi/dnnl/dnnl_sycl.hpp>
#include <sycl/sycl.hpp>

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace onednn_graph {

void prepare_sycl_cpu_device() {
    if (std::getenv("OCL_ICD_FILENAMES")) return; // the user's choice stands
    Dl_info where {};
    if (!dladdr(reinterpret_cast<void *>(&dnnl_version), &where) || !where.dli_fname) return;
    std::string dir(where.dli_fname);
    dir = dir.substr(0, dir.find_last_of('/') + 1);
    const std::string runtime = dir + "libintelocl.so";
    struct stat info {};
    if (stat(runtime.c_str(), &info) == 0) setenv("OCL_ICD_FILENAMES", runtime.c_str(), 0);
}

namespace {

// Freed blocks above this many bytes in all are given back to the system.
size_t cache_limit() {
    static const size_t limit = [] {
        const char *given = std::getenv("ONEDNN_GRAPH_SYCL_CACHE_BYTES");
        return given && *given ? static_cast<size_t>(std::strtoull(given, nullptr, 10)) : size_t(1) << 30;
    }();
    return limit;
}

// Never destroyed: oneDNN may free a cached constant after static destructors ran.
struct BlockCache {
    std::mutex lock;
    std::multimap<std::pair<size_t, size_t>, void *> free_blocks; // (size, alignment) -> block
    std::map<void *, size_t> alignments;                         // every block the cache made
    std::map<void *, sycl::context> owners;                      // and its context (one per engine)
    size_t cached_bytes = 0;
};

BlockCache &cache() {
    static BlockCache *c = new BlockCache;
    return *c;
}

void *allocate(size_t size, size_t alignment, const void *device, const void *context) {
    size = std::max<size_t>(size, 1);
    alignment = std::max<size_t>(alignment, 64);
    BlockCache &c = cache();
    {
        std::lock_guard<std::mutex> guard(c.lock);
        auto it = c.free_blocks.find({size, alignment});
        if (it != c.free_blocks.end()) {
            void *p = it->second;
            c.free_blocks.erase(it);
            c.cached_bytes -= size;
            count_cached(c.cached_bytes);
            count_allocation(p, size, false);
            return p;
        }
    }
    // Room for this block when it comes back, made now (where the execution allocates,
    // not in the release oneDNN may make from the runtime's threads) by giving back the
    // largest blocks kept: a cache full of sizes no execution asks for again (a
    // 1024-channel layer's scratchpads) would otherwise send every later execution's
    // scratchpad to fresh memory.
    std::vector<std::pair<void *, sycl::context>> evicted;
    {
        std::lock_guard<std::mutex> guard(c.lock);
        while (size <= cache_limit() && c.cached_bytes + size > cache_limit() && !c.free_blocks.empty()) {
            auto largest = std::prev(c.free_blocks.end());
            void *old = largest->second;
            auto owner = c.owners.find(old);
            evicted.emplace_back(old, owner->second);
            c.owners.erase(owner);
            c.cached_bytes -= largest->first.first;
            c.alignments.erase(old);
            c.free_blocks.erase(largest);
        }
        if (!evicted.empty()) count_cached(c.cached_bytes);
    }
    for (auto &[old, owner] : evicted) sycl::free(old, owner); // in the context that made it
    void *p = sycl::aligned_alloc_device(alignment, size, *static_cast<const sycl::device *>(device),
            *static_cast<const sycl::context *>(context));
    if (!p) return nullptr;
    {
        std::lock_guard<std::mutex> guard(c.lock);
        c.alignments[p] = alignment;
        c.owners.emplace(p, *static_cast<const sycl::context *>(context));
    }
    count_allocation(p, size, true);
    return p;
}

void deallocate(void *p, const void *, const void *context, void *event) {
    if (!p) return;
    // oneDNN passes the event of the last kernel that used the block: reusing it
    // before that kernel ends would hand its memory to another execution.
    if (event) static_cast<sycl::event *>(event)->wait();
    const size_t size = count_deallocation(p);
    BlockCache &c = cache();
    {
        std::lock_guard<std::mutex> guard(c.lock);
        auto known = c.alignments.find(p);
        if (size > 0 && known != c.alignments.end() && c.cached_bytes + size <= cache_limit()) {
            c.free_blocks.emplace(std::make_pair(size, known->second), p);
            c.cached_bytes += size;
            count_cached(c.cached_bytes);
            return;
        }
        if (known != c.alignments.end()) {
            c.alignments.erase(known);
            auto owner = c.owners.find(p);
            const sycl::context made_in = owner->second; // (a block may serve another engine)
            c.owners.erase(owner);
            sycl::free(p, made_in);
            return;
        }
    }
    sycl::free(p, *static_cast<const sycl::context *>(context));
}

} // namespace

dnnl::engine make_counted_engine(dnnl::engine::kind kind, size_t index) {
    prepare_sycl_cpu_device();
    // The device and context of oneDNN's own engine; the new engine keeps copies.
    const dnnl::engine plain(kind, index);
    const sycl::device device = dnnl::sycl_interop::get_device(plain);
    const sycl::context context = dnnl::sycl_interop::get_context(plain);
    static const dg::allocator *a
            = new dg::allocator(dg::sycl_interop::make_allocator(allocate, deallocate));
    return dg::sycl_interop::make_engine_with_allocator(device, context, *a);
}

} // namespace onednn_graph

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
//   Zen 4). The engine's allocator here keeps freed blocks for the next
//   execution to reuse (allocator.hpp's BlockCache, which the OpenMP build's
//   allocator keeps too).
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

// The context each block the package made was made in (a block may serve another
// engine, and is freed in its own). Never destroyed, as the block cache.
struct Owners {
    std::mutex lock;
    std::map<void *, sycl::context> of;
};

Owners &owners() {
    static Owners *o = new Owners;
    return *o;
}

// Frees `p` in the context the package made it in, or in `context` where the package
// did not make it.
void free_in_own_context(void *p, const sycl::context &context) {
    Owners &o = owners();
    std::unique_lock<std::mutex> guard(o.lock);
    auto owner = o.of.find(p);
    if (owner == o.of.end()) {
        guard.unlock();
        sycl::free(p, context);
        return;
    }
    const sycl::context made_in = owner->second;
    o.of.erase(owner);
    guard.unlock();
    sycl::free(p, made_in);
}

void *allocate(size_t size, size_t alignment, const void *device, const void *context) {
    size = std::max<size_t>(size, 1);
    alignment = std::max<size_t>(alignment, 64);
    BlockCache &c = block_cache();
    if (void *p = c.take(size, alignment)) {
        count_allocation(p, size, false);
        return p;
    }
    for (void *old : c.make_room(size)) // (made room now, where the execution allocates)
        free_in_own_context(old, *static_cast<const sycl::context *>(context));
    void *p = sycl::aligned_alloc_device(alignment, size, *static_cast<const sycl::device *>(device),
            *static_cast<const sycl::context *>(context));
    if (!p) return nullptr;
    {
        Owners &o = owners();
        std::lock_guard<std::mutex> guard(o.lock);
        o.of.emplace(p, *static_cast<const sycl::context *>(context));
    }
    c.made(p, alignment);
    count_allocation(p, size, true);
    return p;
}

void deallocate(void *p, const void *, const void *context, void *event) {
    if (!p) return;
    // oneDNN passes the event of the last kernel that used the block: reusing it
    // before that kernel ends would hand its memory to another execution.
    if (event) static_cast<sycl::event *>(event)->wait();
    if (block_cache().keep(p, count_deallocation(p))) return;
    free_in_own_context(p, *static_cast<const sycl::context *>(context));
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

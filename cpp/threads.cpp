// See threads.hpp. The OpenMP functions are looked up in the runtime oneDNN
// itself loaded (by soname, without loading anything), so the extension does
// not link an OpenMP library of its own: two runtimes would not share settings.
#include "threads.hpp"

#include <oneapi/dnnl/dnnl.h>

#include <dlfcn.h>

#include <sched.h>

#include <initializer_list>
#include <thread>
#include <vector>

namespace onednn_graph {

namespace {

struct OpenMP {
    int (*get_max_threads)() = nullptr;
    void (*set_num_threads)(int) = nullptr;
    int (*get_thread_num)() = nullptr;
    int (*get_num_threads)() = nullptr;
    // libgomp's entry for `#pragma omp parallel` (GCC >= 4.9), which libiomp5 and
    // LLVM's libomp export too: a parallel region on the runtime oneDNN uses.
    void (*gomp_parallel)(void (*)(void *), void *, unsigned, unsigned) = nullptr;
};

const OpenMP &openmp() {
    static const OpenMP found = [] {
        OpenMP omp;
        if (dnnl_version()->cpu_runtime != DNNL_RUNTIME_OMP) return omp;
        for (const char *soname : {"libgomp.so.1", "libiomp5.so", "libomp.so.5", "libomp.so"}) {
            void *lib = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
            if (!lib) continue;
            omp.get_max_threads = reinterpret_cast<int (*)()>(dlsym(lib, "omp_get_max_threads"));
            omp.set_num_threads = reinterpret_cast<void (*)(int)>(dlsym(lib, "omp_set_num_threads"));
            omp.get_thread_num = reinterpret_cast<int (*)()>(dlsym(lib, "omp_get_thread_num"));
            omp.get_num_threads = reinterpret_cast<int (*)()>(dlsym(lib, "omp_get_num_threads"));
            omp.gomp_parallel = reinterpret_cast<void (*)(void (*)(void *), void *, unsigned, unsigned)>(
                    dlsym(lib, "GOMP_parallel"));
            if (!omp.get_thread_num || !omp.get_num_threads) omp.gomp_parallel = nullptr;
            dlclose(lib); // NOLOAD took a reference to a library that stays loaded
            if (omp.get_max_threads && omp.set_num_threads) break;
            omp = OpenMP {};
        }
        return omp;
    }();
    return found;
}

} // namespace

bool can_limit_threads() {
    return openmp().set_num_threads != nullptr;
}

ThreadLimit::ThreadLimit(int threads) {
    const auto &omp = openmp();
    if (threads <= 0 || !omp.set_num_threads) return;
    const int current = omp.get_max_threads();
    if (current <= threads) return;
    previous_ = current;
    omp.set_num_threads(threads);
}

ThreadLimit::~ThreadLimit() {
    if (previous_ > 0) openmp().set_num_threads(previous_);
}

void set_max_threads(int threads) {
    const auto &omp = openmp();
    if (threads > 0 && omp.set_num_threads && omp.get_max_threads() != threads) omp.set_num_threads(threads);
}

int max_threads() {
    const auto &omp = openmp();
    if (omp.get_max_threads) return omp.get_max_threads();
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0) return CPU_COUNT(&cpus);
    return static_cast<int>(std::thread::hardware_concurrency());
}

namespace {

struct Region {
    const std::function<void(int, int)> *task;
};

void run_region(void *data) {
    const auto &omp = openmp();
    (*static_cast<Region *>(data)->task)(omp.get_thread_num(), omp.get_num_threads());
}

} // namespace

void parallel(int threads, const std::function<void(int, int)> &task) {
    int n = max_threads();
    if (threads > 0 && threads < n) n = threads;
    if (n <= 1) {
        task(0, 1);
        return;
    }
    const auto &omp = openmp();
    if (omp.gomp_parallel) {
        Region region {&task};
        // The team may be smaller than asked (OpenMP's dynamic adjustment): the
        // task reads the real size.
        omp.gomp_parallel(run_region, &region, static_cast<unsigned>(n), 0);
        return;
    }
    std::vector<std::thread> helpers;
    for (int i = 1; i < n; ++i) helpers.emplace_back([&task, i, n] { task(i, n); });
    task(0, n);
    for (auto &t : helpers) t.join();
}

} // namespace onednn_graph

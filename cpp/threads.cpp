// See threads.hpp. The OpenMP functions are looked up in the runtime oneDNN
// itself loaded (by soname, without loading anything), so the extension does
// not link an OpenMP library of its own: two runtimes would not share settings.
#include "threads.hpp"

#include <oneapi/dnnl/dnnl.h>

#include <dlfcn.h>

#include <initializer_list>

namespace onednn_graph {

namespace {

struct OpenMP {
    int (*get_max_threads)() = nullptr;
    void (*set_num_threads)(int) = nullptr;
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

} // namespace onednn_graph

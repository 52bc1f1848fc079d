// Library facts: oneDNN version, CPU runtime, the ISA it dispatches to, the
// process-wide constant-tensor cache switch, and emptying oneDNN's own caches.
#include "common.hpp"
#include "threads.hpp"

namespace onednn_graph {

static std::string runtime_name(unsigned runtime) {
    switch (runtime) {
        case DNNL_RUNTIME_NONE: return "none";
        case DNNL_RUNTIME_SEQ: return "seq";
        case DNNL_RUNTIME_OMP: return "omp";
        case DNNL_RUNTIME_TBB: return "tbb";
        case DNNL_RUNTIME_THREADPOOL: return "threadpool";
        case DNNL_RUNTIME_OCL: return "ocl";
        case DNNL_RUNTIME_SYCL: return "sycl";
        default: return "unknown";
    }
}

static std::string isa_name(dnnl::cpu_isa isa) {
    using i = dnnl::cpu_isa;
    switch (isa) {
        case i::sse41: return "sse41";
        case i::avx: return "avx";
        case i::avx2: return "avx2";
        case i::avx2_vnni: return "avx2_vnni";
        case i::avx2_vnni_2: return "avx2_vnni_2";
        case i::avx512_core: return "avx512_core";
        case i::avx512_core_vnni: return "avx512_core_vnni";
        case i::avx512_core_bf16: return "avx512_core_bf16";
        case i::avx512_core_fp16: return "avx512_core_fp16";
        case i::avx512_core_amx: return "avx512_core_amx";
        case i::avx512_core_amx_fp16: return "avx512_core_amx_fp16";
        default: return "default";
    }
}

void bind_version(py::module_ &m) {
    m.def("version", [] {
        const dnnl_version_t *v = dnnl_version();
        return py::make_tuple(v->major, v->minor, v->patch,
                std::string(v->hash), runtime_name(v->cpu_runtime));
    }, "(major, minor, patch, hash, cpu_runtime) of the linked oneDNN.");
    m.def("cpu_isa", [] { return isa_name(dnnl::get_effective_cpu_isa()); },
            "The CPU ISA oneDNN dispatches to on this machine.");
    m.def("get_constant_tensor_cache",
            [] { return dg::get_constant_tensor_cache() != 0; },
            "Whether oneDNN caches reordered constant tensors (process-wide).");
    m.def("set_constant_tensor_cache",
            [](bool on) { dg::set_constant_tensor_cache(on ? 1 : 0); },
            py::arg("enabled"),
            "Turn oneDNN's process-wide constant-tensor cache on or off.");
    m.def("can_limit_threads", &can_limit_threads,
            "Whether a compiled partition can run on fewer threads than oneDNN's default "
            "(oneDNN uses OpenMP and its runtime is loaded).");
    m.def("max_threads", &max_threads,
            "The threads oneDNN would run on from the calling thread: its OpenMP thread count "
            "(omp_set_num_threads, torch.set_num_threads: one OpenMP runtime), or where oneDNN "
            "is not OpenMP, the CPUs this process may run on.");
    m.def("clear_onednn_caches", [] {
        // A capacity of 0 evicts every entry; the old capacity is then restored.
        // What a fresh process would compile is compiled again: the benchmark's
        // first calls are measured cold, as the C++ program's are.
        const int primitives = dnnl::get_primitive_cache_capacity();
        const int partitions = dg::get_compiled_partition_cache_capacity();
        dnnl::set_primitive_cache_capacity(0);
        dg::set_compiled_partition_cache_capacity(0);
        dnnl::set_primitive_cache_capacity(primitives);
        dg::set_compiled_partition_cache_capacity(partitions);
    }, "Empty oneDNN's process-wide primitive and compiled-partition caches (compiled ops "
       "already held keep their kernels).");
}

} // namespace onednn_graph

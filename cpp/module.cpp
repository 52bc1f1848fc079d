// Defines onednn_graph._core: calls each bind_* function in dependency order.
#include "allocator.hpp"
#include "common.hpp"

PYBIND11_MODULE(_core, m) {
    m.doc() = "Native binding of the oneDNN Graph API (CPU engine).";
    using namespace onednn_graph;
#ifdef ONEDNN_GRAPH_SYCL
    prepare_sycl_cpu_device(); // before anything asks oneDNN for a device
#endif
    bind_errors(m);
    bind_version(m);
    bind_onednn_thread(m); // the fork handler, before any oneDNN work
    bind_engine(m);
    bind_logical_tensor(m);
    bind_op(m);
    // Each object is registered before any signature names it (Tensor before
    // CompiledPartition.execute, CompiledPartition before Partition.compile).
    bind_tensor(m);
    bind_compiled_partition(m);
    bind_graph(m);
    bind_call_signature(m);
    bind_direct_call(m); // before CallCache, which runs NativeCalls
    bind_cast(m);        // before ChainCall, whose steps it may be
    bind_chain_call(m);
    bind_call_cache(m);
    bind_kernel_probe(m);
    bind_epilogue_probe(m);
}

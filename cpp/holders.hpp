// The C++ objects behind Op, CompiledPartition and Tensor. Each keeps what the
// oneDNN handle alone cannot give back (an op's attributes) or must not outlive
// (a tensor's buffer, a compiled partition's engine).
#pragma once
#include "buffers.hpp"
#include "common.hpp"

#include <memory>
#include <mutex>

namespace onednn_graph {

struct Op {
    dg::op op;
    size_t id;
    std::string kind;
    std::string name;
    std::vector<dg::logical_tensor> inputs;
    std::vector<dg::logical_tensor> outputs;
    py::dict attrs; // as set, for reading back: oneDNN has no attribute getter
};

struct CompiledPartition {
    dg::compiled_partition compiled;
    // A counted handle: oneDNN's compiled partition only borrows the engine,
    // and execute() needs a stream on this very engine.
    dnnl::engine engine;
    std::vector<dg::logical_tensor> inputs;  // as given to compile()
    std::vector<dg::logical_tensor> outputs; // as given to compile()
    std::vector<BufferSpec> input_specs, output_specs; // of inputs, outputs, for execute_arrays
    int threads = 0; // OpenMP threads it was compiled for and runs on (0: oneDNN's default)
    // The thread count oneDNN sized its kernels for: the OpenMP count when it compiled
    // (under the `threads` cap), which its kernels keep whatever the count later.
    int compiled_threads = 0;
    // Held while the partition executes: oneDNN 3.2 does not support running one
    // compiled partition on several threads at once (a backward-weights kernel
    // spun forever in its thread barrier here; uxlfoundation/oneDNN#4381 reports
    // crashes in 3.6). Different partitions still run in parallel.
    std::shared_ptr<std::mutex> executing = std::make_shared<std::mutex>();
    // One oneDNN tensor per input and output, made once and pointed at the caller's
    // buffers for each execution of arrays (execute_checked, under `executing`): a
    // tensor object per array per call was a third of a tiny call's binding cost.
    struct Tensors {
        std::vector<dg::tensor> inputs, outputs;
    };
    std::shared_ptr<Tensors> tensors;
};

struct Tensor {
    dg::logical_tensor logical;
    py::array array; // owns the memory oneDNN reads or writes
    dg::tensor tensor;
};

} // namespace onednn_graph

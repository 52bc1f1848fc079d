// Graph and Partition: ops go in, partitions come out, a partition compiles for
// an engine. Compilation runs without the GIL; the compiled partition keeps the
// engine alive, because oneDNN's compiled partition only borrows it.
#include "common.hpp"
#include "convert.hpp"
#include "errors.hpp"
#include "holders.hpp"
#include "onednn_thread.hpp"
#include "threads.hpp"

#include <future>

namespace onednn_graph {

namespace {

struct Graph {
    dg::graph graph;
    std::string engine_kind;
    std::string fpmath_mode;
    std::vector<size_t> op_ids;
};

// oneDNN 3.13's compiled-partition cache keeps a compile that failed by throwing
// (its backend's primitive-descriptor errors do) as a future without a value:
// every later compile of the same partition and tensors then throws
// std::future_error ("Broken promise") instead of oneDNN's error. Emptying the
// cache after any failed compile drops that entry (and the good ones: the package
// holds its compiled partitions itself, the cache only spares recompiles).
void forget_failed_compile() {
    const int capacity = dg::get_compiled_partition_cache_capacity();
    dg::set_compiled_partition_cache_capacity(0);
    dg::set_compiled_partition_cache_capacity(capacity);
}

dg::partition::policy to_policy(const std::string &name) {
    if (name == "fusion") return dg::partition::policy::fusion;
    if (name == "debug") return dg::partition::policy::debug;
    throw py::value_error("unknown partition policy '" + name + "'; expected 'fusion' or 'debug'");
}

CompiledPartition compile(const dg::partition &p, std::vector<dg::logical_tensor> inputs,
        std::vector<dg::logical_tensor> outputs, const dnnl::engine &engine, int threads) {
    if (threads < 0) throw py::value_error("compile: threads must be >= 0 (0: oneDNN's default), got "
            + std::to_string(threads));
    if (!can_limit_threads()) threads = 0;
    dg::compiled_partition compiled;
    int compiled_threads = 0;
    without_gil([&] {
        on_onednn_thread([&] {
            ThreadLimit limit(threads);
            compiled_threads = max_threads();
            try {
                compiled = p.compile(inputs, outputs, engine);
            } catch (const std::future_error &) {
                // See forget_failed_compile(): a compile that failed by throwing
                // before this one (in another thread's race) left the key unusable.
                forget_failed_compile();
                throw status_error(dnnl_runtime_error, "could not compile the partition: oneDNN's "
                        "compiled-partition cache held a failed compile of it (std::future_error)");
            } catch (...) {
                forget_failed_compile();
                throw;
            }
        });
    });
    // Outputs given with an unknown shape or layout are filled in by oneDNN;
    // remember what it decided, since execute() checks buffers against it.
    for (auto &lt : outputs)
        lt = compiled.query_logical_tensor(lt.get_id());
    for (auto &lt : inputs)
        lt = compiled.query_logical_tensor(lt.get_id());
    std::vector<BufferSpec> input_specs, output_specs;
    for (const auto &lt : inputs) input_specs.push_back(buffer_spec(lt));
    for (const auto &lt : outputs) output_specs.push_back(buffer_spec(lt));
    auto tensors = std::make_shared<CompiledPartition::Tensors>();
    for (const auto &lt : inputs) tensors->inputs.emplace_back(lt, engine, nullptr);
    for (const auto &lt : outputs) tensors->outputs.emplace_back(lt, engine, nullptr);
    return CompiledPartition {compiled, engine, std::move(inputs), std::move(outputs),
            std::move(input_specs), std::move(output_specs), threads, compiled_threads,
            std::make_shared<std::mutex>(), std::move(tensors)};
}

} // namespace

void bind_graph(py::module_ &m) {
    // Partition is registered before Graph's methods name it, so signatures
    // (and the generated _core.pyi) say "Partition", not the C++ type.
    py::class_<dg::partition> partition(m, "Partition", "A set of ops oneDNN compiles as one kernel.");
    py::class_<Graph>(m, "Graph", "A graph of ops to be partitioned and compiled.")
            .def(py::init([](const std::string &engine_kind, const std::string &fpmath_mode) {
                return Graph {dg::graph(to_engine_kind(engine_kind), to_fpmath_mode(fpmath_mode)),
                        engine_kind, fpmath_mode, {}};
            }),
                    py::arg("engine_kind") = "cpu", py::arg("fpmath_mode") = "strict")
            .def_readonly("engine_kind", &Graph::engine_kind)
            .def_readonly("fpmath_mode", &Graph::fpmath_mode)
            .def_readonly("op_ids", &Graph::op_ids)
            .def("add_op", [](Graph &g, const Op &op) {
                g.graph.add_op(op.op);
                g.op_ids.push_back(op.id);
            }, py::arg("op"))
            .def("finalize", [](Graph &g) { g.graph.finalize(); })
            .def_property_readonly("is_finalized", [](const Graph &g) { return g.graph.is_finalized(); })
            .def("get_partitions", [](Graph &g, const std::string &policy) {
                const auto pol = to_policy(policy);
                return without_gil([&] { return g.graph.get_partitions(pol); });
            }, py::arg("policy") = "fusion");

    partition.def_property_readonly("id", &dg::partition::get_id)
            .def_property_readonly("is_supported", &dg::partition::is_supported)
            .def_property_readonly("input_ports", &dg::partition::get_input_ports)
            .def_property_readonly("output_ports", &dg::partition::get_output_ports)
            .def_property_readonly("op_ids", &dg::partition::get_ops)
            .def_property_readonly("engine_kind",
                    [](const dg::partition &p) { return from_engine_kind(p.get_engine_kind()); })
            // No py::keep_alive<0, 4> here: pybind11 3.1.0 runs a return-value
            // keep_alive even when the arguments fail to convert, and crashes.
            .def("compile", &compile, py::arg("inputs"), py::arg("outputs"), py::arg("engine"),
                    py::arg("threads") = 0,
                    "Compile for `engine`. `threads` > 0 caps the OpenMP threads the partition is\n"
                    "compiled for and runs on (where oneDNN uses OpenMP; else ignored, see\n"
                    "CompiledPartition.threads); 0 leaves oneDNN's default.")
            .def("__repr__", [](const dg::partition &p) {
                return "Partition(id=" + std::to_string(p.get_id()) + ", supported="
                        + (p.is_supported() ? "True" : "False") + ")";
            });
}

} // namespace onednn_graph

// Engine and Stream. A Stream keeps its Engine alive: oneDNN's stream only
// borrows the engine it was created on. Every Engine allocates through the
// counting allocator, so the bytes oneDNN takes are readable from Python.
#include "allocator.hpp"
#include "common.hpp"
#include "convert.hpp"

namespace onednn_graph {

void bind_engine(py::module_ &m) {
    py::class_<dnnl::engine>(m, "Engine", "A oneDNN engine (the CPU).")
            .def(py::init([](const std::string &kind, int64_t index) {
                if (index < 0)
                    throw py::value_error("Engine: index must be >= 0, got "
                            + std::to_string(index));
                auto k = to_engine_kind(kind);
                if (index >= static_cast<int64_t>(dnnl::engine::get_count(k)))
                    throw py::value_error("Engine: no " + kind + " engine with index "
                            + std::to_string(index) + " (this oneDNN has "
                            + std::to_string(dnnl::engine::get_count(k)) + ")");
                return make_counted_engine(k, static_cast<size_t>(index));
            }),
                    py::arg("kind") = "cpu", py::arg("index") = 0)
            .def_property_readonly("kind",
                    [](const dnnl::engine &e) { return from_engine_kind(e.get_kind()); })
            .def("__repr__", [](const dnnl::engine &e) {
                return "Engine('" + from_engine_kind(e.get_kind()) + "')";
            });

    m.def("onednn_allocations", [] {
        const auto s = allocation_stats();
        py::dict d;
        d["current"] = s.current;
        d["peak"] = s.peak;
        d["allocations"] = s.allocations;
        d["cached"] = s.cached;
        d["fresh"] = s.fresh;
        return d;
    }, "Bytes oneDNN holds now (`current`), the most it held at once since the last\n"
       "reset_onednn_peak() (`peak`), and its number of allocations (`allocations`),\n"
       "through the package's engines: scratchpads, internal reorders, cached constants.\n"
       "`cached` is the bytes oneDNN freed that the package keeps for reuse (up to\n"
       "ONEDNN_GRAPH_CACHE_BYTES) and `fresh` the allocations that took new memory.");
    m.def("reset_onednn_peak", &reset_allocation_peak,
            "Start a new peak of onednn_allocations() from the bytes held now.");

    py::class_<dnnl::stream>(m, "Stream", "An execution stream on an Engine.")
            .def(py::init([](const dnnl::engine &e) { return dnnl::stream(e); }),
                    py::arg("engine"), py::keep_alive<1, 2>())
            .def("wait", [](dnnl::stream &s) {
                without_gil([&] { s.wait(); });
            }, "Block until everything submitted to the stream has finished.");
}

} // namespace onednn_graph

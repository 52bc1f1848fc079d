// CompiledPartition: query the logical tensors oneDNN decided on, and execute
// on Tensors. Every buffer is checked against the compiled logical tensor of
// its id before oneDNN touches it, so a short or read-only buffer is a Python
// exception, never a write past an array's end.
#include "common.hpp"
#include "convert.hpp"
#include "errors.hpp"
#include "holders.hpp"

#include <set>

namespace onednn_graph {

namespace {

// Returns oneDNN tensors for `given`, in the order given, after checking each
// against the compiled logical tensors `expected` (matched by id).
std::vector<dg::tensor> check_args(const char *role, const std::vector<dg::logical_tensor> &expected,
        const std::vector<const Tensor *> &given, bool writes) {
    std::set<size_t> seen;
    std::vector<dg::tensor> out;
    for (const Tensor *t : given) {
        if (!t) throw py::type_error(std::string("execute: ") + role + "s must be Tensors, got None");
        const size_t id = t->logical.get_id();
        const dg::logical_tensor *want = nullptr;
        for (const auto &e : expected)
            if (e.get_id() == id) want = &e;
        const std::string what = std::string(role) + " tensor with id " + std::to_string(id);
        if (!want) throw py::value_error("execute: " + what + " is not an " + role + " of this partition");
        if (!seen.insert(id).second) throw py::value_error("execute: " + what + " is given twice");
        if (want->get_data_type() != t->logical.get_data_type())
            throw py::value_error("execute: " + what + " has dtype " + from_data_type(t->logical.get_data_type())
                    + ", compiled for " + from_data_type(want->get_data_type()));
        if (want->get_layout_type() == layout_type::strided && t->logical.get_layout_type() == layout_type::strided) {
            // The Tensor's array has exactly these dims and strides (checked
            // when it was made), so it holds every element oneDNN addresses.
            // (nbytes would be wrong here: a stepped view spans more than it holds.)
            if (want->get_dims() != t->logical.get_dims() || want->get_strides() != t->logical.get_strides())
                throw py::value_error("execute: " + what + " has a shape or strides other than the compiled ones");
        } else if (static_cast<size_t>(t->array.nbytes()) < want->get_mem_size()) {
            throw py::value_error("execute: " + what + " holds " + std::to_string(t->array.nbytes())
                    + " bytes, the compiled partition needs " + std::to_string(want->get_mem_size()));
        }
        if (writes && !t->array.writeable())
            throw py::value_error("execute: " + what + " is read-only");
        out.push_back(t->tensor);
    }
    if (seen.size() != expected.size())
        throw py::value_error("execute: expected " + std::to_string(expected.size()) + " " + role
                + " tensors, got " + std::to_string(seen.size()));
    return out;
}

} // namespace

void bind_compiled_partition(py::module_ &m) {
    py::class_<CompiledPartition>(m, "CompiledPartition", "A partition compiled for an engine.")
            .def("query_logical_tensor", [](const CompiledPartition &c, int64_t id) {
                if (id < 0) throw py::value_error("query_logical_tensor: id must be >= 0");
                for (const auto &lts : {&c.inputs, &c.outputs})
                    for (const auto &lt : *lts)
                        if (lt.get_id() == static_cast<size_t>(id)) return lt;
                throw status_error(dnnl_invalid_arguments, "query_logical_tensor: no input or output with id "
                        + std::to_string(id) + " in this compiled partition");
            }, py::arg("id"))
            .def_property_readonly("inplace_ports", [](const CompiledPartition &c) {
                return c.compiled.get_inplace_ports();
            }, "Pairs (input id, output id) that may share memory.")
            .def_readonly("inputs", &CompiledPartition::inputs)
            .def_readonly("outputs", &CompiledPartition::outputs)
            .def("execute", [](const CompiledPartition &c, dnnl::stream &stream,
                                    const std::vector<const Tensor *> &inputs,
                                    const std::vector<const Tensor *> &outputs) {
                // oneDNN 3.2 fails (invalid_arguments) on a stream of another
                // engine object, even of the same kind and index.
                if (stream.get_engine().get() != c.engine.get())
                    throw py::value_error("execute: the stream belongs to another Engine than the one "
                            "the partition was compiled for; create the Stream on that Engine");
                auto ins = check_args("input", c.inputs, inputs, false);
                auto outs = check_args("output", c.outputs, outputs, true);
                // The Python lists hold the Tensors (and their arrays) for the
                // whole call, so the buffers outlive the GIL-free section.
                without_gil([&] {
                    c.compiled.execute(stream, ins, outs);
                    stream.wait();
                });
            }, py::arg("stream"), py::arg("inputs"), py::arg("outputs"))
            .def("execute_arrays", [](const CompiledPartition &c, dnnl::stream &stream,
                                           const py::sequence &inputs, const py::sequence &outputs) {
                // The hot path of compiled ops: NumPy arrays in the order the
                // partition was compiled with, no Tensor objects. Every array
                // gets the same checks as a Tensor's; dtypes are the caller's
                // to check (the item size is checked here).
                if (stream.get_engine().get() != c.engine.get())
                    throw py::value_error("execute_arrays: the stream belongs to another Engine than the "
                            "one the partition was compiled for");
                auto wrap = [&](const char *role, const std::vector<dg::logical_tensor> &lts,
                                    const py::sequence &arrays, bool writes) {
                    if (static_cast<size_t>(py::len(arrays)) != lts.size())
                        throw py::value_error(std::string("execute_arrays: expected ") + std::to_string(lts.size())
                                + " " + role + " arrays, got " + std::to_string(py::len(arrays)));
                    std::vector<py::array> held;
                    std::vector<dg::tensor> tensors;
                    for (size_t i = 0; i < lts.size(); ++i) {
                        py::object o = arrays[i];
                        const std::string who = std::string("execute_arrays: ") + role + " " + std::to_string(i);
                        if (!py::isinstance<py::array>(o)) throw py::type_error(who + " must be a numpy.ndarray");
                        auto a = py::reinterpret_borrow<py::array>(o);
                        check_buffer(lts[i], a, who);
                        if (writes && !a.writeable()) throw py::value_error(who + " is read-only");
                        tensors.emplace_back(lts[i], c.engine, const_cast<void *>(a.data()));
                        held.push_back(std::move(a));
                    }
                    return std::make_pair(std::move(held), std::move(tensors));
                };
                auto ins = wrap("input", c.inputs, inputs, false);
                auto outs = wrap("output", c.outputs, outputs, true);
                without_gil([&] {
                    c.compiled.execute(stream, ins.second, outs.second);
                    stream.wait();
                });
            }, py::arg("stream"), py::arg("inputs"), py::arg("outputs"),
                    "Execute on NumPy arrays given in the compiled order (no Tensor objects).");
}

} // namespace onednn_graph

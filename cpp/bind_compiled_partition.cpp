// CompiledPartition: query the logical tensors oneDNN decided on, and execute
// on Tensors. Every buffer is checked against the compiled logical tensor of
// its id before oneDNN touches it, so a short or read-only buffer is a Python
// exception, never a write past an array's end.
#include "common.hpp"
#include "convert.hpp"
#include "errors.hpp"
#include "buffers.hpp"
#include "holders.hpp"
#include "execute.hpp"

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
            .def_readonly("threads", &CompiledPartition::threads,
                    "OpenMP threads it was compiled for and runs on; 0: oneDNN's default.")
            .def_readonly("compiled_threads", &CompiledPartition::compiled_threads,
                    "The threads oneDNN sized its kernels for: the OpenMP thread count when it "
                    "compiled (under `threads`), which its kernels run whatever the count later.")
            .def_readonly("inputs", &CompiledPartition::inputs)
            .def_readonly("outputs", &CompiledPartition::outputs)
            .def("execute", [](const CompiledPartition &c, dnnl::stream &stream,
                                    const std::vector<const Tensor *> &inputs,
                                    const std::vector<const Tensor *> &outputs) {
                check_stream(c, stream, "execute");
                CheckedArrays checked;
                checked.input_tensors = check_args("input", c.inputs, inputs, false);
                checked.output_tensors = check_args("output", c.outputs, outputs, true);
                std::vector<dg::logical_tensor> in_lts, out_lts;
                for (const Tensor *t : inputs) in_lts.push_back(t->logical), checked.inputs.push_back(t->array);
                for (const Tensor *t : outputs) out_lts.push_back(t->logical), checked.outputs.push_back(t->array);
                check_no_overlap(c, in_lts, checked.inputs, out_lts, checked.outputs);
                // The Python lists hold the Tensors too; `checked` holds their
                // arrays, so the buffers outlive the GIL-free section.
                run_checked(c, stream, checked);
            }, py::arg("stream"), py::arg("inputs"), py::arg("outputs"))
            .def("execute_arrays", [](const CompiledPartition &c, dnnl::stream &stream,
                                           const py::sequence &inputs, const py::sequence &outputs) {
                // The hot path of compiled ops: NumPy arrays in the order the
                // partition was compiled with, no Tensor objects. Every array
                // gets the same checks as a Tensor's: compared against the
                // precomputed BufferSpec, and only on a mismatch by check_buffer,
                // which names what is wrong (or accepts an equal dtype object).
                check_stream(c, stream, "execute_arrays");
                // `checked` holds every array while oneDNN runs without the
                // GIL, even if another thread empties the caller's list meanwhile.
                const auto ins = py::reinterpret_steal<py::object>(PySequence_Fast(inputs.ptr(), "inputs"));
                if (!ins) throw py::error_already_set();
                const auto outs = py::reinterpret_steal<py::object>(PySequence_Fast(outputs.ptr(), "outputs"));
                if (!outs) throw py::error_already_set();
                run_checked(c, stream, check_arrays(c, "execute_arrays", array_list(ins), array_list(outs)));
            }, py::arg("stream"), py::arg("inputs"), py::arg("outputs"),
                    "Execute on NumPy arrays given in the compiled order (no Tensor objects).");
}

} // namespace onednn_graph

// CompiledPartition: query the logical tensors oneDNN decided on, and execute
// on Tensors. Every buffer is checked against the compiled logical tensor of
// its id before oneDNN touches it, so a short or read-only buffer is a Python
// exception, never a write past an array's end.
#include "common.hpp"
#include "convert.hpp"
#include "errors.hpp"
#include "buffers.hpp"
#include "holders.hpp"
#include "threads.hpp"

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

// Arrays checked against a compiled partition's logical tensors, and the
// oneDNN tensors over their memory.
struct WrappedArrays {
    std::vector<py::array> arrays; // held for the whole call
    std::vector<dg::tensor> tensors;
};

WrappedArrays wrap_arrays(const char *role, const std::vector<dg::logical_tensor> &lts,
        const std::vector<BufferSpec> &specs, const py::sequence &given, bool writes,
        const dnnl::engine &engine) {
    const size_t n = static_cast<size_t>(py::len(given));
    if (n != lts.size())
        throw py::value_error(std::string("execute_arrays: expected ") + std::to_string(lts.size())
                + " " + role + " arrays, got " + std::to_string(n));
    WrappedArrays w;
    w.arrays.reserve(n);
    w.tensors.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        py::object o = given[i];
        if (!py::isinstance<py::array>(o) || !fits(specs[i], py::reinterpret_borrow<py::array>(o), writes)) {
            // The slow path: the full check, with a message naming the array.
            const std::string who = std::string("execute_arrays: ") + role + " " + std::to_string(i);
            if (!py::isinstance<py::array>(o)) throw py::type_error(who + " must be a numpy.ndarray");
            auto a = py::reinterpret_borrow<py::array>(o);
            check_buffer(lts[i], a, who);
            if (writes && !a.writeable()) throw py::value_error(who + " is read-only");
        }
        auto a = py::reinterpret_steal<py::array>(o.release());
        w.tensors.emplace_back(lts[i], engine, const_cast<void *>(a.data()));
        w.arrays.push_back(std::move(a));
    }
    return w;
}

// oneDNN would read what it writes: an output may share memory with an input
// only where the compiled partition names the pair (input id, output id) as
// in-place. Arrays come with their logical tensors, in the caller's order; ids
// are read only for an overlapping pair, so the hot path pays two bounds tests.
void check_no_overlap(const CompiledPartition &c, const std::vector<dg::logical_tensor> &in_lts,
        const std::vector<py::array> &ins, const std::vector<dg::logical_tensor> &out_lts,
        const std::vector<py::array> &outs) {
    for (size_t o = 0; o < outs.size(); ++o)
        for (size_t i = 0; i < ins.size(); ++i) {
            if (!overlaps(outs[o], ins[i])) continue;
            const size_t in_id = in_lts[i].get_id(), out_id = out_lts[o].get_id();
            const std::pair<size_t, size_t> pair {in_id, out_id};
            bool inplace = false;
            for (const auto &p : c.compiled.get_inplace_ports()) inplace |= p == pair;
            if (!inplace)
                throw py::value_error("execute: output " + std::to_string(o) + " (id " + std::to_string(out_id)
                        + ") shares memory with input " + std::to_string(i) + " (id " + std::to_string(in_id)
                        + "), and the partition does not compute them in place; oneDNN would read what it writes");
        }
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
                std::vector<dg::logical_tensor> in_lts, out_lts;
                std::vector<py::array> in_arrays, out_arrays;
                for (const Tensor *t : inputs) in_lts.push_back(t->logical), in_arrays.push_back(t->array);
                for (const Tensor *t : outputs) out_lts.push_back(t->logical), out_arrays.push_back(t->array);
                check_no_overlap(c, in_lts, in_arrays, out_lts, out_arrays);
                // The Python lists hold the Tensors (and their arrays) for the
                // whole call, so the buffers outlive the GIL-free section.
                without_gil([&] {
                    std::lock_guard<std::mutex> one_at_a_time(*c.executing);
                    ThreadLimit limit(c.threads);
                    c.compiled.execute(stream, ins, outs);
                    stream.wait();
                });
            }, py::arg("stream"), py::arg("inputs"), py::arg("outputs"))
            .def("execute_arrays", [](const CompiledPartition &c, dnnl::stream &stream,
                                           const py::sequence &inputs, const py::sequence &outputs) {
                // The hot path of compiled ops: NumPy arrays in the order the
                // partition was compiled with, no Tensor objects. Every array
                // gets the same checks as a Tensor's: compared against the
                // precomputed BufferSpec, and only on a mismatch by check_buffer,
                // which names what is wrong (or accepts an equal dtype object).
                if (stream.get_engine().get() != c.engine.get())
                    throw py::value_error("execute_arrays: the stream belongs to another Engine than the "
                            "one the partition was compiled for");
                auto ins = wrap_arrays("input", c.inputs, c.input_specs, inputs, false, c.engine);
                auto outs = wrap_arrays("output", c.outputs, c.output_specs, outputs, true, c.engine);
                check_no_overlap(c, c.inputs, ins.arrays, c.outputs, outs.arrays);
                // `held` keeps every array alive while oneDNN runs without the
                // GIL, even if another thread empties the caller's list meanwhile.
                without_gil([&] {
                    std::lock_guard<std::mutex> one_at_a_time(*c.executing);
                    ThreadLimit limit(c.threads);
                    c.compiled.execute(stream, ins.tensors, outs.tensors);
                    stream.wait();
                });
            }, py::arg("stream"), py::arg("inputs"), py::arg("outputs"),
                    "Execute on NumPy arrays given in the compiled order (no Tensor objects).");
}

} // namespace onednn_graph

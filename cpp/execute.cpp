// Executing a compiled partition on NumPy arrays (see execute.hpp).
#include "execute.hpp"
#include "onednn_thread.hpp"
#include "threads.hpp"

#include <mutex>

namespace onednn_graph {

namespace {

// Holds each of `given` after checking it against its logical tensor: the
// precomputed BufferSpec first, check_buffer (which names what is wrong, or
// accepts an equal dtype object) only on a mismatch.
void wrap(const char *who, const char *role, const std::vector<dg::logical_tensor> &lts,
        const std::vector<BufferSpec> &specs, ArrayList given, bool writes, std::vector<py::array> &held) {
    if (given.size != lts.size())
        throw py::value_error(std::string(who) + ": expected " + std::to_string(lts.size()) + " " + role
                + " arrays, got " + std::to_string(given.size));
    held.reserve(given.size);
    for (size_t i = 0; i < given.size; ++i) {
        py::handle o = given.items[i];
        const bool is_array = py::isinstance<py::array>(o);
        if (!is_array || !fits(specs[i], py::reinterpret_borrow<py::array>(o), writes)) {
            const std::string name = std::string(who) + ": " + role + " " + std::to_string(i);
            if (!is_array) throw py::type_error(name + " must be a numpy.ndarray");
            auto a = py::reinterpret_borrow<py::array>(o);
            check_buffer(lts[i], a, name);
            if (writes && !a.writeable()) throw py::value_error(name + " is read-only");
        }
        held.push_back(py::reinterpret_borrow<py::array>(o));
    }
}

} // namespace

py::object first_rows(PyObject *a, py::ssize_t start, py::ssize_t rows) {
    const auto array = py::reinterpret_borrow<py::array>(a);
    std::vector<py::ssize_t> shape(array.shape(), array.shape() + array.ndim());
    std::vector<py::ssize_t> strides(array.strides(), array.strides() + array.ndim());
    shape[0] = rows;
    return py::array(array.dtype(), shape, strides,
            static_cast<const char *>(array.data()) + start * strides[0], array);
}

py::ssize_t parted_batch(PyObject *target, ArrayList inputs, const std::vector<size_t> &batched, py::ssize_t rows) {
    const auto batch_of = [](PyObject *a) {
        if (!py::isinstance<py::array>(a)) return py::ssize_t(-1);
        const auto array = py::reinterpret_borrow<py::array>(a);
        return array.ndim() > 0 ? array.shape(0) : py::ssize_t(-1);
    };
    const py::ssize_t batch = batch_of(target);
    if (rows <= 0 || batch <= 0 || batch % rows != 0) return -1;
    for (size_t b : batched)
        if (b >= inputs.size || batch_of(inputs.items[b]) != batch) return -1;
    return batch;
}

void check_stream(const CompiledPartition &c, const dnnl::stream &stream, const char *who) {
    if (stream.get_engine().get() != c.engine.get())
        throw py::value_error(std::string(who) + ": the stream belongs to another Engine than the one the "
                "partition was compiled for; create the Stream on that Engine");
}

// Ids are read only for an overlapping pair, so the hot path pays two bounds tests.
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

CheckedArrays check_arrays(const CompiledPartition &c, const char *who, ArrayList inputs, ArrayList outputs) {
    CheckedArrays checked;
    wrap(who, "input", c.inputs, c.input_specs, inputs, false, checked.inputs);
    wrap(who, "output", c.outputs, c.output_specs, outputs, true, checked.outputs);
    check_no_overlap(c, c.inputs, checked.inputs, c.outputs, checked.outputs);
    return checked;
}

void execute_checked(const CompiledPartition &c, dnnl::stream &stream, const CheckedArrays &arrays) {
    std::lock_guard<std::mutex> one_at_a_time(*c.executing);
    ThreadLimit limit(c.threads);
    if (arrays.input_tensors.empty() && arrays.output_tensors.empty()) {
        // Arrays (check_arrays): the partition's own tensors, pointed at them
        // while this thread holds the lock.
        auto &own = *c.tensors;
        for (size_t i = 0; i < own.inputs.size(); ++i)
            own.inputs[i].set_data_handle(const_cast<void *>(arrays.inputs[i].data()));
        for (size_t i = 0; i < own.outputs.size(); ++i)
            own.outputs[i].set_data_handle(const_cast<void *>(arrays.outputs[i].data()));
        c.compiled.execute(stream, own.inputs, own.outputs);
    } else {
        c.compiled.execute(stream, arrays.input_tensors, arrays.output_tensors);
    }
    stream.wait();
}

void run_checked(const CompiledPartition &c, dnnl::stream &stream, const CheckedArrays &arrays) {
    without_gil([&] { on_onednn_thread([&] { execute_checked(c, stream, arrays); }); });
}

} // namespace onednn_graph

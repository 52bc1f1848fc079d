// DirectCall (see direct_call.hpp): the hot path of the functional API and of
// compiled ops, where Python's own frames cost as much as oneDNN's tiny kernels.
#include "direct_call.hpp"
#include "buffers.hpp"
#include "execute.hpp"
#include "onednn_thread.hpp"

namespace onednn_graph {

py::object DirectCall::run(dnnl::stream &stream, py::handle arrays, py::handle out) const {
    if (!out.is_none() && !exact_array(out)) return py::none();
    const auto given = py::reinterpret_steal<py::object>(PySequence_Fast(arrays.ptr(), "arrays"));
    if (!given) throw py::error_already_set();
    ArrayList inputs = array_list(given);
    std::vector<PyObject *> ordered;
    if (!order.empty()) {
        if (inputs.size != order.size()) return py::none();
        for (size_t i : order) ordered.push_back(inputs.items[i]);
        inputs.items = ordered.data();
    }
    py::object target = result_or_out(out, dtype, shape);
    if (rows == 0) {
        PyObject *const outputs[1] = {target.ptr()};
        CheckedArrays checked;
        try {
            check_stream(*compiled, stream, "execute");
            checked = check_arrays(*compiled, "execute", inputs, ArrayList {outputs, 1});
        } catch (const py::type_error &) {
            return py::none();
        } catch (const py::value_error &) {
            return py::none();
        }
        run_checked(*compiled, stream, checked);
        return target;
    }
    // The batch in parts: views of the batched inputs and of the result per part,
    // every part checked before the first runs.
    const py::ssize_t batch = parted_batch(target.ptr(), inputs, batched, rows);
    if (batch < 0) return py::none();
    const size_t parts = static_cast<size_t>(batch / rows);
    if (!out.is_none())  // each part's check sees only its own rows of `out`
        for (size_t i = 0; i < inputs.size; ++i)
            if (py::isinstance<py::array>(inputs.items[i])
                    && overlaps(py::reinterpret_borrow<py::array>(out), py::reinterpret_borrow<py::array>(inputs.items[i])))
                return py::none();
    std::vector<py::object> views; // held while the parts run
    std::vector<PyObject *> part(inputs.items, inputs.items + inputs.size);
    std::vector<CheckedArrays> checked(parts);
    try {
        check_stream(*compiled, stream, "execute");
        for (size_t p = 0; p < parts; ++p) {
            const py::ssize_t start = static_cast<py::ssize_t>(p) * rows;
            for (size_t b : batched) {
                views.push_back(first_rows(inputs.items[b], start, rows));
                part[b] = views.back().ptr();
            }
            views.push_back(first_rows(target.ptr(), start, rows));
            PyObject *const outputs[1] = {views.back().ptr()};
            checked[p] = check_arrays(*compiled, "execute", ArrayList {part.data(), part.size()}, ArrayList {outputs, 1});
        }
    } catch (const py::type_error &) {
        return py::none();
    } catch (const py::value_error &) {
        return py::none();
    }
    without_gil([&] {
        on_onednn_thread([&] {
            for (const CheckedArrays &arrays : checked) execute_checked(*compiled, stream, arrays);
        });
    });
    return target;
}

void bind_direct_call(py::module_ &m) {
    py::class_<NativeCall>(m, "NativeCall", "A cached call run in one native call (DirectCall, ChainCall).")
            .def("run", &NativeCall::run, py::arg("stream"), py::arg("arrays"), py::arg("out"),
                    "Run on `arrays` (in the caller's order), writing `out` or a new result, and\n"
                    "return it; None when anything is refused (nothing ran).");
    py::class_<DirectCall, NativeCall>(m, "DirectCall",
            "A compiled op's call on the caller's arrays, checked and run in one native call.")
            .def(py::init([](py::object partition, std::vector<size_t> order, std::vector<py::ssize_t> shape,
                                  py::dtype dtype, std::vector<size_t> batched, py::ssize_t rows) {
                const auto &c = partition.cast<const CompiledPartition &>();
                if (c.outputs.size() != 1)
                    throw py::value_error("DirectCall: the partition must have one output, it has "
                            + std::to_string(c.outputs.size()));
                const size_t n = order.empty() ? c.inputs.size() : order.size();
                if (n != c.inputs.size())
                    throw py::value_error("DirectCall: order names " + std::to_string(n)
                            + " inputs, the partition has " + std::to_string(c.inputs.size()));
                std::vector<bool> seen(n);
                for (size_t i : order) {
                    if (i >= n || seen[i])
                        throw py::value_error("DirectCall: order must be a permutation of 0.." + std::to_string(n - 1)
                                + ", it holds " + std::to_string(i) + (i >= n ? "" : " twice"));
                    seen[i] = true;
                }
                if (rows < 0) throw py::value_error("DirectCall: rows must be >= 0");
                for (size_t b : batched)
                    if (b >= n) throw py::value_error("DirectCall: batched names input " + std::to_string(b)
                            + ", the partition has " + std::to_string(n));
                return DirectCall(partition, &c, std::move(order), std::move(shape), std::move(dtype),
                        std::move(batched), rows);
            }), py::arg("partition"), py::arg("order"), py::arg("shape"), py::arg("dtype"),
                    py::arg("batched") = std::vector<size_t>(), py::arg("rows") = 0,
                    "`order[j]` is the caller's position of the partition's input j (empty: as\n"
                    "given); `shape` and `dtype` are those of a new result. With `rows` > 0 the\n"
                    "partition was compiled for `rows` samples and runs once per part of the batch:\n"
                    "its inputs at positions `batched` and the result are split along their first axis.");
}

} // namespace onednn_graph

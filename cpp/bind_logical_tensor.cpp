// LogicalTensor: id, dtype, shape, strides, layout and property of a tensor,
// without data. Unknown rank is shape=None; unknown dims are -1.
#include "common.hpp"
#include "convert.hpp"

#include <algorithm>
#include <optional>

namespace onednn_graph {

// A dtype given as a NumPy dtype or type goes through the package's one dtype
// table (_dtypes.py); strings are taken as oneDNN's names.
static data_type dtype_arg(py::handle dtype) {
    if (py::isinstance<py::str>(dtype)) {
        try {
            return to_data_type(dtype.cast<std::string>());
        } catch (const py::value_error &e) {
            throw py::type_error(std::string("unsupported ") + (e.what() + 8)); // drop "unknown "
        }
    }
    py::object name = py::module_::import("onednn_graph._impl.arrays").attr("dtype_name")(dtype);
    return to_data_type(name.cast<std::string>());
}

// oneDNN computes a tensor's size in int64 without checking for overflow, so the
// bytes it spans (dense, or up to the last strided element) are checked here.
static void check_extent(const dims &shape, const std::optional<dims> &strides, size_t itemsize) {
    int64_t last = 0, dense = 1; // offset of the last element, element count
    for (size_t i = 0; i < shape.size(); ++i) {
        const int64_t d = shape[i];
        if (d == DNNL_GRAPH_UNKNOWN_DIM) return; // not known yet: checked when it is
        if (d == 0) return;
        int64_t term = 0;
        bool overflow = __builtin_mul_overflow(dense, d, &dense);
        if (strides) overflow = overflow || __builtin_mul_overflow(d - 1, (*strides)[i], &term)
                || __builtin_add_overflow(last, term, &last);
        int64_t bytes = 0;
        if (overflow || __builtin_mul_overflow(std::max(dense, last + 1), static_cast<int64_t>(itemsize), &bytes))
            throw py::value_error("LogicalTensor: shape (and strides) span more than 2**63-1 bytes "
                                  "(oneDNN's sizes are int64)");
    }
}

static dg::logical_tensor make_logical_tensor(int64_t id, py::handle dtype,
        std::optional<dims> shape, std::optional<dims> strides,
        const std::string &layout, const std::string &property) {
    if (id < 0)
        throw py::value_error("LogicalTensor: id must be >= 0, got " + std::to_string(id));
    const auto dt = dtype_arg(dtype);
    const auto lt = to_layout_type(layout);
    const auto pt = to_property_type(property);
    const auto tid = static_cast<size_t>(id);
    if (!shape) {
        if (strides)
            throw py::value_error("LogicalTensor: strides need a shape (shape is None)");
        return dg::logical_tensor(tid, dt, DNNL_GRAPH_UNKNOWN_NDIMS, lt, pt);
    }
    if (shape->size() > DNNL_MAX_NDIMS)
        throw py::value_error("LogicalTensor: at most " + std::to_string(DNNL_MAX_NDIMS)
                + " dimensions, got " + std::to_string(shape->size()));
    // Python spells an unknown dim -1; oneDNN has its own sentinel.
    for (auto &d : *shape) {
        if (d < -1) throw py::value_error("LogicalTensor: shape entries must be >= 0 or -1 (unknown)");
        if (d == -1) d = DNNL_GRAPH_UNKNOWN_DIM;
    }
    if (strides) {
        if (lt != layout_type::strided)
            throw py::value_error("LogicalTensor: strides are only meaningful with layout='strided'");
        if (strides->size() != shape->size())
            throw py::value_error("LogicalTensor: strides must have one entry per dimension ("
                    + std::to_string(shape->size()) + "), got " + std::to_string(strides->size()));
        // oneDNN's kernels and size computations assume positive strides.
        for (auto s : *strides)
            if (s < 1)
                throw py::value_error("LogicalTensor: strides must be >= 1, got " + std::to_string(s));
    }
    check_extent(*shape, strides, data_type_size(dt));
    if (strides) return dg::logical_tensor(tid, dt, *shape, *strides, pt);
    return dg::logical_tensor(tid, dt, *shape, lt, pt);
}

// The C++ API has no rank getter and get_dims() throws for an unknown rank.
static int ndims_of(const dg::logical_tensor &t) {
    try {
        return static_cast<int>(t.get_dims().size());
    } catch (const dnnl::error &) { return -1; }
}

static std::string repr(const dg::logical_tensor &t) {
    std::string s = "LogicalTensor(id=" + std::to_string(t.get_id()) + ", dtype='"
            + from_data_type(t.get_data_type()) + "', shape=";
    if (ndims_of(t) < 0) {
        s += "None";
    } else {
        const auto d = t.get_dims();
        s += "(";
        for (size_t i = 0; i < d.size(); ++i)
            s += (i ? ", " : "") + std::to_string(d[i] == DNNL_GRAPH_UNKNOWN_DIM ? -1 : d[i]);
        s += d.size() == 1 ? ",)" : ")";
    }
    return s + ", layout='" + from_layout_type(t.get_layout_type()) + "', property='"
            + from_property_type(t.get_property_type()) + "')";
}

void bind_logical_tensor(py::module_ &m) {
    py::class_<dg::logical_tensor>(m, "LogicalTensor",
            "Metadata of a tensor: id, dtype, shape, strides, layout, property.")
            .def(py::init(&make_logical_tensor), py::arg("id"), py::arg("dtype"),
                    py::arg("shape"), py::arg("strides") = py::none(),
                    py::arg("layout") = "strided", py::arg("property") = "variable")
            .def_property_readonly("id", &dg::logical_tensor::get_id)
            .def_property_readonly("dtype",
                    [](const dg::logical_tensor &t) { return from_data_type(t.get_data_type()); })
            .def_property_readonly("ndim", &ndims_of,
                    "Number of dimensions, -1 when unknown.")
            .def_property_readonly("shape", [](const dg::logical_tensor &t) -> py::object {
                if (ndims_of(t) < 0) return py::none();
                auto d = t.get_dims();
                for (auto &x : d)
                    if (x == DNNL_GRAPH_UNKNOWN_DIM) x = -1;
                return py::tuple(py::cast(d));
            })
            .def_property_readonly("strides", [](const dg::logical_tensor &t) -> py::object {
                // Strides exist only for a strided layout of known rank.
                if (ndims_of(t) < 0 || t.get_layout_type() != layout_type::strided)
                    return py::none();
                return py::tuple(py::cast(t.get_strides()));
            }, "Strides in elements, or None when the layout is not strided.")
            .def_property_readonly("layout",
                    [](const dg::logical_tensor &t) { return from_layout_type(t.get_layout_type()); })
            .def_property_readonly("layout_id", [](const dg::logical_tensor &t) -> py::object {
                if (t.get_layout_type() != layout_type::opaque) return py::none();
                return py::int_(t.get_layout_id());
            }, "oneDNN's id of an opaque layout, else None.")
            .def_property_readonly("property",
                    [](const dg::logical_tensor &t) { return from_property_type(t.get_property_type()); })
            .def_property_readonly("itemsize",
                    [](const dg::logical_tensor &t) { return data_type_size(t.get_data_type()); })
            .def_property_readonly("nbytes", &dg::logical_tensor::get_mem_size,
                    "Bytes of memory the tensor needs in its layout.")
            .def("is_equal", &dg::logical_tensor::is_equal, py::arg("other"),
                    "True when both describe the same tensor (id, dtype, shape, layout).")
            .def("__eq__", [](const dg::logical_tensor &a, const dg::logical_tensor &b) {
                return a.is_equal(b);
            })
            .def("__repr__", &repr);
}

} // namespace onednn_graph

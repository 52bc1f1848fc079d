// Op: one operation with typed attributes. Values are checked against the type
// oneDNN stores for each attribute, so a wrong type is a TypeError naming the
// attribute rather than a silent conversion (bool is never taken as an int).
#include "common.hpp"
#include "convert.hpp"
#include "holders.hpp"

namespace onednn_graph {

namespace {

bool is_bool(py::handle v) {
    // numpy.bool_ is not a Python bool but must not pass as an integer either.
    return PyBool_Check(v.ptr()) || py::type::of(v).attr("__name__").cast<std::string>() == "bool";
}

bool is_integer(py::handle v) {
    return !is_bool(v) && (PyLong_Check(v.ptr()) || PyIndex_Check(v.ptr()))
            && !PyFloat_Check(v.ptr());
}

int64_t as_s64(const std::string &name, py::handle v) {
    if (!is_integer(v))
        throw py::type_error("attribute '" + name + "' must be an int (s64), got "
                + std::string(py::str(py::type::of(v).attr("__name__"))));
    return py::int_(py::reinterpret_borrow<py::object>(v)).cast<int64_t>();
}

float as_f32(const std::string &name, py::handle v) {
    if (is_bool(v) || !(PyFloat_Check(v.ptr()) || is_integer(v)))
        throw py::type_error("attribute '" + name + "' must be a float (f32), got "
                + std::string(py::str(py::type::of(v).attr("__name__"))));
    return py::float_(py::reinterpret_borrow<py::object>(v)).cast<float>();
}

py::sequence as_list(const std::string &name, py::handle v, const char *what) {
    if (py::isinstance<py::str>(v) || py::isinstance<py::bytes>(v) || !py::isinstance<py::sequence>(v))
        throw py::type_error("attribute '" + name + "' must be a list of " + what + ", got "
                + std::string(py::str(py::type::of(v).attr("__name__"))));
    return py::reinterpret_borrow<py::sequence>(v);
}

// Sets one attribute on `op` and returns the value as stored (plain Python).
py::object set_attr(dg::op &op, const std::string &name, py::handle v) {
    const auto info = to_attr(name);
    switch (info.type) {
        case attr_type::s64: {
            auto x = as_s64(name, v);
            op.set_attr<int64_t>(info.attr, x);
            return py::int_(x);
        }
        case attr_type::f32: {
            auto x = as_f32(name, v);
            op.set_attr<float>(info.attr, x);
            return py::float_(x);
        }
        case attr_type::s64_list: {
            std::vector<int64_t> xs;
            for (auto item : as_list(name, v, "ints"))
                xs.push_back(as_s64(name, item));
            op.set_attr<std::vector<int64_t>>(info.attr, xs);
            return py::cast(xs);
        }
        case attr_type::f32_list: {
            std::vector<float> xs;
            for (auto item : as_list(name, v, "floats"))
                xs.push_back(as_f32(name, item));
            op.set_attr<std::vector<float>>(info.attr, xs);
            return py::cast(xs);
        }
        case attr_type::boolean: {
            if (!is_bool(v))
                throw py::type_error("attribute '" + name + "' must be a bool");
            bool x = py::bool_(py::reinterpret_borrow<py::object>(v));
            op.set_attr<bool>(info.attr, x);
            return py::bool_(x);
        }
        default: {
            if (!py::isinstance<py::str>(v))
                throw py::type_error("attribute '" + name + "' must be a str");
            auto x = v.cast<std::string>();
            op.set_attr<std::string>(info.attr, x);
            return py::str(x);
        }
    }
}

Op make_op(int64_t id, const std::string &kind, std::vector<dg::logical_tensor> inputs,
        std::vector<dg::logical_tensor> outputs, std::optional<py::dict> attrs,
        const std::string &name) {
    if (id < 0) throw py::value_error("Op: id must be >= 0, got " + std::to_string(id));
    Op result {dg::op(static_cast<size_t>(id), to_op_kind(kind), inputs, outputs, name),
            static_cast<size_t>(id), kind, name, std::move(inputs), std::move(outputs),
            py::dict()};
    if (attrs)
        for (auto item : *attrs) {
            if (!py::isinstance<py::str>(item.first))
                throw py::type_error("Op: attribute names must be str");
            auto key = item.first.cast<std::string>();
            result.attrs[py::str(key)] = set_attr(result.op, key, item.second);
        }
    return result;
}

} // namespace

void bind_op(py::module_ &m) {
    m.def("op_kinds", &op_kind_names, "Op kinds the linked oneDNN knows, by name.");
    m.def("attr_types", [] {
        py::dict d;
        for (const auto &n : attr_names())
            d[py::str(n)] = attr_type_name(to_attr(n).type);
        return d;
    }, "Every attribute name oneDNN knows and the type it stores.");

    py::class_<Op>(m, "Op", "One oneDNN Graph operation with typed attributes.")
            .def(py::init(&make_op), py::arg("id"), py::arg("kind"), py::arg("inputs"),
                    py::arg("outputs"), py::arg("attrs") = py::none(), py::arg("name") = "")
            .def_readonly("id", &Op::id)
            .def_readonly("kind", &Op::kind)
            .def_readonly("name", &Op::name)
            .def_readonly("inputs", &Op::inputs)
            .def_readonly("outputs", &Op::outputs)
            .def_property_readonly("attrs", [](const Op &o) { return py::dict(o.attrs); },
                    "A copy of the attributes as set.")
            .def("__repr__", [](const Op &o) {
                return "Op(id=" + std::to_string(o.id) + ", kind='" + o.kind + "')";
            });
}

} // namespace onednn_graph

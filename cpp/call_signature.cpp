// call_signature: the functional API's cache key, computed in one native call.
// Building it in Python (a tuple of shapes, strides and dtypes per array, and
// of the keyword values) cost more than the rest of a cached call; here it is a
// bytes object, which Python hashes once and compares with memcmp.
#include "call_signature.hpp"
#include "buffers.hpp"

#include <cstring>

namespace onednn_graph {

namespace {

// Appends tagged, length-prefixed fields, so that no two different calls
// encode to the same bytes. A usual call's key (452 bytes for a 2-D
// ConvTranspose with bias and out) fits the stack buffer: no allocation, and
// each field is one memcpy (std::string::append cost 1,500 instructions a call).
class Encoder {
public:
    void tag(char t) { raw(&t, 1); }
    void i64(int64_t v) { raw(&v, sizeof v); }
    void text(const char *s, Py_ssize_t n) {
        i64(n);
        raw(s, static_cast<size_t>(n));
    }
    py::bytes done() const {
        return size_ <= sizeof stack_ ? py::bytes(stack_, size_) : py::bytes(heap_.data(), heap_.size());
    }

private:
    void raw(const void *p, size_t n) {
        if (size_ + n <= sizeof stack_) {
            std::memcpy(stack_ + size_, p, n);
        } else {
            if (heap_.empty()) heap_.assign(stack_, size_); // the first overflow moves what was written
            heap_.append(static_cast<const char *>(p), n);
        }
        size_ += n;
    }
    char stack_[1024];
    size_t size_ = 0;
    std::string heap_;
};

// An ndarray's shape, strides and dtype (its type number and byte order: a
// dtype object's address could be reused by another dtype).
void encode_array(Encoder &e, PyObject *o) {
    const auto *a = py::detail::array_proxy(o);
    const auto *d = py::detail::array_descriptor_proxy(a->descr);
    e.tag('a');
    e.i64(d->type_num);
    e.i64(d->byteorder);
    e.i64(py::reinterpret_borrow<py::array>(o).itemsize());
    e.i64(a->nd);
    for (int i = 0; i < a->nd; ++i) {
        e.i64(a->dimensions[i]);
        e.i64(a->strides[i]);
    }
}

// An exact int that fits in int64.
bool encode_int(Encoder &e, PyObject *o) {
    if (!PyLong_CheckExact(o)) return false;
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) return false;
    e.i64(v);
    return true;
}

// None, an exact int or str, or an exact tuple or list of ints: what keyword
// values usually are. Anything else (a bool, a float, a NumPy integer) is left
// to the Python signature, which keeps its type.
bool encode_value(Encoder &e, PyObject *o) {
    if (o == Py_None) return e.tag('N'), true;
    if (PyLong_CheckExact(o)) return e.tag('i'), encode_int(e, o);
    if (PyUnicode_CheckExact(o)) {
        Py_ssize_t n = 0;
        const char *s = PyUnicode_AsUTF8AndSize(o, &n);
        if (!s) throw py::error_already_set();
        e.tag('s');
        e.text(s, n);
        return true;
    }
    if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) {
        // A tuple and a list of the same ints are the same keyword value.
        const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        e.tag('q');
        e.i64(n);
        for (Py_ssize_t i = 0; i < n; ++i)
            if (!encode_int(e, PySequence_Fast_GET_ITEM(o, i))) return false;
        return true;
    }
    return false;
}

} // namespace

py::object call_signature(py::handle kind, py::handle arrays, py::handle out, py::handle values) {
    Encoder e;
    Py_ssize_t n = 0;
    const char *k = PyUnicode_AsUTF8AndSize(kind.ptr(), &n);
    if (!k) throw py::error_already_set();
    e.text(k, n);
    if (!PyTuple_CheckExact(arrays.ptr()) || !PyTuple_CheckExact(values.ptr()))
        throw py::type_error("call_signature: arrays and values must be tuples");
    for (const auto &a : py::reinterpret_borrow<py::tuple>(arrays)) {
        if (!exact_array(a)) return py::none();
        encode_array(e, a.ptr());
    }
    if (out.is_none()) {
        e.tag('n');
    } else {
        if (!exact_array(out)) return py::none();
        encode_array(e, out.ptr());
    }
    for (const auto &v : py::reinterpret_borrow<py::tuple>(values))
        if (!encode_value(e, v.ptr())) return py::none();
    return e.done();
}

void bind_call_signature(py::module_ &m) {
    m.def("call_signature", [](const py::str &kind, const py::tuple &arrays, const py::handle &out,
                                    const py::tuple &values) {
        return call_signature(kind, arrays, out, values);
    }, py::arg("kind"), py::arg("arrays"), py::arg("out"), py::arg("values"),
            "The cache key of a functional-API call as bytes, or None when an array is not\n"
            "exactly a numpy.ndarray or a keyword value is not None, an int, a str or a\n"
            "sequence of ints (the Python signature handles those).");
}

} // namespace onednn_graph

// The functional API's cache key of a call (see call_signature.cpp).
#pragma once
#include "common.hpp"

namespace onednn_graph {

// Bytes naming the call `kind`(*arrays, out=out, keywords `values`): each
// array's dtype, shape and strides and each value. None when an array is not
// exactly a numpy.ndarray or a value is not None, an int, a str or a sequence
// of ints; `arrays` and `values` are tuples.
py::object call_signature(py::handle kind, py::handle arrays, py::handle out, py::handle values);

} // namespace onednn_graph

// String <-> enum tables (dtype, layout, property, op kind, attribute, fpmath
// mode, engine kind). Unknown strings raise ValueError listing the known ones.
#pragma once
#include "common.hpp"

namespace onednn_graph {

using data_type = dg::logical_tensor::data_type;
using layout_type = dg::logical_tensor::layout_type;
using property_type = dg::logical_tensor::property_type;

data_type to_data_type(const std::string &name);
std::string from_data_type(data_type dt);
size_t data_type_size(data_type dt);

layout_type to_layout_type(const std::string &name);
std::string from_layout_type(layout_type lt);

property_type to_property_type(const std::string &name);
std::string from_property_type(property_type pt);

dnnl::engine::kind to_engine_kind(const std::string &name);
std::string from_engine_kind(dnnl::engine::kind kind);

dnnl::fpmath_mode to_fpmath_mode(const std::string &name);

dg::op::kind to_op_kind(const std::string &name);
std::vector<std::string> op_kind_names();

// The value type oneDNN stores for an attribute, from its enum range.
enum class attr_type { f32, f32_list, s64, s64_list, boolean, string };
struct attr_info {
    dg::op::attr attr;
    attr_type type;
};
attr_info to_attr(const std::string &name);
std::vector<std::string> attr_names();
const char *attr_type_name(attr_type t);

} // namespace onednn_graph

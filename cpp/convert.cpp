// String <-> enum tables. Names are spelled exactly as in oneDNN's operation
// documentation and in the JSON files oneDNN writes.
#include "convert.hpp"

#include <algorithm>
#include <utility>

namespace onednn_graph {

namespace {

template <typename E>
using table = std::vector<std::pair<const char *, E>>;

template <typename E>
E lookup(const table<E> &t, const std::string &name, const char *what) {
    for (const auto &entry : t)
        if (name == entry.first) return entry.second;
    std::string known;
    for (const auto &entry : t)
        known += std::string(known.empty() ? "" : ", ") + entry.first;
    throw py::value_error("unknown " + std::string(what) + " '" + name
            + "'; expected one of: " + known);
}

template <typename E>
std::string reverse(const table<E> &t, E value) {
    for (const auto &entry : t)
        if (entry.second == value) return entry.first;
    return "undef";
}

const table<data_type> &data_types() {
    static const table<data_type> t = {{"f32", data_type::f32},
            {"bf16", data_type::bf16}, {"f16", data_type::f16},
            {"s32", data_type::s32}, {"s8", data_type::s8},
            {"u8", data_type::u8}, {"boolean", data_type::boolean},
            {"undef", data_type::undef}};
    return t;
}

const table<layout_type> &layout_types() {
    // "opaque" and "undef" are what oneDNN hands back, never asked for.
    static const table<layout_type> t = {{"strided", layout_type::strided},
            {"any", layout_type::any}, {"opaque", layout_type::opaque},
            {"undef", layout_type::undef}};
    return t;
}

const table<property_type> &property_types() {
    static const table<property_type> t = {
            {"variable", property_type::variable},
            {"constant", property_type::constant},
            {"undef", property_type::undef}};
    return t;
}

const table<dg::op::kind> &op_kinds() {
    using k = dg::op::kind;
    static const table<k> t = {{"Abs", k::Abs}, {"AbsBackward", k::AbsBackward},
            {"Add", k::Add}, {"AvgPool", k::AvgPool},
            {"AvgPoolBackward", k::AvgPoolBackward},
            {"BatchNormForwardTraining", k::BatchNormForwardTraining},
            {"BatchNormInference", k::BatchNormInference},
            {"BatchNormTrainingBackward", k::BatchNormTrainingBackward},
            {"BiasAdd", k::BiasAdd}, {"BiasAddBackward", k::BiasAddBackward},
            {"Clamp", k::Clamp}, {"ClampBackward", k::ClampBackward},
            {"Concat", k::Concat}, {"Convolution", k::Convolution},
            {"ConvolutionBackwardData", k::ConvolutionBackwardData},
            {"ConvolutionBackwardWeights", k::ConvolutionBackwardWeights},
            {"ConvTranspose", k::ConvTranspose},
            {"ConvTransposeBackwardData", k::ConvTransposeBackwardData},
            {"ConvTransposeBackwardWeights", k::ConvTransposeBackwardWeights},
            {"Dequantize", k::Dequantize}, {"Divide", k::Divide},
            {"DynamicDequantize", k::DynamicDequantize},
            {"DynamicQuantize", k::DynamicQuantize}, {"Elu", k::Elu},
            {"EluBackward", k::EluBackward}, {"End", k::End}, {"Exp", k::Exp},
            {"GELU", k::GELU}, {"GELUBackward", k::GELUBackward},
            {"HardSigmoid", k::HardSigmoid},
            {"HardSigmoidBackward", k::HardSigmoidBackward},
            {"HardSwish", k::HardSwish},
            {"HardSwishBackward", k::HardSwishBackward},
            {"Interpolate", k::Interpolate},
            {"InterpolateBackward", k::InterpolateBackward},
            {"LayerNorm", k::LayerNorm},
            {"LayerNormBackward", k::LayerNormBackward},
            {"LeakyReLU", k::LeakyReLU}, {"Log", k::Log},
            {"LogSoftmax", k::LogSoftmax},
            {"LogSoftmaxBackward", k::LogSoftmaxBackward},
            {"MatMul", k::MatMul}, {"Maximum", k::Maximum},
            {"MaxPool", k::MaxPool}, {"MaxPoolBackward", k::MaxPoolBackward},
            {"Minimum", k::Minimum}, {"Mish", k::Mish},
            {"MishBackward", k::MishBackward}, {"Multiply", k::Multiply},
            {"Pow", k::Pow}, {"PReLU", k::PReLU},
            {"PReLUBackward", k::PReLUBackward}, {"Quantize", k::Quantize},
            {"Reciprocal", k::Reciprocal}, {"ReduceL1", k::ReduceL1},
            {"ReduceL2", k::ReduceL2}, {"ReduceMax", k::ReduceMax},
            {"ReduceMean", k::ReduceMean}, {"ReduceMin", k::ReduceMin},
            {"ReduceProd", k::ReduceProd}, {"ReduceSum", k::ReduceSum},
            {"ReLU", k::ReLU}, {"ReLUBackward", k::ReLUBackward},
            {"Reorder", k::Reorder}, {"Round", k::Round},
            {"Select", k::Select}, {"Sigmoid", k::Sigmoid},
            {"SigmoidBackward", k::SigmoidBackward}, {"SoftMax", k::SoftMax},
            {"SoftMaxBackward", k::SoftMaxBackward},
            {"SoftPlus", k::SoftPlus}, {"SoftPlusBackward", k::SoftPlusBackward},
            {"Sqrt", k::Sqrt}, {"SqrtBackward", k::SqrtBackward},
            {"Square", k::Square}, {"SquaredDifference", k::SquaredDifference},
            {"StaticReshape", k::StaticReshape},
            {"StaticTranspose", k::StaticTranspose},
            {"Subtract", k::Subtract}, {"Tanh", k::Tanh},
            {"TanhBackward", k::TanhBackward}, {"TypeCast", k::TypeCast},
            {"Wildcard", k::Wildcard}};
    return t;
}

const table<attr_info> &attrs() {
    using a = dg::op::attr;
    using t_ = attr_type;
    static const table<attr_info> t = {{"alpha", {a::alpha, t_::f32}},
            {"beta", {a::beta, t_::f32}}, {"epsilon", {a::epsilon, t_::f32}},
            {"max", {a::max, t_::f32}}, {"min", {a::min, t_::f32}},
            {"momentum", {a::momentum, t_::f32}},
            {"scales", {a::scales, t_::f32_list}},
            {"axis", {a::axis, t_::s64}},
            {"begin_norm_axis", {a::begin_norm_axis, t_::s64}},
            {"groups", {a::groups, t_::s64}},
            {"axes", {a::axes, t_::s64_list}},
            {"dilations", {a::dilations, t_::s64_list}},
            {"dst_shape", {a::dst_shape, t_::s64_list}},
            {"kernel", {a::kernel, t_::s64_list}},
            {"order", {a::order, t_::s64_list}},
            {"output_padding", {a::output_padding, t_::s64_list}},
            {"pads_begin", {a::pads_begin, t_::s64_list}},
            {"pads_end", {a::pads_end, t_::s64_list}},
            {"shape", {a::shape, t_::s64_list}},
            {"sizes", {a::sizes, t_::s64_list}},
            {"src_shape", {a::src_shape, t_::s64_list}},
            {"strides", {a::strides, t_::s64_list}},
            {"weights_shape", {a::weights_shape, t_::s64_list}},
            {"zps", {a::zps, t_::s64_list}},
            {"exclude_pad", {a::exclude_pad, t_::boolean}},
            {"keep_dims", {a::keep_dims, t_::boolean}},
            {"keep_stats", {a::keep_stats, t_::boolean}},
            {"per_channel_broadcast", {a::per_channel_broadcast, t_::boolean}},
            {"special_zero", {a::special_zero, t_::boolean}},
            {"transpose_a", {a::transpose_a, t_::boolean}},
            {"transpose_b", {a::transpose_b, t_::boolean}},
            {"use_affine", {a::use_affine, t_::boolean}},
            {"use_dst", {a::use_dst, t_::boolean}},
            {"auto_broadcast", {a::auto_broadcast, t_::string}},
            {"auto_pad", {a::auto_pad, t_::string}},
            {"coordinate_transformation_mode",
                    {a::coordinate_transformation_mode, t_::string}},
            {"data_format", {a::data_format, t_::string}},
            {"mode", {a::mode, t_::string}}, {"qtype", {a::qtype, t_::string}},
            {"rounding_type", {a::rounding_type, t_::string}},
            {"weights_format", {a::weights_format, t_::string}}};
    return t;
}

template <typename E>
std::vector<std::string> names_of(const table<E> &t) {
    std::vector<std::string> out;
    for (const auto &entry : t)
        out.emplace_back(entry.first);
    return out;
}

} // namespace

data_type to_data_type(const std::string &name) {
    return lookup(data_types(), name, "dtype");
}
std::string from_data_type(data_type dt) { return reverse(data_types(), dt); }

size_t data_type_size(data_type dt) {
    switch (dt) {
        case data_type::f32:
        case data_type::s32: return 4;
        case data_type::bf16:
        case data_type::f16: return 2;
        case data_type::s8:
        case data_type::u8:
        case data_type::boolean: return 1;
        default: return 0;
    }
}

layout_type to_layout_type(const std::string &name) {
    auto lt = lookup(layout_types(), name, "layout");
    if (lt != layout_type::strided && lt != layout_type::any)
        throw py::value_error("layout '" + name
                + "' cannot be requested; expected 'strided' or 'any'");
    return lt;
}
std::string from_layout_type(layout_type lt) {
    return reverse(layout_types(), lt);
}

property_type to_property_type(const std::string &name) {
    return lookup(property_types(), name, "property");
}
std::string from_property_type(property_type pt) {
    return reverse(property_types(), pt);
}

dnnl::engine::kind to_engine_kind(const std::string &name) {
    static const table<dnnl::engine::kind> t = {
            {"cpu", dnnl::engine::kind::cpu}, {"gpu", dnnl::engine::kind::gpu}};
    return lookup(t, name, "engine kind");
}
std::string from_engine_kind(dnnl::engine::kind kind) {
    return kind == dnnl::engine::kind::cpu ? "cpu" : "gpu";
}

dnnl::fpmath_mode to_fpmath_mode(const std::string &name) {
    static const table<dnnl::fpmath_mode> t = {
            {"strict", dnnl::fpmath_mode::strict},
            {"bf16", dnnl::fpmath_mode::bf16}, {"f16", dnnl::fpmath_mode::f16},
            {"tf32", dnnl::fpmath_mode::tf32}, {"any", dnnl::fpmath_mode::any}};
    return lookup(t, name, "fpmath_mode");
}

dg::op::kind to_op_kind(const std::string &name) {
    return lookup(op_kinds(), name, "op kind");
}
std::vector<std::string> op_kind_names() { return names_of(op_kinds()); }

attr_info to_attr(const std::string &name) {
    return lookup(attrs(), name, "attribute");
}
std::vector<std::string> attr_names() { return names_of(attrs()); }

const char *attr_type_name(attr_type t) {
    switch (t) {
        case attr_type::f32: return "f32";
        case attr_type::f32_list: return "f32 list";
        case attr_type::s64: return "s64";
        case attr_type::s64_list: return "s64 list";
        case attr_type::boolean: return "bool";
        default: return "string";
    }
}

} // namespace onednn_graph

// The C++ floor of the benchmark suite: one op as a single-op partition, driven
// through oneDNN's Graph C++ API exactly as onednn_graph drives it (strided
// logical tensors describing dense buffers, one compile, then execute + wait).
// What the Python binding adds is measured against this program.
//
// Reads the problem from stdin, one item per line:
//   kind ConvTranspose
//   dtype f32
//   threads <n>                OpenMP threads (optional; the package's choice for the problem)
//   input <shape comma-separated> <strides comma-separated>     (in order)
//   output <shape> <strides>
//   ints <attr> <v,v,...>      int64 list attribute (strides, pads_begin, ..., weights_shape)
//   int <attr> <v>             int64 attribute (groups)
//   str <attr> <value>         string attribute (data_format, weights_format, auto_pad)
//   ready
// prints "compiled <ms> first <ms>": from building the graph to the compiled
// partition (the same "debug" single-op partitioning the package uses), and the
// first execution after it. Then it serves commands:
//   run <n>    executes n times; prints "times <us> <us> ..." (one per call)
//   first      empties oneDNN's primitive and compiled-partition caches, then
//              again builds, compiles and executes once; prints "compiled <ms> first <ms>"
//   memory     resets the peak RSS, executes once; prints "memory <rss kB before> <peak kB>
//              <bytes oneDNN allocated at most during the call, through the engine's allocator>"
//   quit
// Build: see benchmarks/README.md (the suite builds it on demand).
#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_graph.hpp>

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <fstream>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace dnnl::graph;
using dims = std::vector<int64_t>;
using clock_type = std::chrono::steady_clock;

static dims parse_dims(const std::string &text) {
    dims out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty()) out.push_back(std::stoll(item));
    return out;
}

static logical_tensor::data_type parse_dtype(const std::string &name) {
    if (name == "f32") return logical_tensor::data_type::f32;
    if (name == "bf16") return logical_tensor::data_type::bf16;
    if (name == "f16") return logical_tensor::data_type::f16;
    throw std::runtime_error("unknown dtype " + name);
}

static op::kind parse_kind(const std::string &name) {
    if (name == "ConvTranspose") return op::kind::ConvTranspose;
    if (name == "ConvTransposeBackwardData") return op::kind::ConvTransposeBackwardData;
    if (name == "ConvTransposeBackwardWeights") return op::kind::ConvTransposeBackwardWeights;
    if (name == "ConvolutionBackwardData") return op::kind::ConvolutionBackwardData;
    if (name == "ConvolutionBackwardWeights") return op::kind::ConvolutionBackwardWeights;
    if (name == "Convolution") return op::kind::Convolution;
    if (name == "MatMul") return op::kind::MatMul;
    throw std::runtime_error("unknown op kind " + name);
}

static op::attr parse_attr(const std::string &name) {
    static const std::pair<const char *, op::attr> table[] = {
            {"strides", op::attr::strides}, {"pads_begin", op::attr::pads_begin},
            {"pads_end", op::attr::pads_end}, {"dilations", op::attr::dilations},
            {"output_padding", op::attr::output_padding}, {"groups", op::attr::groups},
            {"auto_pad", op::attr::auto_pad}, {"data_format", op::attr::data_format},
            {"weights_format", op::attr::weights_format}, {"weights_shape", op::attr::weights_shape},
            {"dst_shape", op::attr::dst_shape}};
    for (const auto &e : table)
        if (name == e.first) return e.second;
    throw std::runtime_error("unknown attribute " + name);
}

// VmRSS or VmHWM of this process, in kB (Linux /proc).
static long status_kb(const std::string &key) {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
    return -1;
}

// oneDNN's own allocations (scratchpad, internal reorders) through the engine's
// allocator, as the package counts them: the peak during one execution. One
// thread executes at a time here, so plain counters do.
static size_t held_bytes = 0, peak_bytes = 0;
static std::map<void *, size_t> held;

static void *counted_malloc(size_t size, size_t alignment) {
    void *p = nullptr;
    if (posix_memalign(&p, std::max(alignment, sizeof(void *)), size ? size : 1) != 0) return nullptr;
    held[p] = size;
    held_bytes += size;
    peak_bytes = std::max(peak_bytes, held_bytes);
    return p;
}

static void counted_free(void *p) {
    auto it = held.find(p);
    if (it != held.end()) held_bytes -= it->second, held.erase(it);
    std::free(p);
}

int main() {
    std::string kind_name, dtype_name, line;
    std::vector<std::pair<dims, dims>> ins;
    std::pair<dims, dims> outp;
    struct Attr { std::string type, name, value; };
    std::vector<Attr> attrs;
    while (std::getline(std::cin, line)) {
        std::stringstream ss(line);
        std::string tag;
        ss >> tag;
        if (tag == "ready") break;
        if (tag == "kind") ss >> kind_name;
        else if (tag == "dtype") ss >> dtype_name;
        else if (tag == "threads") {
            // The package runs small problems on one thread (onednn_graph._cost):
            // the same OpenMP setting here, for compiling and executing.
            int n = 0;
            ss >> n;
            if (n > 0) omp_set_num_threads(n);
        }
        else if (tag == "input" || tag == "output") {
            std::string shape, strides;
            ss >> shape >> strides;
            auto io = std::make_pair(parse_dims(shape), parse_dims(strides));
            if (tag == "input") ins.push_back(io); else outp = io;
        } else {
            Attr a {tag, "", ""};
            ss >> a.name >> a.value;
            attrs.push_back(a);
        }
    }
    const auto dt = parse_dtype(dtype_name);
    std::vector<logical_tensor> in_lts;
    for (size_t i = 0; i < ins.size(); ++i)
        in_lts.emplace_back(i, dt, ins[i].first, ins[i].second);
    logical_tensor out_lt(ins.size(), dt, outp.first, outp.second);
    op o(0, parse_kind(kind_name), in_lts, {out_lt}, "bench");
    for (const auto &a : attrs) {
        if (a.type == "ints") o.set_attr<dims>(parse_attr(a.name), parse_dims(a.value));
        else if (a.type == "int") o.set_attr<int64_t>(parse_attr(a.name), std::stoll(a.value));
        else if (a.type == "str") o.set_attr<std::string>(parse_attr(a.name), a.value);
    }
    allocator counting(counted_malloc, counted_free);
    dnnl::engine eng = make_engine_with_allocator(dnnl::engine::kind::cpu, 0, counting);
    dnnl::stream strm(eng);
    // Buffers of the logical tensors' sizes, filled with small values.
    std::vector<std::vector<char>> buffers;
    for (auto &lt : in_lts) {
        buffers.emplace_back(lt.get_mem_size(), 0);
        for (size_t k = 0; k + 1 < buffers.back().size(); k += 2) buffers.back()[k + 1] = 0x3c;
    }
    buffers.emplace_back(out_lt.get_mem_size(), 0);

    // Graph to compiled partition (the same "debug" single-op partitioning the
    // package uses), then one execution: what a first call costs. Returns the
    // compiled partition, or nothing when oneDNN does not support the problem.
    auto first_call = [&](double &compile_ms, double &first_ms) -> std::vector<compiled_partition> {
        const auto c0 = clock_type::now();
        graph g(dnnl::engine::kind::cpu);
        g.add_op(o);
        g.finalize();
        auto parts = g.get_partitions(partition::policy::debug);
        if (parts.size() != 1 || !parts[0].is_supported()) return {};
        compiled_partition cp = parts[0].compile(in_lts, {out_lt}, eng);
        const auto c1 = clock_type::now();
        std::vector<tensor> ins, outs;
        for (size_t i = 0; i < in_lts.size(); ++i) ins.emplace_back(in_lts[i], eng, buffers[i].data());
        outs.emplace_back(out_lt, eng, buffers.back().data());
        cp.execute(strm, ins, outs);
        strm.wait();
        const auto c2 = clock_type::now();
        compile_ms = std::chrono::duration<double, std::milli>(c1 - c0).count();
        first_ms = std::chrono::duration<double, std::milli>(c2 - c1).count();
        return {cp};
    };
    double compile_ms = 0, first_ms = 0;
    auto compiled = first_call(compile_ms, first_ms);
    if (compiled.empty()) {
        std::printf("error unsupported\n");
        return 1;
    }
    compiled_partition cp = compiled[0];
    std::vector<tensor> in_ts, out_ts;
    for (size_t i = 0; i < in_lts.size(); ++i)
        in_ts.emplace_back(in_lts[i], eng, buffers[i].data());
    out_ts.emplace_back(out_lt, eng, buffers.back().data());
    std::printf("compiled %.4f first %.4f\n", compile_ms, first_ms);
    std::fflush(stdout);

    while (std::getline(std::cin, line)) {
        std::stringstream ss(line);
        std::string cmd;
        ss >> cmd;
        if (cmd == "quit") break;
        if (cmd == "first") {
            // Again from cold library caches: the process's first call also paid
            // one-time costs (thread pool, CPU dispatch) besides the problem's own.
            const int primitives = dnnl::get_primitive_cache_capacity();
            const int partitions = get_compiled_partition_cache_capacity();
            dnnl::set_primitive_cache_capacity(0);
            set_compiled_partition_cache_capacity(0);
            dnnl::set_primitive_cache_capacity(primitives);
            set_compiled_partition_cache_capacity(partitions);
            first_call(compile_ms, first_ms);
            std::printf("compiled %.4f first %.4f\n", compile_ms, first_ms);
            std::fflush(stdout);
            continue;
        }
        if (cmd == "memory") {
            std::ofstream("/proc/self/clear_refs") << "5";  // resets VmHWM to the current RSS
            const long before = status_kb("VmRSS");
            peak_bytes = held_bytes;
            const size_t base = held_bytes;
            cp.execute(strm, in_ts, out_ts);
            strm.wait();
            std::printf("memory %ld %ld %zu\n", before, status_kb("VmHWM"), peak_bytes - base);
            std::fflush(stdout);
            continue;
        }
        if (cmd != "run") continue;
        int n = 0;
        ss >> n;
        std::string reply = "times";
        for (int i = 0; i < n; ++i) {
            const auto t0 = clock_type::now();
            cp.execute(strm, in_ts, out_ts);
            strm.wait();
            const auto t1 = clock_type::now();
            reply += " " + std::to_string(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
        std::printf("%s\n", reply.c_str());
        std::fflush(stdout);
    }
    return 0;
}

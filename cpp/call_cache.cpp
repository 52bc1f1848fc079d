// CallCache: the functional API's bounded LRU of prepared calls, and its hot
// path. A cached call with a direct way to run (a NativeCall) costs one native
// call here: its key (call_signature), the lookup and the execution. Every
// other call goes through Python (_call.run), which uses lookup() and store().
//
// Thread safety: every method runs with the GIL held and does not release it
// while it changes the cache, so Python threads see each change whole. Entries
// it drops are destroyed only after the cache is consistent again: their
// destructors may run Python code, which may call back into the cache.
#include "call_signature.hpp"
#include "direct_call.hpp"

#include <list>
#include <unordered_map>

namespace onednn_graph {

namespace {

// Python's hash and == for the keys (bytes from call_signature, or the tuples
// of _call._python_signature), so that equal keys find the same entry.
struct PyHash {
    size_t operator()(py::handle key) const {
        const Py_hash_t h = PyObject_Hash(key.ptr());
        if (h == -1 && PyErr_Occurred()) throw py::error_already_set();
        return static_cast<size_t>(h);
    }
};
struct PyEqual {
    bool operator()(py::handle a, py::handle b) const {
        const int equal = PyObject_RichCompareBool(a.ptr(), b.ptr(), Py_EQ);
        if (equal < 0) throw py::error_already_set();
        return equal == 1;
    }
};

class CallCache {
public:
    explicit CallCache(size_t capacity) : capacity_(capacity) {}

    // The value stored under `key`, or None; counts a hit or a miss.
    py::object lookup(const py::object &key) {
        const auto found = index_.find(key);
        if (found == index_.end()) {
            ++misses_;
            return py::none();
        }
        lru_.splice(lru_.end(), lru_, found->second);
        ++hits_;
        return found->second->value;
    }

    // Stores `value` (with its NativeCall, or None) under `key`, the most
    // recently used; drops the least recently used beyond the capacity.
    void store(const py::object &key, const py::object &value, double compile_seconds, const py::object &direct) {
        // A wrong type fails here, not on a call.
        const NativeCall *runner = direct.is_none() ? nullptr : &direct.cast<const NativeCall &>();
        std::vector<Entry> dropped;
        compile_seconds_ += compile_seconds;
        const auto found = index_.find(key);
        if (found != index_.end()) {
            Entry &entry = *found->second; // its key stays: the index borrows it
            dropped.push_back(Entry {py::object(), std::move(entry.value), std::move(entry.direct), nullptr});
            entry.value = value;
            entry.direct = direct;
            entry.runner = runner;
            lru_.splice(lru_.end(), lru_, found->second);
        } else {
            lru_.push_back(Entry {key, value, direct, runner});
            index_.emplace(lru_.back().key, std::prev(lru_.end()));
        }
        evict(dropped);
    }

    // The hot path: runs the cached call `kind`(*arrays, out=out, keywords
    // `values`) and returns its result; None when the call is not cached, has
    // no direct way to run, or its NativeCall refused the arrays (nothing ran).
    // Counts a hit only for a call it ran; Python's lookup counts the others.
    py::object call(dnnl::stream &stream, py::handle kind, py::handle arrays, py::handle out, py::handle values) {
        const py::object key = call_signature(kind, arrays, out, values);
        if (key.is_none()) return py::none();
        const auto found = index_.find(key);
        if (found == index_.end() || !found->second->runner) return py::none();
        // Held here: another thread may drop the entry while oneDNN runs without the GIL.
        const py::object direct = found->second->direct;
        const NativeCall *runner = found->second->runner;
        lru_.splice(lru_.end(), lru_, found->second);
        py::object result = runner->run(stream, arrays, out);
        if (!result.is_none()) ++hits_;
        return result;
    }

    size_t capacity() const { return capacity_; }
    void set_capacity(const py::object &value) {
        const bool is_int = PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr());
        if (!is_int || PyObject_RichCompareBool(value.ptr(), py::int_(0).ptr(), Py_LT) == 1)
            throw py::value_error("cache capacity must be an int >= 0, got " + std::string(py::repr(value)));
        const size_t capacity = PyLong_AsSize_t(value.ptr());
        if (capacity == static_cast<size_t>(-1) && PyErr_Occurred()) throw py::error_already_set();
        capacity_ = capacity;
        std::vector<Entry> dropped;
        evict(dropped);
    }

    // The stored values, least recently used first.
    py::list values() const {
        py::list out;
        for (const auto &e : lru_) out.append(e.value);
        return out;
    }

    void clear() {
        std::list<Entry> dropped;
        index_.clear();
        dropped.swap(lru_);
        hits_ = misses_ = 0;
        compile_seconds_ = 0;
    }

    size_t size() const { return lru_.size(); }
    unsigned long long hits() const { return hits_; }
    unsigned long long misses() const { return misses_; }
    double compile_seconds() const { return compile_seconds_; }

private:
    struct Entry {
        py::object key, value, direct;
        const NativeCall *runner; // inside `direct` (null with it None): cast once, in store()
    };

    void evict(std::vector<Entry> &dropped) {
        while (lru_.size() > capacity_) {
            index_.erase(lru_.front().key);
            dropped.push_back(std::move(lru_.front()));
            lru_.pop_front();
        }
    }

    size_t capacity_;
    std::list<Entry> lru_; // least recently used first
    // Keys borrowed from their entries in lru_.
    std::unordered_map<py::handle, std::list<Entry>::iterator, PyHash, PyEqual> index_;
    unsigned long long hits_ = 0, misses_ = 0;
    double compile_seconds_ = 0;
};

} // namespace

void bind_call_cache(py::module_ &m) {
    py::class_<CallCache>(m, "CallCache", "A bounded LRU of prepared calls with statistics, and their hot path.")
            .def(py::init<size_t>(), py::arg("capacity"))
            .def("lookup", &CallCache::lookup, py::arg("key"),
                    "The value stored under `key`, or None; counts a hit or a miss.")
            .def("store", &CallCache::store, py::arg("key"), py::arg("value"), py::arg("compile_seconds"),
                    py::arg("direct"), "Store `value` and its NativeCall (or None) under `key`.")
            .def("call", &CallCache::call, py::arg("stream"), py::arg("kind"), py::arg("arrays"),
                    py::arg("out"), py::arg("values"),
                    "Run a cached call through its NativeCall and return the result; None when it\n"
                    "is not cached, has no NativeCall, or was refused (nothing ran).")
            .def_property("capacity", &CallCache::capacity, &CallCache::set_capacity,
                    "Most calls kept (least recently used go first; 0 keeps none).")
            .def("values", &CallCache::values, "The stored values, least recently used first.")
            .def("clear", &CallCache::clear, "Drop every entry and zero the statistics.")
            .def("__len__", &CallCache::size)
            .def_property_readonly("hits", &CallCache::hits)
            .def_property_readonly("misses", &CallCache::misses)
            .def_property_readonly("compile_seconds", &CallCache::compile_seconds,
                    "Seconds spent compiling the calls stored (their sum).");
}

} // namespace onednn_graph

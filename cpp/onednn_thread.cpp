// See onednn_thread.hpp.
#include "onednn_thread.hpp"

#include "allocator.hpp"
#include "errors.hpp"
#include "threads.hpp"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <thread>

namespace onednn_graph {

namespace {

class Worker {
public:
    Worker() { std::thread([this] { loop(); }).detach(); }

    void run(const std::function<void()> &task) {
        std::exception_ptr failure;
        bool done = false;
        std::unique_lock<std::mutex> lock(mutex_);
        queue_.push_back([&] {
            try {
                task();
            } catch (...) {
                failure = std::current_exception();
            }
            std::lock_guard<std::mutex> finished(mutex_);
            done = true;
            finished_.notify_all();
        });
        pending_.notify_one();
        finished_.wait(lock, [&] { return done; });
        if (failure) std::rethrow_exception(failure);
    }

private:
    void loop() {
        for (;;) {
            std::function<void()> job;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                pending_.wait(lock, [this] { return !queue_.empty(); });
                job = std::move(queue_.front());
                queue_.pop_front();
            }
            job();
        }
    }

    std::mutex mutex_;
    std::condition_variable pending_, finished_;
    std::deque<std::function<void()>> queue_;
};

// The process's worker, made on first need. A child of fork() starts without it (its
// thread is not copied) and without the lock's state (another thread may have held it).
std::mutex worker_lock;
Worker *worker = nullptr;
// Set in a child of fork(): whether oneDNN had run in the parent before (an OpenMP team,
// or oneDNN 3.13's SYCL scheduler, waits on threads the child does not have).
std::atomic<bool> forked {false}, used {false}, used_before_fork {false};

void in_child_after_fork() {
    reset_allocator_locks_in_child();
    used_before_fork = used.load() || used_before_fork.load();
    forked = true;
    new (&worker_lock) std::mutex(); // the parent's lock state means nothing here
    worker = nullptr; // leaked: the object may hold locks of threads the child lacks
}

bool below_avx2() {
    const auto avx2 = static_cast<unsigned>(dnnl::cpu_isa::avx2);
    static const bool below = (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & avx2) != avx2;
    return below;
}

bool on_openmp() {
    return dnnl_version()->cpu_runtime == DNNL_RUNTIME_OMP;
}

} // namespace

bool onednn_thread_needed() {
    return below_avx2() || forked.load(std::memory_order_relaxed);
}

void on_onednn_thread(const std::function<void()> &task) {
    used.store(true, std::memory_order_relaxed);
    if (!onednn_thread_needed()) {
        task();
        return;
    }
    if (forked.load(std::memory_order_relaxed) && used_before_fork && !on_openmp())
        throw status_error(dnnl_runtime_error, "oneDNN " + std::to_string(dnnl_version()->major) + "."
                + std::to_string(dnnl_version()->minor) + " (its SYCL/TBB CPU runtime) cannot run in a "
                "process forked after it ran: the runtime's threads do not survive fork(). Start "
                "the process with the 'spawn' or 'forkserver' method (multiprocessing, DataLoader's "
                "multiprocessing_context), or build against the default oneDNN (OpenMP)");
    // The caller's OpenMP thread count (torch.set_num_threads, omp_set_num_threads) is
    // its own thread's setting: the worker takes it on for the task.
    const int threads = max_threads();
    Worker *w;
    {
        std::lock_guard<std::mutex> lock(worker_lock);
        if (!worker) worker = new Worker(); // never destroyed: it waits for work until exit
        w = worker;
    }
    w->run([&] {
        set_max_threads(threads);
        task();
    });
}

void bind_onednn_thread(py::module_ &m) {
    static const int registered = pthread_atfork(nullptr, nullptr, in_child_after_fork);
    if (registered != 0) throw std::runtime_error("could not register the extension's fork handler");
    m.def("in_forked_child", [] { return forked.load(); },
            "Whether this process was forked after the extension loaded (its oneDNN calls then run "
            "on a thread of the extension's own: onednn_thread.hpp).");
    m.def("ran_before_fork", [] { return used_before_fork.load(); },
            "Whether this process was forked after oneDNN ran in it (its OpenMP threads then hang "
            "the forking thread's next parallel region: onednn_thread.hpp).");
}

} // namespace onednn_graph

// See onednn_thread.hpp.
#include "onednn_thread.hpp"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
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

} // namespace

bool onednn_thread_needed() {
    const auto avx2 = static_cast<unsigned>(dnnl::cpu_isa::avx2);
    static const bool needed = (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & avx2) != avx2;
    return needed;
}

void on_onednn_thread(const std::function<void()> &task) {
    if (!onednn_thread_needed()) {
        task();
        return;
    }
    // Never destroyed: its thread waits for work until the process ends.
    static Worker *worker = new Worker();
    worker->run(task);
}

} // namespace onednn_graph

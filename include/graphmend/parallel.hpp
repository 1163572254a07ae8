// A fixed-size pool of std::jthreads for per-file work: parallel_for(n, threads, fn) calls
// fn(i) once for every i in [0, n), each on one of `threads` threads (the calling thread
// is one of them). Items are handed out in index order from an atomic counter; callers
// store results by index, so what they report does not depend on the thread count.
//
// An exception thrown by fn(i) does not stop the other items: after all threads have
// joined, the exception of the lowest index is rethrown. With threads == 1 the behaviour
// is the same, on the calling thread alone.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace graphmend {

/// The thread count for a request: 0 means one per hardware thread (at least 1).
inline unsigned resolve_threads(unsigned requested) {
    if (requested != 0) return requested;
    return std::max(1u, std::thread::hardware_concurrency());
}

template <typename Fn>
void parallel_for(std::size_t n, unsigned threads, Fn&& fn) {
    std::vector<std::exception_ptr> errors(n);
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
        for (std::size_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
             i = next.fetch_add(1, std::memory_order_relaxed)) {
            try {
                fn(i);
            } catch (...) {
                errors[i] = std::current_exception();
            }
        }
    };
    {
        const std::size_t helpers = std::min<std::size_t>(resolve_threads(threads), n) - (n > 0 ? 1 : 0);
        std::vector<std::jthread> pool;
        pool.reserve(helpers);
        for (std::size_t t = 0; t < helpers; ++t) {
            try {
                pool.emplace_back(worker);
            } catch (const std::system_error&) {
                break;  // no more threads to be had: the ones running share the work
            }
        }
        worker();
    }  // the jthreads join here
    for (const auto& e : errors) {
        if (e) std::rethrow_exception(e);
    }
}

}  // namespace graphmend

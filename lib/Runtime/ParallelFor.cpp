//===- ParallelFor.cpp - run a body over indices on a few threads ---------===//

#include "ParallelFor.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace mlagen {

void parallelFor(size_t count, int jobs,
                 const std::function<void(size_t)> &body) {
  if (jobs <= 0)
    jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const size_t threads = std::min(count, static_cast<size_t>(jobs));
  std::atomic<size_t> next{0};
  std::mutex failureMutex;
  std::exception_ptr failure;
  // A body that throws stops the loop; the first exception is rethrown here
  // once every thread is joined (thrown on a thread, it would terminate).
  auto worker = [&] {
    try {
      for (size_t i; (i = next++) < count;)
        body(i);
    } catch (...) {
      next = count;
      std::lock_guard<std::mutex> lock(failureMutex);
      if (!failure)
        failure = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error &) {
      break; // no more threads to be had: fewer workers take every index
    }
  }
  worker();
  for (std::thread &thread : pool)
    thread.join();
  if (failure)
    std::rethrow_exception(failure);
}

} // namespace mlagen

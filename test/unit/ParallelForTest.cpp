//===- ParallelForTest.cpp - parallelFor runs each index once ------------===//

#include "ParallelFor.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace mlagen;

TEST_CASE("parallelFor calls the body once for each index", "[parallel]") {
  for (size_t count : {0, 1, 3, 17})
    for (int jobs : {-1, 0, 1, 2, 8, 64}) {
      std::vector<std::atomic<int>> calls(count);
      parallelFor(count, jobs, [&](size_t i) { ++calls.at(i); });
      for (size_t i = 0; i < count; ++i)
        CHECK(calls[i] == 1);
    }
}

TEST_CASE("parallelFor uses at most `jobs` threads, the caller's among them",
          "[parallel]") {
  for (int jobs : {1, 3}) {
    std::mutex mutex;
    std::set<std::thread::id> threads;
    parallelFor(12, jobs, [&](size_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      std::lock_guard<std::mutex> lock(mutex);
      threads.insert(std::this_thread::get_id());
    });
    CHECK(threads.size() <= static_cast<size_t>(jobs));
    if (jobs == 1)
      CHECK(threads == std::set<std::thread::id>{std::this_thread::get_id()});
  }
}

TEST_CASE("parallelFor rethrows the first exception once every thread is "
          "joined, and starts no index after it",
          "[parallel]") {
  for (int jobs : {1, 4}) {
    std::atomic<int> started{0};
    CHECK_THROWS_WITH(parallelFor(1000, jobs,
                                  [&](size_t i) {
                                    ++started;
                                    if (i == 2)
                                      throw std::runtime_error("index 2");
                                  }),
                      "index 2");
    // Indices already taken by other threads may finish; no thread takes a
    // new one after the throw, so far fewer than 1000 ran.
    CHECK(started < 1000);
    if (jobs == 1)
      CHECK(started == 3);
  }
}

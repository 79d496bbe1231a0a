//===- CudaPairGraphs.h - two launches as one graph launch ------*- C++ -*-===//
//
// A split-KV step is two kernels (decode, then its reduce). Two stream
// launches cost the driver about twice one launch's host time (7.3-7.7 us
// on an H100 through cuLaunchKernelEx), while a graph of the same two
// kernel nodes, both nodes' grids and parameter blocks updated each step,
// costs about one (3.7-3.8 us; bench/probes/graph_launch_floor.cu). So
// each (stream, kernel pair, block shape) gets a graph instantiated once
// and updated per step. The reduce hangs on a programmatic edge where its
// launch asks for early start, as it would in the stream. The decode, a
// graph's first node, takes no early start: it waits for all earlier work
// in the stream, which cost about 2 us a step behind a GEMM when the device
// was the bottleneck. So the graph goes only into an idle stream, where
// the host is the bottleneck and early start has nothing to overlap; into a
// busy one the caller launches both, as before.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_CUDAPAIRGRAPHS_H
#define MLAGEN_LIB_RUNTIME_CUDAPAIRGRAPHS_H

#include "DeviceBackend.h"
#include "DriverAPI.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mlagen {

class CudaPairGraphs {
public:
  // `earlyStart`: programmatic edges are allowed (the backend's own rule).
  CudaPairGraphs(const cu::API &api, bool earlyStart);
  ~CudaPairGraphs();
  CudaPairGraphs(const CudaPairGraphs &) = delete;
  CudaPairGraphs &operator=(const CudaPairGraphs &) = delete;

  // Whether the driver has every graph call used here (CUDA >= 12.3) and
  // MLAGEN_LAUNCH_GRAPHS is not 0.
  static bool usable(const cu::API &api);

  // Enqueues `first` then `second` on `stream` (not being captured; the
  // caller's context current) as one graph launch. Returns false, with
  // nothing enqueued, where `stream` still has work queued or this pair
  // cannot go as a graph (a build or an update the driver refused): the
  // caller then launches them itself.
  // `rc` is the driver's error where the graph launch itself failed.
  bool launch(const DeviceFunction &first, const LaunchGeometry &firstShape,
              const DeviceFunction &second, const LaunchGeometry &secondShape,
              void *stream, void **params, cu::Result &rc);

  // Drops the graphs holding `module`'s kernels before it is unloaded.
  void forget(void *module);

  // Kept at most, least recently launched dropped first.
  static constexpr size_t kMaxGraphs = 64;

private:
  struct Key {
    void *stream, *first, *second;
    unsigned firstThreads, secondThreads, firstCluster, secondCluster;
    bool programmatic;
    bool operator==(const Key &) const = default;
  };
  // One graph. Its own lock keeps another thread's update from landing
  // between this step's update and launch; other graphs go on meanwhile.
  struct Entry {
    Entry(const cu::API &api, const Key &key, void *firstModule,
          void *secondModule);
    ~Entry() { release(); }
    // Destroys the graph; an exec with launches in flight is freed when
    // they finish.
    void release();
    // Warns with `why`, releases the graph and refuses it from now on.
    void refuse(const std::string &why);
    const cu::API &api;
    const Key key;
    void *modules[2];
    std::mutex mutex;
    cu::Graph graph = nullptr;
    cu::GraphExec exec = nullptr;
    cu::GraphNode nodes[2] = {};
    bool refused = false; // the driver would not build or update it
  };

  // Builds `entry`'s graph; the empty string, or the refused call and why.
  std::string build(Entry &entry, const LaunchGeometry &firstShape,
                    const LaunchGeometry &secondShape, void **params);
  std::shared_ptr<Entry> find(const Key &key, const DeviceFunction &first,
                              const DeviceFunction &second,
                              const LaunchGeometry &firstShape,
                              const LaunchGeometry &secondShape, void **params);
  std::string describe(const char *call, cu::Result rc) const;

  const cu::API &api_;
  const bool earlyStart_;
  std::mutex mutex_; // guards entries_
  std::vector<std::shared_ptr<Entry>> entries_; // least recently used first
};

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_CUDAPAIRGRAPHS_H

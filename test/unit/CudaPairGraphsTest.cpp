//===- CudaPairGraphsTest.cpp - decode + reduce as one graph launch -------===//
//
// CudaPairGraphs against a fake driver (cu::API's graph calls as counters):
// only into an idle stream; one graph per stream and kernel pair, built once and updated each step
// with that step's grids and parameter blocks; the reduce on a programmatic
// edge only with early start; clusters as node attributes; a driver that
// refuses a build or an update leaves the launch to the caller with nothing
// enqueued, and is not asked again; unloading either kernel's module drops
// its graphs; at most kMaxGraphs kept, the least recently launched dropped.
//
//===----------------------------------------------------------------------===//

#include "CudaPairGraphs.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <vector>

using namespace mlagen;

namespace {

// What the fake driver saw. One at a time: the fake's calls are plain
// functions, so they reach it through this global.
struct FakeDriver {
  int creates = 0, destroys = 0, execDestroys = 0, launches = 0, updates = 0;
  std::vector<cu::GraphNode> clusterNodes, addedNodes;
  std::vector<cu::GraphEdgeData> edges;
  std::vector<cu::KernelNodeParams> lastUpdate;
  std::vector<void *> launchedStreams;
  bool refuseInstantiate = false, refuseUpdate = false;
  void *busyStream = nullptr; // cuStreamQuery: work still queued
  int launchResult = 0;
  int nextHandle = 1;
};
FakeDriver *fake = nullptr;

void *handle() { return reinterpret_cast<void *>(intptr_t(fake->nextHandle++)); }

cu::API fakeAPI() {
  cu::API api = {};
  api.streamQuery = [](cu::Stream stream) {
    return stream == fake->busyStream ? 600 /* NOT_READY */ : 0;
  };
  api.graphCreate = [](cu::Graph *graph, unsigned) {
    ++fake->creates;
    *graph = handle();
    return 0;
  };
  api.graphDestroy = [](cu::Graph) {
    ++fake->destroys;
    return 0;
  };
  api.graphAddKernelNode = [](cu::GraphNode *node, cu::Graph, const cu::GraphNode *,
                              size_t, const cu::KernelNodeParams *) {
    *node = handle();
    fake->addedNodes.push_back(*node);
    return 0;
  };
  api.graphKernelNodeSetAttribute = [](cu::GraphNode node, int attribute,
                                       const cu::LaunchAttributeValue *value) {
    if (attribute == cu::kLaunchAttributeClusterDimension &&
        value->clusterDim.x == 2)
      fake->clusterNodes.push_back(node);
    return 0;
  };
  api.graphAddDependencies = [](cu::Graph, const cu::GraphNode *,
                                const cu::GraphNode *,
                                const cu::GraphEdgeData *edges, size_t count) {
    fake->edges.insert(fake->edges.end(), edges, edges + count);
    return 0;
  };
  api.graphInstantiate = [](cu::GraphExec *exec, cu::Graph, unsigned long long) {
    if (fake->refuseInstantiate)
      return 1;
    *exec = handle();
    return 0;
  };
  api.graphExecDestroy = [](cu::GraphExec) {
    ++fake->execDestroys;
    return 0;
  };
  api.graphExecKernelNodeSetParams = [](cu::GraphExec, cu::GraphNode,
                                        const cu::KernelNodeParams *params) {
    if (fake->refuseUpdate)
      return 1;
    ++fake->updates;
    fake->lastUpdate.push_back(*params);
    return 0;
  };
  api.graphLaunch = [](cu::GraphExec, cu::Stream stream) {
    ++fake->launches;
    fake->launchedStreams.push_back(stream);
    return fake->launchResult;
  };
  return api;
}

struct Scope {
  FakeDriver driver;
  cu::API api = fakeAPI();
  Scope() { fake = &driver; }
  ~Scope() { fake = nullptr; }
};

DeviceFunction function(intptr_t module, intptr_t entry) {
  return {reinterpret_cast<void *>(module), reinterpret_cast<void *>(entry), {}};
}

LaunchGeometry shape(unsigned grid, unsigned threads, bool early,
                     unsigned cluster = 1) {
  LaunchGeometry g;
  g.grid[0] = grid;
  g.threadsPerBlock = threads;
  g.sharedBytes = 1000 + grid;
  g.earlyStart = early;
  g.clusterX = cluster;
  return g;
}

void *stream(intptr_t s) { return reinterpret_cast<void *>(s); }

// One decode + reduce step of `grid` blocks of 128 threads each on stream
// `s` (kernels of module 1): whether it went as one graph launch.
bool step(CudaPairGraphs &graphs, intptr_t s, unsigned grid = 8,
          bool reduceEarly = true) {
  void *params[] = {nullptr};
  cu::Result rc = -1;
  return graphs.launch(function(1, 2), shape(grid, 128, true), function(1, 3),
                       shape(grid, 128, reduceEarly), stream(s), params, rc);
}

} // namespace

TEST_CASE("decode + reduce go as one graph, built once and updated per step",
          "[runtime][graphs]") {
  Scope scope;
  CudaPairGraphs graphs(scope.api, /*earlyStart=*/true);
  DeviceFunction decode = function(100, 101), reduce = function(100, 102);
  int block = 0;
  void *params[] = {&block};
  cu::Result rc = -1;
  for (unsigned step = 0; step < 3; ++step) {
    REQUIRE(graphs.launch(decode, shape(132 + step, 384, true), reduce,
                          shape(40 + step, 256, true), stream(7), params, rc));
    CHECK(rc == 0);
  }
  CHECK(scope.driver.creates == 1);
  CHECK(scope.driver.launches == 3);
  CHECK(scope.driver.updates == 6);
  // The last step's grids, blocks and arguments reached both nodes.
  REQUIRE(scope.driver.lastUpdate.size() == 6);
  const cu::KernelNodeParams &d = scope.driver.lastUpdate[4];
  const cu::KernelNodeParams &r = scope.driver.lastUpdate[5];
  CHECK(d.function == decode.function);
  CHECK(d.gridDimX == 134);
  CHECK(d.blockDimX == 384);
  CHECK(d.sharedMemBytes == 1134);
  CHECK(d.kernelParams == params);
  CHECK(r.function == reduce.function);
  CHECK(r.gridDimX == 42);
  CHECK(r.blockDimX == 256);
  // The reduce may start early: a programmatic edge.
  REQUIRE(scope.driver.edges.size() == 1);
  CHECK(scope.driver.edges[0].type == cu::kGraphDependencyTypeProgrammatic);
  CHECK(scope.driver.edges[0].fromPort == cu::kGraphKernelNodePortProgrammatic);

  // Another stream: a graph of its own (launches of one graph serialise).
  REQUIRE(graphs.launch(decode, shape(132, 384, true), reduce,
                        shape(40, 256, true), stream(8), params, rc));
  CHECK(scope.driver.creates == 2);
  CHECK(scope.driver.launchedStreams.back() == stream(8));
  // Clusters: another graph, the decode node (its first) carrying them.
  REQUIRE(graphs.launch(decode, shape(132, 384, true, 2), reduce,
                        shape(40, 256, true), stream(7), params, rc));
  CHECK(scope.driver.creates == 3);
  REQUIRE(scope.driver.clusterNodes.size() == 1);
  CHECK(scope.driver.clusterNodes[0] == scope.driver.addedNodes[4]);
  // Another module's kernels on stream 7.
  DeviceFunction other = function(200, 201), otherReduce = function(200, 202);
  REQUIRE(graphs.launch(other, shape(132, 384, true), otherReduce,
                        shape(40, 256, true), stream(7), params, rc));
  CHECK(scope.driver.creates == 4);

  // Unloading the first module drops its three graphs and keeps the other.
  graphs.forget(decode.module);
  CHECK(scope.driver.execDestroys == 3);
  CHECK(scope.driver.destroys == 3);
  REQUIRE(graphs.launch(other, shape(132, 384, true), otherReduce,
                        shape(40, 256, true), stream(7), params, rc));
  CHECK(scope.driver.creates == 4);
  REQUIRE(graphs.launch(decode, shape(132, 384, true), reduce,
                        shape(40, 256, true), stream(7), params, rc));
  CHECK(scope.driver.creates == 5);
  // A reduce of another module: the graph goes with either module.
  REQUIRE(graphs.launch(decode, shape(132, 384, true), otherReduce,
                        shape(40, 256, true), stream(7), params, rc));
  CHECK(scope.driver.creates == 6);
  graphs.forget(other.module);
  CHECK(scope.driver.execDestroys == 5);
}

TEST_CASE("a stream with work queued gets the two launches, keeping the "
          "decode's early start",
          "[runtime][graphs]") {
  Scope scope;
  CudaPairGraphs graphs(scope.api, true);
  scope.driver.busyStream = stream(3);
  CHECK_FALSE(step(graphs, 3));
  CHECK(scope.driver.creates == 0);
  CHECK(scope.driver.launches == 0);
  // Idle again: a graph.
  scope.driver.busyStream = nullptr;
  CHECK(step(graphs, 3));
  CHECK(scope.driver.launches == 1);
}

TEST_CASE("without early start the reduce waits for the whole decode",
          "[runtime][graphs]") {
  Scope scope;
  SECTION("the backend has none") {
    CudaPairGraphs graphs(scope.api, /*earlyStart=*/false);
    REQUIRE(step(graphs, 1));
  }
  SECTION("the reduce's launch asks for none") {
    CudaPairGraphs graphs(scope.api, /*earlyStart=*/true);
    REQUIRE(step(graphs, 1, 8, false));
  }
  REQUIRE(scope.driver.edges.size() == 1);
  CHECK(scope.driver.edges[0].type == 0);
  CHECK(scope.driver.edges[0].fromPort == 0);
}

TEST_CASE("a driver that refuses a launch graph leaves the launches to the "
          "caller",
          "[runtime][graphs]") {
  Scope scope;
  CudaPairGraphs graphs(scope.api, true);
  SECTION("refused build: not retried on every step") {
    scope.driver.refuseInstantiate = true;
    CHECK_FALSE(step(graphs, 1));
    CHECK_FALSE(step(graphs, 1));
    CHECK(scope.driver.creates == 1);
    CHECK(scope.driver.destroys == 1); // the half-built graph
    CHECK(scope.driver.launches == 0);
  }
  SECTION("refused update: nothing enqueued, the graph dropped") {
    REQUIRE(step(graphs, 1));
    scope.driver.refuseUpdate = true;
    CHECK_FALSE(step(graphs, 1, 9));
    CHECK(scope.driver.launches == 1);
    CHECK(scope.driver.execDestroys == 1);
    // Not asked again on the next step.
    scope.driver.refuseUpdate = false;
    CHECK_FALSE(step(graphs, 1, 9));
    CHECK(scope.driver.updates == 2);
    CHECK(scope.driver.launches == 1);
  }
  SECTION("a failed graph launch is the caller's error") {
    scope.driver.launchResult = 700;
    void *params[] = {nullptr};
    cu::Result rc = -1;
    CHECK(graphs.launch(function(1, 2), shape(8, 128, true), function(1, 3),
                        shape(8, 128, true), stream(1), params, rc));
    CHECK(rc == 700);
  }
}

TEST_CASE("launch graphs are bounded: the least recently launched goes "
          "first",
          "[runtime][graphs]") {
  Scope scope;
  CudaPairGraphs graphs(scope.api, true);
  auto launchOn = [&](intptr_t s) { REQUIRE(step(graphs, s)); };
  const int max = int(CudaPairGraphs::kMaxGraphs);
  for (int s = 1; s <= max; ++s)
    launchOn(s);
  launchOn(1); // stream 1's graph is now the most recent
  CHECK(scope.driver.creates == max);
  launchOn(max + 1); // drops stream 2's
  CHECK(scope.driver.creates == max + 1);
  CHECK(scope.driver.execDestroys == 1);
  launchOn(1);
  launchOn(max + 1);
  CHECK(scope.driver.creates == max + 1);
  launchOn(2);
  CHECK(scope.driver.creates == max + 2);
}

TEST_CASE("launch graphs need every graph call, and yield to "
          "MLAGEN_LAUNCH_GRAPHS=0",
          "[runtime][graphs]") {
  Scope scope;
  ::unsetenv("MLAGEN_LAUNCH_GRAPHS");
  CHECK(CudaPairGraphs::usable(scope.api));
  ::setenv("MLAGEN_LAUNCH_GRAPHS", "0", 1);
  CHECK_FALSE(CudaPairGraphs::usable(scope.api));
  ::unsetenv("MLAGEN_LAUNCH_GRAPHS");
  cu::API old = scope.api;
  old.graphAddDependencies = nullptr; // a driver before CUDA 12.3
  CHECK_FALSE(CudaPairGraphs::usable(old));
}

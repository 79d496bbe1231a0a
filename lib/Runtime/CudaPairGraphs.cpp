//===- CudaPairGraphs.cpp - two launches as one graph launch ---------------===//

#include "CudaPairGraphs.h"
#include "Log.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace mlagen {
namespace {

cu::KernelNodeParams nodeParams(const DeviceFunction &function,
                                const LaunchGeometry &g, void **params) {
  cu::KernelNodeParams node = {};
  node.function = function.function;
  node.gridDimX = g.grid[0];
  node.gridDimY = g.grid[1];
  node.gridDimZ = g.grid[2];
  node.blockDimX = g.threadsPerBlock;
  node.blockDimY = 1;
  node.blockDimZ = 1;
  node.sharedMemBytes = g.sharedBytes;
  node.kernelParams = params;
  return node;
}

} // namespace

CudaPairGraphs::CudaPairGraphs(const cu::API &api, bool earlyStart)
    : api_(api), earlyStart_(earlyStart) {}

CudaPairGraphs::~CudaPairGraphs() {
  for (Entry &entry : entries_)
    destroy(entry);
}

bool CudaPairGraphs::usable(const cu::API &api) {
  const char *env = std::getenv("MLAGEN_LAUNCH_GRAPHS");
  if (env && std::string(env) == "0")
    return false;
  return api.graphCreate && api.graphDestroy && api.graphAddKernelNode &&
         api.graphKernelNodeSetAttribute && api.graphAddDependencies &&
         api.graphInstantiate && api.graphExecDestroy &&
         api.graphExecKernelNodeSetParams && api.graphLaunch;
}

bool CudaPairGraphs::launch(const DeviceFunction &first,
                            const LaunchGeometry &firstShape,
                            const DeviceFunction &second,
                            const LaunchGeometry &secondShape, void *stream,
                            void **params, cu::Result &rc) {
  rc = 0;
  const Key key = {stream,
                   first.function,
                   second.function,
                   firstShape.threadsPerBlock,
                   secondShape.threadsPerBlock,
                   firstShape.clusterX,
                   secondShape.clusterX,
                   secondShape.earlyStart && earlyStart_};
  // One lock for the update and the launch: another thread's update of the
  // same graph must not land between them.
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = std::find_if(entries_.begin(), entries_.end(),
                            [&](const Entry &e) { return e.key == key; });
  if (found == entries_.end()) {
    if (entries_.size() >= kMaxGraphs) {
      destroy(entries_.front());
      entries_.erase(entries_.begin());
    }
    Entry entry;
    entry.key = key;
    entry.module = first.module;
    if (!build(entry, firstShape, secondShape, params)) {
      MLAGEN_LOG(Warn, "decode + reduce as one graph refused by the driver; "
                       "launching them one by one");
      destroy(entry);
      entry.refused = true;
    }
    entries_.push_back(entry);
    found = entries_.end() - 1;
  }
  Entry &entry = *found;
  if (entry.refused)
    return false;
  const cu::KernelNodeParams nodes[2] = {
      nodeParams(first, firstShape, params),
      nodeParams(second, secondShape, params)};
  for (int i = 0; i < 2; ++i)
    if (api_.graphExecKernelNodeSetParams(entry.exec, entry.nodes[i],
                                          &nodes[i]) != 0) {
      // Nothing of this step is enqueued yet: the caller launches both.
      MLAGEN_LOG(Warn, "a launch graph update refused by the driver; "
                       "launching decode and reduce one by one");
      destroy(entry);
      entry.refused = true;
      return false;
    }
  rc = api_.graphLaunch(entry.exec, stream);
  return true;
}

bool CudaPairGraphs::build(Entry &entry, const LaunchGeometry &firstShape,
                           const LaunchGeometry &secondShape, void **params) {
  if (api_.graphCreate(&entry.graph, 0) != 0)
    return false;
  const Key &key = entry.key;
  const LaunchGeometry *shapes[2] = {&firstShape, &secondShape};
  void *functions[2] = {key.first, key.second};
  for (int i = 0; i < 2; ++i) {
    cu::KernelNodeParams node =
        nodeParams({nullptr, functions[i], {}}, *shapes[i], params);
    if (api_.graphAddKernelNode(&entry.nodes[i], entry.graph, nullptr, 0,
                                &node) != 0)
      return false;
    if (shapes[i]->clusterX > 1) {
      cu::LaunchAttributeValue cluster = {};
      cluster.clusterDim = {shapes[i]->clusterX, 1, 1};
      if (api_.graphKernelNodeSetAttribute(
              entry.nodes[i], cu::kLaunchAttributeClusterDimension,
              &cluster) != 0)
        return false;
    }
  }
  cu::GraphEdgeData edge = {};
  if (key.programmatic) {
    edge.fromPort = cu::kGraphKernelNodePortProgrammatic;
    edge.type = cu::kGraphDependencyTypeProgrammatic;
  }
  return api_.graphAddDependencies(entry.graph, &entry.nodes[0],
                                   &entry.nodes[1], &edge, 1) == 0 &&
         api_.graphInstantiate(&entry.exec, entry.graph, 0) == 0;
}

void CudaPairGraphs::destroy(Entry &entry) {
  // An exec with launches in flight is freed when they finish.
  if (entry.exec)
    api_.graphExecDestroy(entry.exec);
  if (entry.graph)
    api_.graphDestroy(entry.graph);
  entry.exec = nullptr;
  entry.graph = nullptr;
}

void CudaPairGraphs::forget(void *module) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Entry &entry : entries_)
    if (entry.module == module)
      destroy(entry);
  std::erase_if(entries_,
                [&](const Entry &entry) { return entry.module == module; });
}

} // namespace mlagen

//===- CudaPairGraphs.cpp - two launches as one graph launch ---------------===//

#include "CudaPairGraphs.h"
#include "Log.h"

#include <algorithm>
#include <cstdlib>

namespace mlagen {
namespace {

cu::KernelNodeParams nodeParams(void *function, const LaunchGeometry &g,
                                void **params) {
  cu::KernelNodeParams node = {};
  node.function = function;
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

CudaPairGraphs::Entry::Entry(const cu::API &api, const Key &key,
                             void *firstModule, void *secondModule)
    : api(api), key(key), modules{firstModule, secondModule} {}

void CudaPairGraphs::Entry::release() {
  if (exec)
    api.graphExecDestroy(exec);
  if (graph)
    api.graphDestroy(graph);
  exec = nullptr;
  graph = nullptr;
}

void CudaPairGraphs::Entry::refuse(const std::string &why) {
  MLAGEN_LOG(Warn, "decode + reduce as one graph: " + why +
                       "; launching them one by one");
  release();
  refused = true;
}

CudaPairGraphs::CudaPairGraphs(const cu::API &api, bool earlyStart)
    : api_(api), earlyStart_(earlyStart) {}

CudaPairGraphs::~CudaPairGraphs() = default;

bool CudaPairGraphs::usable(const cu::API &api) {
  const char *env = std::getenv("MLAGEN_LAUNCH_GRAPHS");
  if (env && std::string(env) == "0")
    return false;
  return api.graphCreate && api.graphDestroy && api.graphAddKernelNode &&
         api.graphKernelNodeSetAttribute && api.graphAddDependencies &&
         api.graphInstantiate && api.graphExecDestroy &&
         api.graphExecKernelNodeSetParams && api.graphLaunch;
}

std::string CudaPairGraphs::describe(const char *call, cu::Result rc) const {
  const char *name = nullptr;
  if (api_.getErrorName)
    api_.getErrorName(rc, &name);
  return std::string(call) + " failed: " +
         (name ? name : "CUDA error " + std::to_string(rc));
}

std::shared_ptr<CudaPairGraphs::Entry>
CudaPairGraphs::find(const Key &key, const DeviceFunction &first,
                     const DeviceFunction &second,
                     const LaunchGeometry &firstShape,
                     const LaunchGeometry &secondShape, void **params) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = std::find_if(entries_.begin(), entries_.end(),
                            [&](const auto &e) { return e->key == key; });
  if (found != entries_.end()) {
    std::rotate(found, found + 1, entries_.end()); // now the most recent
    return entries_.back();
  }
  if (entries_.size() >= kMaxGraphs)
    entries_.erase(entries_.begin());
  auto entry =
      std::make_shared<Entry>(api_, key, first.module, second.module);
  if (std::string why = build(*entry, firstShape, secondShape, params);
      !why.empty())
    entry->refuse(why);
  entries_.push_back(entry);
  return entry;
}

bool CudaPairGraphs::launch(const DeviceFunction &first,
                            const LaunchGeometry &firstShape,
                            const DeviceFunction &second,
                            const LaunchGeometry &secondShape, void *stream,
                            void **params, cu::Result &rc) {
  rc = 0;
  if (api_.streamQuery && api_.streamQuery(stream) != 0)
    return false; // busy (or an error the launches will name)
  const Key key = {stream,
                   first.function,
                   second.function,
                   firstShape.threadsPerBlock,
                   secondShape.threadsPerBlock,
                   firstShape.clusterX,
                   secondShape.clusterX,
                   secondShape.earlyStart && earlyStart_};
  std::shared_ptr<Entry> entry =
      find(key, first, second, firstShape, secondShape, params);
  std::lock_guard<std::mutex> lock(entry->mutex);
  if (entry->refused)
    return false;
  const cu::KernelNodeParams nodes[2] = {
      nodeParams(first.function, firstShape, params),
      nodeParams(second.function, secondShape, params)};
  for (int i = 0; i < 2; ++i)
    if (cu::Result update = api_.graphExecKernelNodeSetParams(
            entry->exec, entry->nodes[i], &nodes[i])) {
      // Nothing of this step is enqueued yet: the caller launches both.
      entry->refuse(describe("cuGraphExecKernelNodeSetParams", update));
      return false;
    }
  rc = api_.graphLaunch(entry->exec, stream);
  return true;
}

std::string CudaPairGraphs::build(Entry &entry,
                                  const LaunchGeometry &firstShape,
                                  const LaunchGeometry &secondShape,
                                  void **params) {
  if (cu::Result rc = api_.graphCreate(&entry.graph, 0))
    return describe("cuGraphCreate", rc);
  const Key &key = entry.key;
  const LaunchGeometry *shapes[2] = {&firstShape, &secondShape};
  void *functions[2] = {key.first, key.second};
  for (int i = 0; i < 2; ++i) {
    cu::KernelNodeParams node = nodeParams(functions[i], *shapes[i], params);
    if (cu::Result rc = api_.graphAddKernelNode(&entry.nodes[i], entry.graph,
                                                nullptr, 0, &node))
      return describe("cuGraphAddKernelNode", rc);
    if (shapes[i]->clusterX > 1) {
      cu::LaunchAttributeValue cluster = {};
      cluster.clusterDim = {shapes[i]->clusterX, 1, 1};
      if (cu::Result rc = api_.graphKernelNodeSetAttribute(
              entry.nodes[i], cu::kLaunchAttributeClusterDimension, &cluster))
        return describe("cuGraphKernelNodeSetAttribute", rc);
    }
  }
  cu::GraphEdgeData edge = {};
  if (key.programmatic) {
    edge.fromPort = cu::kGraphKernelNodePortProgrammatic;
    edge.type = cu::kGraphDependencyTypeProgrammatic;
  }
  if (cu::Result rc = api_.graphAddDependencies(
          entry.graph, &entry.nodes[0], &entry.nodes[1], &edge, 1))
    return describe("cuGraphAddDependencies", rc);
  if (cu::Result rc = api_.graphInstantiate(&entry.exec, entry.graph, 0))
    return describe("cuGraphInstantiate", rc);
  return "";
}

void CudaPairGraphs::forget(void *module) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(entries_, [&](const auto &entry) {
    return entry->modules[0] == module || entry->modules[1] == module;
  });
}

} // namespace mlagen

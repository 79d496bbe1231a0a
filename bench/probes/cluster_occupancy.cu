// How many thread-block clusters of 1-16 blocks fit on the GPU at once for
// a kernel with the 16-row decode kernels' footprint (dynamic shared memory
// and threads as arguments): cudaOccupancyMaxActiveClusters, and the blocks
// a wave of such clusters holds. Clusters must sit inside one GPC, so sizes
// that do not divide a GPC's SM count leave SMs idle.
//   nvcc -arch=sm_90a -o cluster_occupancy bench/probes/cluster_occupancy.cu
//   ./cluster_occupancy 202480 256 210000 384
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
__global__ void footprint(int *p) {
  extern __shared__ int shared[];
  if (p && threadIdx.x == 0) shared[0] = p[0];
}
int main(int argc, char **argv) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaFuncSetAttribute(footprint, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  for (int a = 1; a + 1 < argc; a += 2) {
    const int bytes = std::atoi(argv[a]), threads = std::atoi(argv[a + 1]);
    cudaFuncSetAttribute(footprint, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    for (int size : {1, 2, 4, 6, 8, 16}) {
      cudaLaunchConfig_t config = {};
      config.gridDim = dim3(size * 64);
      config.blockDim = dim3(threads);
      config.dynamicSmemBytes = bytes;
      cudaLaunchAttribute attr;
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = size;
      attr.val.clusterDim.y = 1;
      attr.val.clusterDim.z = 1;
      config.attrs = &attr;
      config.numAttrs = 1;
      int clusters = -1;
      cudaError_t e = cudaOccupancyMaxActiveClusters(&clusters, footprint, &config);
      std::printf("smem %d threads %d cluster %2d: %s max active clusters %d = %d blocks of %d SMs\n", bytes,
                  threads, size, cudaGetErrorString(e), clusters, clusters * size, sms);
    }
  }
  return 0;
}

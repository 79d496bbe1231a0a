// AOT build for NVIDIA through `mlagen` and NVRTC: an sm_90a cubin whose
// entry is mlagen_prefill. Where cuobjdump exists, its SASS uses the tensor
// cores (HMMA); the GPU machine's device check runs it there too.
// RUN: rm -rf %t && mlagen %s --arch=sm_90a -o %t 2>&1 | FileCheck %s --check-prefix=PROGRESS
// RUN: for f in %t/*.cubin; do llvm-readelf -h -s $f; done | FileCheck %s --check-prefix=ELF

// PROGRESS: building 1 kernels
// PROGRESS: wrote {{.*}}manifest.json

// ELF: Machine: NVIDIA CUDA architecture
// ELF: Flags: {{.*}}sm_90
// ELF: mlagen_prefill

mla.prefill @mla_causal qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

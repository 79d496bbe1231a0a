// The portable sm_80 kernels built ahead of time for a later GPU, which runs
// no sm_80 SASS: --portable-target names what NVRTC compiles them for, the
// manifest records it (a runtime on that GPU takes them; elsewhere it skips
// them as built for another target), and a name that is no target from
// sm_80 on, or a build with no sm_80 kernel, is refused.
// RUN: rm -rf %t && mlagen %s --arch=sm_80 --portable-target=sm_100 -o %t 2>&1 | FileCheck %s --check-prefix=PROGRESS
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json
// RUN: not mlagen %s --arch=sm_80 --portable-target=gfx942 -o %t.bad 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not mlagen %s --arch=sm_80 --portable-target=sm_75 -o %t.bad 2>&1 | FileCheck %s --check-prefix=OLD
// RUN: not mlagen %s --arch=sm_90a --portable-target=sm_100 -o %t.bad 2>&1 | FileCheck %s --check-prefix=NONE

// PROGRESS: building 2 kernels
// PROGRESS: wrote {{.*}}manifest.json

// MANIFEST: "compiler_flags": "--gpu-architecture=sm_100 -std=c++17 -default-device --split-compile=2"
// MANIFEST: "compiler_flags": "--gpu-architecture=sm_100 -std=c++17 -default-device --split-compile=2"

// BAD: mlagen: error: InvalidArgument: portableNvidiaTarget 'gfx942' is not an NVIDIA target from sm_80 on, such as sm_100
// OLD: mlagen: error: InvalidArgument: portableNvidiaTarget 'sm_75' is not an NVIDIA target from sm_80 on, such as sm_100
// NONE: mlagen: error: InvalidArgument: --portable-target=sm_100 applies to sm_80 kernels, and none of the 2 kernels is one (add --arch=sm_80)

mla.decode @mla_decode_h32_fp8 qk_head_dim = 576, v_head_dim = 512, q_heads = 32, q_len = 1, page_size = 64, lse, q_type = bf16, kv_type = f8E4M3, out_type = bf16
mla.prefill @mla_prefill qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

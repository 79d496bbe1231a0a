// Page-index expansion compiled ahead of time for every target: sm_90a
// with NVRTC, gfx942 and gfx950 with clang-22, gfx90a with hiprtc; no
// scratch.
// REQUIRES: clang-hip
// RUN: rm -rf %t && mlagen %s --arch=sm_90a,gfx942,gfx950,gfx90a -o %t 2>&1 | FileCheck %s --check-prefix=PROGRESS
// RUN: for f in %t/*.hsaco; do llvm-readelf --notes $f; done | FileCheck %s --check-prefix=NOTES
// RUN: for f in %t/*.hsaco; do llvm-objdump -d $f; done | FileCheck %s --check-prefix=ISA

// PROGRESS: building 8 kernels
// PROGRESS: wrote {{.*}}manifest.json

// NOTES-COUNT-6: .private_segment_fixed_size: 0
// ISA: global_store_dword

mla.expand_page_indices @pages64 page_size = 64
mla.expand_page_indices @pages528 page_size = 528

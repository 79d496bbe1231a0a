// RUN: mlagen-opt %s | FileCheck %s
// RUN: mlagen-opt %s --mlir-print-op-generic | mlagen-opt | FileCheck %s

// CHECK-LABEL: mla.expand_page_indices @pages64 page_size = 64, arch = sm_90a{{$}}
mla.expand_page_indices @pages64 page_size = 64, arch = sm_90a
// Any page size, not only powers of two; no arch yet.
// CHECK-LABEL: mla.expand_page_indices @pages528 page_size = 528{{$}}
mla.expand_page_indices @pages528 page_size = 528
// CHECK-LABEL: mla.expand_page_indices @prepared page_size = 1, arch = gfx942,
//  CHECK-SAME:   launch = <entry = "mlagen_expand_page_indices", threads = 256, shared_bytes = 0>{{$}}
mla.expand_page_indices @prepared page_size = 1, arch = gfx942, launch = <entry = "mlagen_expand_page_indices", threads = 256, shared_bytes = 0>

// The portable sm_80 kernels, compiled for the Blackwell targets a device of
// 10.0 or 12.0 gets them as (no such GPU here: compile-verified), keep every
// value in registers: ptxas reports no spill and no stack for any entry.
// REQUIRES: nvcc
// RUN: mlagen --print-source --variant="decode qk=576 v=512 hq=16 q_len=1 page=64 mask=causal lse=1 q=bf16 kv=bf16 out=bf16 batch_invariant=0 arch=sm_80" > %t.decode.cu
// RUN: mlagen --print-source --variant="decode qk=576 v=512 hq=128 q_len=1 page=64 mask=causal lse=1 q=bf16 kv=fp8e4m3 out=bf16 batch_invariant=0 arch=sm_80" > %t.decode128.cu
// RUN: mlagen --print-source --variant="prefill qk=192 v=128 hq=16 hkv=16 mask=causal lse=1 q=bf16 kv=bf16 out=bf16 arch=sm_80" > %t.prefill.cu
// RUN: %nvcc -cubin -arch=sm_100 -std=c++17 -Xptxas -v %t.decode.cu -o %t.1.cubin > %t.1.log 2>&1
// RUN: %nvcc -cubin -arch=sm_120 -std=c++17 -Xptxas -v %t.decode128.cu -o %t.2.cubin > %t.2.log 2>&1
// RUN: %nvcc -cubin -arch=sm_100 -std=c++17 -Xptxas -v %t.prefill.cu -o %t.3.cubin > %t.3.log 2>&1
// RUN: FileCheck %s --check-prefix=DECODE -DSM=sm_100 < %t.1.log
// RUN: FileCheck %s --check-prefix=DECODE -DSM=sm_120 < %t.2.log
// RUN: FileCheck %s --check-prefix=PREFILL < %t.3.log
// RUN: cat %t.1.log %t.2.log %t.3.log | FileCheck %s --check-prefix=NOSPILL

// DECODE-DAG: Compiling entry function 'mlagen_decode' for '[[SM]]'
// DECODE-DAG: Compiling entry function 'mlagen_decode_reduce' for '[[SM]]'
// PREFILL: Compiling entry function 'mlagen_prefill' for 'sm_100'
// (Before and after the one positive match, so the whole log is checked.)
// NOSPILL-NOT: {{[1-9][0-9]*}} bytes stack frame
// NOSPILL-NOT: {{[1-9][0-9]*}} bytes spill
// NOSPILL: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// NOSPILL-NOT: {{[1-9][0-9]*}} bytes stack frame
// NOSPILL-NOT: {{[1-9][0-9]*}} bytes spill

// Page-index expansion: a block table and per-request token ranges to one
// flat cache slot per token, the form a gather (context-chunk prefill) or a
// cache write (slot_mapping) takes.
//
//   for request b, token i in [0, cu_seqlens[b + 1] - cu_seqlens[b]):
//     p = (seq_starts ? seq_starts[b] : 0) + i
//     slots[cu_seqlens[b] + i] = block_table[b * stride + p / kPageSize] * kPageSize + p % kPageSize
//
// kPageSize is a config value, any size in [1, 4096] (division by a
// constant). Grid: x = ceil(max_seqlen / kThreads), y = batch.

@@MLAGEN_CONFIG@@

@@MLAGEN_PRELUDE@@

// Host mirror: lib/Runtime/ExpandPageIndicesLaunch.h.
struct mlagen_expand_page_indices_params {
  const int *block_table; // [batch, block_table_stride]
  const int *cu_seqlens;  // [batch + 1]
  const int *seq_starts;  // [batch] or null (0)
  int *slots;             // [cu_seqlens[batch]]
  int block_table_stride;
  int batch;
};

extern "C" __global__ void __launch_bounds__(mlagen_config::kThreads)
    mlagen_expand_page_indices(mlagen_expand_page_indices_params p) {
  using namespace mlagen;
  using namespace mlagen_config;
  const int b = block_index_y();
  const int begin = p.cu_seqlens[b];
  const int count = p.cu_seqlens[b + 1] - begin;
  const int i = block_index_x() * kThreads + thread_index();
  if (i >= count)
    return;
  const int position = (p.seq_starts ? p.seq_starts[b] : 0) + i;
  const int page = p.block_table[(long long)b * p.block_table_stride + position / kPageSize];
  p.slots[begin + i] = page * kPageSize + position % kPageSize;
}

//===- GQACacheChecks.h - checks both GQA cache ops share ------*- C++ -*-===//
//
// reshape_and_cache (tokens into paged K/V caches) and gather_cache (paged
// K/V caches into tokens) move the same two layouts, [tokens, hkv, d] and
// [num_blocks, page, hkv, d], 8 elements a thread, with the same fp8 scales;
// their strides, scales and grid are checked here once.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_GQACACHECHECKS_H
#define MLAGEN_LIB_RUNTIME_GQACACHECHECKS_H

#include "DeviceBackend.h"
#include "LaunchChecks.h"

#include <cstdint>

namespace mlagen {

// k_scale and v_scale of an fp8 cache: non-null, 4-byte aligned. The
// message says what the scale does: a write stores x / scale, a gather
// gives stored * scale.
Status checkCacheScales(const float *kScale, const float *vScale,
                        bool dequantise);

// Strides of a [tokens, hkv, d] tensor named `name` ("key", "out_k"): 0 is
// contiguous given the stride inside it (head = d, token = hkv * head);
// each >= 0 and a multiple of 8 elements so vectors stay aligned.
Status resolveTokenStrides(const char *name, int64_t givenToken,
                           int64_t givenHead, const Signature &sig,
                           long long &token, long long &head);

// Strides of a [num_blocks, page, hkv, d] cache, as above (block = page *
// token).
Status resolveCacheStrides(const char *name, int64_t givenBlock,
                           int64_t givenToken, int64_t givenHead,
                           const Signature &sig, long long &block,
                           long long &token, long long &head);

// One thread per 8 elements of a token's K and V rows; `what` ("write",
// "gather") names the launch to split when the grid would be too large.
Status cacheCopyGeometry(int numTokens, const Signature &sig,
                         const CodeObject &code, const char *what,
                         LaunchGeometry &out);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_GQACACHECHECKS_H

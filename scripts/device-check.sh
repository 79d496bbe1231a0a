#!/usr/bin/env bash
# Everything the GPU machine checks in one call (device time is scarce).
# Run from the repo root there, with the binaries built here copied into
# carry/ by scripts/stage-carry.sh:
#   bash scripts/device-check.sh [numerics|bench|all|portable]
# `portable` runs the numerics on the portable sm_80 kernels, compiled for
# the device's own target (MLAGEN_TEST_ARCH=sm_80).
# Results land in $OUT (or /tmp/mlagen-out).
set -uo pipefail
what="${1:-all}"
if [[ $what == portable ]]; then
  export MLAGEN_TEST_ARCH=sm_80
  what=numerics
fi
out="${OUT:-/tmp/mlagen-out}"
mkdir -p "$out"
export MLAGEN_LIBRARY="$PWD/carry/libmlagen.so"
export MLAGEN_CACHE_DIR=/tmp/mlagen-cache
export PYTHONPATH="$PWD/python" PYTHONUNBUFFERED=1
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"

if [[ $what == numerics || $what == all ]]; then
  echo "== Catch2 GPU tests"
  carry/mlagen-gpu-launch-tests 2>&1 | tail -5 | tee "$out/gpu-tests.txt" || status=1
  carry/mlagen-gpu-prefill-tests 2>&1 | tail -15 | tee -a "$out/gpu-tests.txt" || status=1
  carry/mlagen-gpu-decode-tests 2>&1 | tail -15 | tee -a "$out/gpu-tests.txt" || status=1
  carry/mlagen-gpu-elementwise-tests 2>&1 | tail -15 | tee -a "$out/gpu-tests.txt" || status=1
  echo "== Python numerics vs fp32 reference and SDPA"
  python3 python/tests/prefill_device_test.py 2>&1 | tee "$out/numerics.txt" || status=1
  echo "== Python decode numerics, CUDA graph replay, batch invariance"
  python3 python/tests/decode_device_test.py 2>&1 | tee "$out/decode-numerics.txt" || status=1
  echo "== merge_attn_states and chunked-context prefill"
  python3 python/tests/merge_attn_states_device_test.py 2>&1 | tee "$out/merge-numerics.txt" || status=1
  echo "== GQA extend over a paged cache (gather_cache + prefill + merge)"
  python3 python/tests/gqa_extend_device_test.py 2>&1 | tee "$out/gqa-extend.txt" || status=1
  echo "== MLA KV-cache write"
  python3 python/tests/kv_cache_write_device_test.py 2>&1 | tee "$out/kv-cache-write.txt" || status=1
  echo "== GQA KV-cache write (reshape_and_cache)"
  python3 python/tests/reshape_and_cache_device_test.py 2>&1 | tee "$out/reshape-and-cache.txt" || status=1
  echo "== Paged GQA decode (paged_decode): numerics, SDPA, CUDA graph replay"
  python3 python/tests/paged_decode_device_test.py 2>&1 | tee "$out/paged-decode-numerics.txt" || status=1
  echo "== vLLM-shaped MLA backend (python/examples)"
  python3 python/tests/test_vllm_backend_device.py 2>&1 | tail -12 | tee "$out/vllm-backend.txt" || status=1
  [[ -n ${MLAGEN_TEST_ARCH:-} ]] && exit $status # the SASS below is sm_90a's
  echo "== SASS of the AOT sm_90a cubin"
  carry/mlagen --arch=sm_90a -o /tmp/bundle >/dev/null 2>&1 || status=1
  # The default set holds prefill and decode kernels: pick each by signature.
  for op in prefill decode; do
    cubin=/tmp/bundle/$(python3 -c "import json; print(next(k['file'] for k in json.load(open('/tmp/bundle/manifest.json'))['kernels'] if k['signature'].startswith('$op ')))")
    cuobjdump -sass "$cubin" > "$out/$op-sm90a.sass" || status=1
    echo "$op tensor-core instructions: $(grep -cE 'HMMA|HGMMA' "$out/$op-sm90a.sass") ($(grep -oE 'HGMMA|HMMA' "$out/$op-sm90a.sass" | sort | uniq -c | tr '\n' ' '))"
  done
fi
if [[ $what == bench || $what == all ]]; then
  echo "== Host-side costs"
  carry/mlagen-host-bench 2>&1 | tee "$out/host-bench.txt" || status=1
  echo "== Benchmark"
  python3 bench/bench_prefill.py 2>&1 | tail -12 || status=1
  python3 bench/bench_decode.py 2>&1 | tail -8 || status=1
  python3 bench/plot_sweep.py 2>&1 | tail -3 || status=1
  echo "== The vLLM-shaped backend's decode forward, by batch and tile_q"
  mkdir -p "$out/vllm-backend-h16" "$out/vllm-backend-h128"
  OUT="$out/vllm-backend-h16" python3 python/examples/bench_vllm_backend.py --heads 16 \
    --tile-q 16 2>&1 | tail -3 || status=1
  OUT="$out/vllm-backend-h128" python3 python/examples/bench_vllm_backend.py --heads 128 \
    --q-len 1 --batches 8,16,32,64,128 --tile-q 16,32 2>&1 | tail -3 || status=1
fi
exit $status

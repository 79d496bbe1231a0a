# decode_device_test's row_logits case (key 0 of each request at logits -80 .. 20
# across the rows) on an fp8 cache for each kernel that reads one: 16 heads
# (16-row e4m3 blocks: bf16 q split into hi + lo, or fp8 q), 32 heads (32-row
# blocks), 128 heads (64-row). Prints each case's errors against its bounds.
import os, sys
sys.path.insert(0, "python/tests")
import torch
import decode_device_test as t
import mlagen

rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
sms = torch.cuda.get_device_properties(0).multi_processor_count
for heads, q_len, fp8_q in ((16, 1, False), (16, 1, True), (16, 2, False), (32, 1, False), (32, 1, True),
                            (128, 1, False), (128, 1, True)):
    r = t.numerics_case(rt, "sm_90a", heads, q_len, 64, [1, 40, 300], sms, fp8=True, fp8_q=fp8_q,
                        row_logits=True)
    print(os.environ.get("NAME", "?"), "PASS" if r["ok"] else "FAIL", f"H{heads} q_len {q_len}",
          "fp8 q" if fp8_q else "bf16 q", f"err {r['max_abs_err']:.2e} (emulation {r['emulation_max_abs_err']:.2e}, over {r['over_tolerance']})",
          f"lse abs {r['lse_max_abs_err']:.2e} rel {r['lse_max_rel_err']:.2e} (over {r['lse_over_tolerance']})", flush=True)

# One decode step of ragged requests at 128 heads (one-tile items, items
# whose last tile ends inside its page, split requests), for
# compute-sanitizer: `compute-sanitizer --tool synccheck python3
# bench/probes/sanitize_ragged.py [fp8]` (MLAGEN_DECODE_TMA=0: launches
# without a tensor map). Prints the output's checksum.
import math, os, sys, torch
import mlagen
QK, V, PAGE, HEADS = 576, 512, 64, 128
fp8 = len(sys.argv) > 1 and sys.argv[1] == "fp8"
lens_list = [1, 17, 64, 65, 130, 300, 1000, 2049]
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
kernel = rt.kernel(f"decode qk={QK} v={V} hq={HEADS} q_len=1 page={PAGE} mask=causal lse=1 q=bf16 "
                   f"kv={'fp8e4m3' if fp8 else 'bf16'} out=bf16 arch=sm_90a")
batch = len(lens_list)
pages = max(math.ceil(n / PAGE) for n in lens_list)
torch.manual_seed(0)
q = torch.randn(batch, 1, HEADS, QK, device="cuda", dtype=torch.bfloat16)
kv = torch.randn(batch * pages, PAGE, QK, device="cuda", dtype=torch.bfloat16)
if fp8:
    kv = (kv * 16).to(torch.float8_e4m3fn)
table = torch.randperm(batch * pages, device="cuda", dtype=torch.int32).view(batch, pages)
lens = torch.tensor(lens_list, device="cuda", dtype=torch.int32)
out = torch.empty(batch, 1, HEADS, V, device="cuda", dtype=torch.bfloat16)
lse = torch.empty(batch, 1, HEADS, device="cuda", dtype=torch.float32)
# Few SMs: long requests split into chunks merged by the grid or the reduce.
plan = mlagen.DecodePlan(kernel, batch, num_sms=16, max_seq_len=max(lens_list)).update(lens_list)
kernel.decode(q, kv, out, table, lens, plan, 1 / math.sqrt(192), lse=lse, kv_scale=1 / 16 if fp8 else 1.0)
torch.cuda.synchronize()
print("ragged H128", "fp8" if fp8 else "bf16", "TMA" if os.environ.get("MLAGEN_DECODE_TMA") != "0" else "no map",
      "checksum", float(out.float().sum()), float(lse.sum()))

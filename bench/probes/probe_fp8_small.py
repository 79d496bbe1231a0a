# Small and short decode steps on an fp8 cache, where the plan's shortest
# chunk (DecodePlanner::minChunkKeysFor) sets how many blocks stream: H16
# ($HEADS), page 64, fp8 cache with bf16 q (f8) and fp8 q (f8q), next to bf16. SHAPES:
# BATCHxSEQ or BATCHxSEQxQ_LEN; MODES picks some of bf16, f8, f8q. Prints
# each step's us and its blocks (work items) per mode; $NAME labels the line.
import os, sys
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
shapes = ["1x4096", "1x8192", "2x4096", "4x4096", "8x4096", "1x1024", "1x512",
          "2x512", "4x512", "1x256", "1x640", "8x1024", "16x1024", "32x512", "1x4096x2", "4x4096x2"]
shapes = os.environ.get("SHAPES", ",".join(shapes)).split(",")
modes = {"bf16": (False, False), "f8": (True, False), "f8q": (True, True)}
modes = {k: modes[k] for k in os.environ.get("MODES", "bf16,f8,f8q").split(",")}
heads = int(os.environ.get("HEADS", 16))
res = []
for shape in shapes:
    batch, seq, *rest = (int(x) for x in shape.split("x"))
    q_len = rest[0] if rest else 1
    cells = []
    for name, (fp8, fp8_q) in modes.items():
        step = mlagen_decode(rt, "sm_90a", batch, heads, seq, fp8, fp8_q, q_len=q_len)
        cells.append(f"{name} {bench(step) * 1e3:.1f} ({step.plan.num_work})")
    res.append(f"{shape}: " + " ".join(cells))
print(os.environ.get("NAME", "?"), f"H{heads}", " | ".join(res), flush=True)

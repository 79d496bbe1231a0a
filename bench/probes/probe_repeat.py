# Repeats one fp8-cache MLA decode step with do_bench's writing L2 flush
# (zero_ of 256 MB) before each, the condition under which a race between
# copies that complete out of order and parity waits showed up (single
# steps passed). argv: batch heads seq fp8q(0|1) num_sms(0: all) reps flush(0|1);
# SYNC=1 synchronizes after each step. Exit status nonzero on a fault; wrap
# in `timeout` to catch a hang.
import os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode
import mlagen
b, h, seq, fp8q, sms, reps, flush = (int(x) for x in sys.argv[1:8])
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
step = mlagen_decode(rt, "sm_90a", b, h, seq, True, fp8q == 1, num_sms=sms if sms > 0 else None)
buf = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
for i in range(reps):
    if flush:
        buf.zero_()
    step()
    if os.environ.get("SYNC"):
        torch.cuda.synchronize()
torch.cuda.synchronize()
print("ok", sys.argv[1:], flush=True)

"""CPU-only smoke check of the Python binding (no torch, no pytest, no GPU).

    python3 python/tests/binding_smoke.py [LIBMLAGEN_SO [MLAGEN_TOOL]]

Loads libmlagen.so (argument, else $MLAGEN_LIBRARY, else a build tree),
canonicalises signatures, compiles kernels compile-only and reads their
metadata, checks that errors carry status codes and messages, and, given the
`mlagen` tool, builds a one-kernel AOT bundle and loads it through
Runtime(bundle_paths=...). Registered in ctest as python.binding. Exit status
1 on the first failure.
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve()
if len(sys.argv) > 1:
    os.environ["MLAGEN_LIBRARY"] = sys.argv[1]
sys.path.insert(0, str(HERE.parents[1]))
tool = sys.argv[2] if len(sys.argv) > 2 else None

work = tempfile.TemporaryDirectory(prefix="mlagen-binding-")
os.environ["MLAGEN_CACHE_DIR"] = os.path.join(work.name, "cache")  # a fresh cache
os.environ.pop("MLAGEN_BUNDLE_PATH", None)

import mlagen  # noqa: E402

assert "torch" not in sys.modules, "importing mlagen must not import torch"
checks = 0


def check(cond, what):
    global checks
    if not cond:
        print(f"FAIL: {what}", flush=True)
        sys.exit(1)
    checks += 1
    print(f"ok   {what}", flush=True)


def expect_error(call, code, needle, what):
    try:
        call()
    except mlagen.Error as e:
        check(e.code == code and needle in str(e) and e.message,
              f"{what}: {mlagen.status_name(e.code)} ({e.code}) '{e.message[:90]}'")
        return e
    check(False, f"{what}: no error raised")


PREFILL = "prefill qk=192 v=128 hq=16 hkv=16 mask=causal arch=sm_90a"
DECODE = "decode qk=576 v=512 hq=16 q_len=1 page=64 arch=sm_90a"

# --- signatures -----------------------------------------------------------------
canon = mlagen.canonicalize(PREFILL)
check(canon.startswith("prefill qk=192 v=128 hq=16 hkv=16 mask=causal") and "lse=1" in canon
      and canon.endswith("arch=sm_90a"), f"canonicalize prefill -> '{canon}'")
check(mlagen.canonicalize(canon) == canon, "canonical text is a fixed point")
check(mlagen.canonicalize("prefill arch=sm_90a mask=causal hkv=16 hq=16 v=128 qk=192") == canon,
      "fields in any order canonicalise alike")
dcanon = mlagen.canonicalize(DECODE)
check(dcanon.startswith("decode qk=576 v=512 hq=16 q_len=1 page=64"), f"canonicalize decode -> '{dcanon}'")
check(mlagen.status_name(2) == "InvalidArgument" and mlagen.status_name(99) == "Unknown",
      "status_name")
expect_error(lambda: mlagen.canonicalize("prefill qk=192 v=128 hq=16 hkv=5 mask=causal arch=sm_90a"),
             1, "multiple of num_kv_heads", "GQA ratio not integral is an InvalidSignature")
expect_error(lambda: mlagen.canonicalize("prefill qk=191 v=128 hq=16 hkv=16 mask=causal arch=sm_90a"),
             1, "head_dim_qk", "odd head dim is an InvalidSignature")
expect_error(lambda: mlagen.canonicalize("prefill bogus=1"), 1, "bogus", "unknown field named")
expect_error(lambda: mlagen.canonicalize("decode qk=576 v=512 hq=16 q_len=1 page=3 arch=sm_90a"),
             1, "power of two", "page 3 (not a power of two) rejected")
# Bad GQA inputs name the field (a window wider than any sequence is fine).
GQA = "prefill qk=128 v=128 hq=32 hkv=8 mask=causal arch=sm_90a"
for extra, needle in (("window=-5,0", "window_left must be -1 (unbounded) or >= 0 (got -5)"),
                      ("window=0,-7", "window_right"),
                      ("softcap=-1", "soft_cap must be finite and >= 0 (got -1)"),
                      ("softcap=nan", "soft_cap must be finite"),
                      ("softcap=inf", "soft_cap must be finite"),
                      ("alibi=2", "'alibi' has a malformed value '2'")):
    expect_error(lambda: mlagen.canonicalize(f"{GQA} {extra}"), 1, needle, f"{extra} rejected")
check(" alibi=1 " in mlagen.canonicalize(f"{GQA} alibi=1 window=1000000,0 softcap=50"),
      "alibi=1 with a huge window and a soft cap canonicalises")
expect_error(lambda: mlagen.canonicalize(DECODE + " alibi=1"), 1, "not a decode field",
             "alibi on decode rejected")

# --- compile-only ---------------------------------------------------------------------
rt = mlagen.Runtime(flags=mlagen.COMPILE_ONLY)
check(rt.backend.startswith("compile-only"), f"backend '{rt.backend}'")
ck = rt.compile(PREFILL)
check(ck.binary[:4] == b"\x7fELF" and ck.format == "cubin" and ck.arch == "sm_90a"
      and ck.signature == canon, f"prefill compiles: {ck}")
check("mlagen_prefill" in ck.entries, f"prefill entry points {ck.entries}")
meta = ck.metadata()
check(meta["size"] == len(ck.binary) > 1000 and meta["signature"] == canon, "metadata")
dk = mlagen.compile(DECODE)
check({"mlagen_decode", "mlagen_decode_reduce"} <= set(dk.entries),
      f"decode compiles (module-level compile): {dk.entries}, {len(dk.binary)} bytes")
RESHAPE = "reshape_and_cache hkv=8 v=128 page=16 kv=fp8e4m3 arch=sm_90a"
check(mlagen.canonicalize(RESHAPE) ==
      "reshape_and_cache hkv=8 v=128 page=16 in=bf16 kv=fp8e4m3 arch=sm_90a",
      "canonicalize reshape_and_cache (an fp8 cache names its input type)")
rk = rt.compile(RESHAPE)
check(rk.binary[:4] == b"\x7fELF" and rk.entries == ["mlagen_reshape_and_cache"],
      f"reshape_and_cache compiles: {rk.entries}")
GATHER = "gather_cache hkv=8 v=128 page=16 kv=fp8e4m3 arch=sm_90a"
check(mlagen.canonicalize(GATHER) ==
      "gather_cache hkv=8 v=128 page=16 kv=fp8e4m3 out=bf16 arch=sm_90a",
      "canonicalize gather_cache (an fp8 cache names its output type)")
gk = rt.compile(GATHER)
check(gk.binary[:4] == b"\x7fELF" and gk.entries == ["mlagen_gather_cache"],
      f"gather_cache compiles: {gk.entries}")
again = rt.compile(PREFILL)
check(again.binary == ck.binary, "a second compile (memory cache) returns the same bytes")
expect_error(lambda: rt.compile("prefill qk=192 v=128 hq=16 hkv=3 mask=causal arch=sm_90a"), 1, "",
             "compile of an invalid signature")
ak = rt.compile(GQA + " alibi=1")
check("mlagen_prefill" in ak.entries and "alibi=1" in ak.signature, f"an alibi kernel compiles: {ak}")
expect_error(lambda: rt.kernel(PREFILL), 4, "", "kernel() on a compile-only runtime is NoBackend")
expect_error(lambda: rt.kernels([PREFILL, GQA]), 4, "kernel 0 (", "kernels() names the first that failed")
expect_error(lambda: rt.kernels([PREFILL, "prefill qk=1"]), 1, "signature 1: ",
             "kernels() names a signature that does not parse")
check(rt.kernels([]) == [], "kernels() of nothing is an empty list")
pending = rt.kernels_async([PREFILL, GQA])
check(not isinstance(pending, list) and hasattr(pending, "result"),
      "kernels_async() returns a future at once")
expect_error(lambda: pending.result(timeout=60), 4, "kernel 0 (",
             "kernels_async() hands kernels()'s error to whoever waits")
check(rt.kernels_async([]).result(timeout=60) == [], "kernels_async() of nothing: an empty list")
try:
    mlagen.Runtime(bundle_paths=[os.path.join(work.name, "missing")])
    check(False, "a bundle path without manifest.json is refused")
except FileNotFoundError as e:
    check("manifest.json" in str(e), f"a bundle path without manifest.json is refused: {e}")

# --- AOT bundle through Runtime(bundle_paths=...) --------------------------------
if tool and os.access(tool, os.X_OK):
    bundle = os.path.join(work.name, "bundle")
    run = subprocess.run([tool, f"--variant={DECODE}", "-o", bundle], capture_output=True,
                         text=True, timeout=600)
    check(run.returncode == 0 and Path(bundle, "manifest.json").is_file(),
          f"`mlagen --variant=... -o` writes a bundle (rc {run.returncode}) {run.stderr[-300:]}")
    flags = mlagen.COMPILE_ONLY | mlagen.NO_GENERATOR | mlagen.NO_DISK_CACHE
    try:
        mlagen.Runtime(flags=flags).compile(DECODE)
        check(False, "without a bundle or generator nothing compiles")
    except mlagen.Error as e:
        check(e.code != 0 and e.message, f"without a bundle or generator: {e}")
    bk = mlagen.Runtime(flags=flags, bundle_paths=[bundle]).compile(DECODE)
    check(bk.binary[:4] == b"\x7fELF" and "mlagen_decode" in bk.entries,
          f"the bundled kernel is found: {bk}")
    check("MLAGEN_BUNDLE_PATH" not in os.environ, "MLAGEN_BUNDLE_PATH restored")
else:
    print("skip bundle checks: no mlagen tool given", flush=True)

print(f"{checks} checks pass", flush=True)

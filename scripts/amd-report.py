#!/usr/bin/env python3
"""Compiles the prefill grid for gfx90a (hiprtc), gfx942 and gfx950 (clang-22)
and prints, per code object, what its notes and ISA say: VGPRs, AGPRs, SGPRs,
scratch (spills), the LDS the launch asks for, and the MFMA count.

    python3 scripts/amd-report.py [build-dir]      (default: build)
    python3 scripts/amd-report.py --default-set [build-dir]
The second form compiles mlagen's default set (every op's shipped variants)
for the three archs instead and fails on any scratch or register spill in
any of its kernels. No AMD GPU runs these: this is the compile-time evidence.
"""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

args = sys.argv[1:]
default_set = "--default-set" in args
args = [a for a in args if a != "--default-set"]
build = Path(args[0] if args else "build")
mlagen = build / "bin" / "mlagen"
tools = Path("/usr/lib/llvm-22/bin")


def note_reader(obj):
    """key -> each value of `key` in the code object's AMDGPU notes (one a kernel)."""
    notes = subprocess.run([tools / "llvm-readelf", "--notes", obj], capture_output=True, text=True,
                           check=True).stdout
    return lambda key: [int(v) for v in re.findall(rf"\.{key}:\s+(\d+)", notes)]


def default_set_report():
    """Every kernel of the default set for gfx90a, gfx942 and gfx950."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([str(mlagen), "--arch=gfx90a,gfx942,gfx950", "-o", out], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        manifest = json.loads((Path(out) / "manifest.json").read_text())
        bad = 0
        print("| arch | variant | kernels | max VGPR | scratch | VGPR / SGPR spills |")
        print("|---|---|---|---|---|---|")
        for kernel in manifest["kernels"]:
            each = note_reader(Path(out) / kernel["file"])
            scratch = each("private_segment_fixed_size")
            vgpr_spills, sgpr_spills = sum(each("vgpr_spill_count")), sum(each("sgpr_spill_count"))
            bad += any(scratch) or vgpr_spills + sgpr_spills > 0
            print(f"| {kernel['arch']} | {kernel['signature'].rsplit(' arch=', 1)[0]} | {len(scratch)} "
                  f"| {max(each('vgpr_count'))} | {max(scratch)} | {vgpr_spills} / {sgpr_spills} |")
        print(f"\n{len(manifest['kernels'])} code objects, {bad} with scratch or spills")
        return 1 if bad else 0


if default_set:
    sys.exit(default_set_report())
variants = [f"prefill qk={qk} v=128 hq={hq} hkv={hkv} mask={mask} arch=ARCH"
            for mask in ("causal", "none") for qk in (192, 128) for hq, hkv in ((16, 16), (32, 8))]
rows = []
failed = False
for arch, compiler in (("gfx90a", "hiprtc"), ("gfx942", "clang"), ("gfx950", "clang")):
    with tempfile.TemporaryDirectory() as out:
        cmd = [str(mlagen), f"--compiler={compiler}", "-o", out]
        cmd += [f"--variant={v.replace('ARCH', arch)}" for v in variants]
        subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
        manifest = json.loads((Path(out) / "manifest.json").read_text())
        for kernel in manifest["kernels"]:
            obj = Path(out) / kernel["file"]
            isa = subprocess.run([tools / "llvm-objdump", "-d", f"--mcpu={arch}", obj],
                                 capture_output=True, text=True, check=True).stdout
            values = note_reader(obj)
            note = lambda key: values(key)[0]
            sig = kernel["signature"]
            row = dict(arch=arch, compiler=compiler,
                       variant=re.sub(r" window.*", "", sig.replace("prefill ", "")),
                       vgpr=note("vgpr_count"), agpr=(values("agpr_count") or [0])[0],
                       sgpr=note("sgpr_count"), scratch=note("private_segment_fixed_size"),
                       lds=kernel["shared_bytes"], mfma=isa.count("v_mfma"))
            failed |= row["scratch"] != 0 or row["mfma"] == 0
            rows.append(row)
print("| arch | compiler | variant | VGPR | AGPR | SGPR | scratch | LDS launched | MFMA |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['arch']} | {r['compiler']} | {r['variant']} | {r['vgpr']} | {r['agpr']} | {r['sgpr']} "
          f"| {r['scratch']} | {r['lds']} | {r['mfma']} |")
sys.exit(1 if failed else 0)

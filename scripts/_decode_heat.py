"""Temporary probe: bf16 decode rows, the default (tile loop) against the Gluon kernel's swapped 16-row tiles in slices
of K, each timed cool and right after heavy GEMMs (the power cap's lower clocks), against torch.matmul in turns."""
import subprocess
import sys
import time

import torch

sys.path.insert(0, ".")
from benchmarks.harness import paired_graph_us  # noqa: E402
import fused_ops  # noqa: E402
from fused_ops import wgmma  # noqa: E402

SHAPES = [(1, 2112, 7168), (1, 3584, 2368), (1, 4096, 1792), (1, 4608, 16384), (16, 2112, 7168), (16, 2880, 1024),
          (16, 3584, 4736), (16, 3584, 5120), (16, 4096, 1024), (16, 5120, 6912), (16, 14336, 4096),
          (1, 19008, 8192), (16, 6912, 5120)]
SMS = torch.cuda.get_device_properties(0).multi_processor_count


def candidates(m, n, k):
    out = {"default": None}
    for bn, bk, st in ((64, 128, 6), (64, 64, 8), (128, 128, 4), (64, 256, 3)):
        tiles = -(-n // bn)
        blocks = -(-k // bk)
        for split in sorted({1, 2, 3, 4, max(1, min(SMS // tiles, blocks // 4))}):
            if tiles * split <= SMS and blocks >= split * 2:
                out[f"swap 16x{bn}x{bk} s{st} k{split}"] = (bn, bk, st, split)
    return out


def smi():
    q = "clocks.sm,power.draw"
    return subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True,
                          text=True).stdout.strip()


X = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)


def heat(seconds):
    t0 = time.time()
    while time.time() - t0 < seconds:
        for _ in range(10):
            torch.matmul(X, X)
        torch.cuda.synchronize()


print("m,n,k,config,state,ours_us,torch_us,vs_torch,err,clock")
for state in ("cool", "hot"):
    for m, n, k in SHAPES:
        g = torch.Generator(device="cuda").manual_seed(m + n + k)
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=g)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        ref = a.double() @ b.double()
        for name, cand in candidates(m, n, k).items():
            if cand is None:
                fn = lambda: fused_ops.matmul(a, b, out=c)  # noqa: E731
            else:
                bn, bk, st, split = cand
                fn = (lambda bn=bn, bk=bk, st=st, split=split:  # noqa: E731
                      wgmma.run(a, b, c, bn, bk, st, SMS, block_m=16, swap=True, split_k=split))
            c.fill_(float("nan"))
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                print(f"# {m}x{n}x{k} {name}: {str(e)[:100]}")
                continue
            err = ((c.double() - ref).norm() / ref.norm()).item()
            torch.matmul(a, b, out=c)
            if state == "hot":
                heat(0.7)
            t, tt = paired_graph_us(fn, lambda: torch.matmul(a, b, out=c), rounds=11)
            print(f"{m},{n},{k},{name},{state},{t:.2f},{tt:.2f},{tt / t:.3f},{err:.1e},{smi().split(',')[0]}",
                  flush=True)

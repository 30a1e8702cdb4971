"""Temporary probe: decode GEMMs (fused_ops.matmul vs torch.matmul, graph-timed in turns) fresh, right after heavy
GEMMs, after 20 s idle, and after allocator churn without heat; the GPU's SM clock, temperature and power beside."""
import subprocess
import sys
import time

import torch

sys.path.insert(0, ".")
from benchmarks.harness import paired_graph_us  # noqa: E402
import fused_ops  # noqa: E402

SHAPES = [(16, 3584, 4736), (16, 3584, 5120), (16, 4096, 1024), (16, 2880, 1024), (16, 2112, 7168)]


def smi():
    q = "clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active"
    return subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True,
                          text=True).stdout.strip()


def decode(tag):
    for m, n, k in SHAPES:
        g = torch.Generator(device="cuda").manual_seed(m + n + k)
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=g)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        fused_ops.matmul(a, b, out=c)
        torch.matmul(a, b, out=c)
        t, tt = paired_graph_us(lambda: fused_ops.matmul(a, b, out=c), lambda: torch.matmul(a, b, out=c), rounds=11)
        print(f"{tag:14s} {m}x{n}x{k:<6d} ours {t:6.2f} torch {tt:6.2f} {tt / t:5.2f}x   {smi()}", flush=True)


def heat(seconds):
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    t0 = time.time()
    while time.time() - t0 < seconds:
        for _ in range(20):
            torch.matmul(x, x)
        torch.cuda.synchronize()
    print("heated", smi(), flush=True)


decode("fresh")
heat(4)
decode("hot")
time.sleep(20)
decode("after 20 s")
big = [torch.empty(1 << 30, dtype=torch.uint8, device="cuda") for _ in range(40)]
del big
torch.cuda.empty_cache()
decode("churned, cool")
heat(4)
decode("hot again")

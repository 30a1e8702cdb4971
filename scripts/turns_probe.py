"""wgmma.run(turns=True) over one and two tiles a program, FP8 per-tensor, 20 calls in a row and then 10 calls
captured in a CUDA graph and replayed, each checked against float64: the reproducer of the first turns version's
launch failures (results/current/gemm/ROUNDS.md, "64-row tiles"). One GPU (Hopper).

    IRIS_BACKEND=cuda python scripts/turns_probe.py [CASE ...] [--calls N] [--no-graph]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402

from benchmarks.gemm import quantize  # noqa: E402
from fused_ops import wgmma  # noqa: E402


def quant(m, n, k):
    """FP8 A (m x k) and column-major B (k x n) with per-tensor scales, as benchmarks/gemm.py makes them."""
    (a, sa), (w, sb) = (quantize(torch.randn(*shape, device="cuda"), False, 1) for shape in ((m, k), (n, k)))
    return a, w.t(), sa, sb


# (m, n, k, block_n, rem, stages, precise accumulation): 64-row tiles in turns, 115-256 tiles of them
cases = [(128, 14784, 8192, 128, 0, 6, True), (128, 14784, 8192, 64, 16, 10, True), (256, 8192, 1024, 128, 0, 6, True),
         (256, 8192, 1024, 64, 16, 10, True), (256, 8192, 1024, 128, 0, 6, False), (128, 14784, 8192, 128, 16, 6, True),
         (128, 14720, 8192, 128, 0, 6, True), (128, 14784, 1024, 128, 0, 6, True), (256, 8192, 8192, 128, 0, 6, True)]
p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("cases", nargs="*", type=int, help="indices into cases (default: all)")
p.add_argument("--calls", type=int, default=20, help="calls in a row, each checked")
p.add_argument("--no-graph", action="store_true", help="skip the captured graph's replays")
args = p.parse_args()
which = args.cases or range(len(cases))
for i in which:
    m, n, k, bn, rem, st, promote = cases[i]
    a, b, sa, sb = quant(m, n, k)
    ref = (a.double() * sa.double()) @ (b.double() * sb.double())
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    ok = True
    for it in range(args.calls):
        c.fill_(float("nan"))
        wgmma.run(a, b, c, bn, 128, st, 132, sa, sb, promote=promote, block_m=64, rem=rem, turns=True)
        torch.cuda.synchronize()
        err = ((c.double() - ref).norm() / ref.norm()).item()
        if not err < 5e-3:
            ok = False
            print(f"case {i} call {it}: err {err}", flush=True)
            break
    if args.no_graph:
        print(f"case {i} {cases[i]}: calls ok={ok}", flush=True)
        continue
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(10):
            wgmma.run(a, b, c, bn, 128, st, 132, sa, sb, promote=promote, block_m=64, rem=rem, turns=True)
    for _ in range(5):
        g.replay()
    torch.cuda.synchronize()
    err = ((c.double() - ref).norm() / ref.norm()).item()
    print(f"case {i} {cases[i]}: {args.calls} calls ok={ok}, graph err {err:.2e}", flush=True)

"""Does the Gluon kernel lose on operands whose rows are not 128-byte aligned because its boxes' rows straddle the
128-byte swizzle span? The same calls (fused_ops.matmul, fp8.scaled_mm at their defaults, or forced onto the Gluon
kernel) with wgmma.ROW_SWIZZLE_MIN unset (the widest swizzle each box allows) and set to 64 and 32 (each operand
takes the widest span its row pitch is a multiple of), beside the same values in rows padded to 128 bytes (A's, B's,
both); each
against torch in the same run, graph-timed, checked against torch. One GPU (Hopper); one CSV.

    IRIS_BACKEND=cuda python scripts/swizzle_probe.py --out DIR [--hot S] [--rounds N]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from benchmarks.gemm import quantize  # noqa: E402
from benchmarks.harness import paired_graph_us, stamp  # noqa: E402
from fused_ops import fp8, local_gemm, pad_weight, wgmma  # noqa: E402

BF16 = ((1024, 1440, 2880), (4096, 1440, 2880), (4096, 720, 2880), (1024, 7392, 8192), (4096, 7392, 8192),
        (2048, 5000, 2048), (1000, 1000, 1000), (1, 4000, 4096), (16384, 2880, 360))
BF16_K_MAJOR = ((4096, 4096, 3000), (1024, 4096, 3000), (1024, 8192, 3696), (4096, 8192, 3696), (16384, 2880, 360),
                (1024, 2880, 1440), (4096, 2880, 720))
FP8 = ((1024, 1440, 2880), (1024, 640, 2880), (4096, 1440, 2880), (1024, 8192, 3696), (128, 8192, 3696),
       (1024, 2880, 720))
MODES = (None, 64, 32)  # (0, no swizzle: swapped tiles fail to compile in triton 3.6)


def padded(t):
    """t's values in storage whose rows start every 128 bytes, as t's layout (fused_ops.pad_weight)."""
    return pad_weight(t, 128 // t.element_size())


def calls(dtype, m, n, k, kernel):
    """(ours, torch's, operand sets {as given, padded}) for one GEMM."""
    if dtype.startswith("bf16"):  # "bf16 k-major": B as nn.Linear's weight.t(), its rows of K padded
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        b = b.t().contiguous().t() if dtype.endswith("k-major") else b
        ours, ref = (lambda x, y: local_gemm.matmul(x, y, kernel=kernel)), torch.matmul
    else:
        (a, sa), (w, sb) = (quantize(torch.randn(*shape, device="cuda"), False, 1) for shape in ((m, k), (n, k)))
        b, fast = w.t(), dtype == "fp8 fast"
        ours = lambda x, y: fp8.scaled_mm(x, y, sa, sb, use_fast_accum=fast, kernel=kernel)  # noqa: E731
        ref = lambda x, y: torch._scaled_mm(x, y, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast)  # noqa: E731
    return ours, ref, {"given": (a, b), "padded": (padded(a), padded(b)), "A padded": (padded(a), b),
                       "B padded": (a, padded(b))}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--hot", type=float, default=0.0)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--no-swizzle", action="store_true", help="the default swizzle only (each operand layout)")
    p.add_argument("--only", nargs="*", default=(), help="MxNxK shapes of the lists to run (default: all)")
    p.add_argument("--dtypes", nargs="*", default=(), help="bf16, 'bf16 k-major', fp8, 'fp8 fast' (default: all)")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    cases = [(d, s, None) for d in ("fp8", "fp8 fast") for s in FP8]
    cases += [("bf16", s, None) for s in BF16] + [("bf16", (1000, 1000, 1000), "wgmma")]
    cases += [("bf16 k-major", s, None) for s in BF16_K_MAJOR]
    if args.dtypes:
        cases = [c for c in cases if c[0] in args.dtypes]
    if args.only:
        cases = [c for c in cases if "x".join(map(str, c[1])) in args.only]
    for dtype, (m, n, k), kernel in cases:
        ours, ref, sets = calls(dtype, m, n, k, kernel)
        for layout, (a, b) in sets.items():
            want = ref(a, b).float()
            for mode in MODES if layout == "given" and not args.no_swizzle else (None,):
                wgmma.ROW_SWIZZLE_MIN = mode
                try:
                    got = ours(a, b).float()
                    err = ((got - want).norm() / want.norm()).item()
                    us, torch_us = paired_graph_us(lambda: ours(a, b), lambda: ref(a, b), args.rounds, args.hot)
                except Exception as e:  # noqa: BLE001 (a layout the compiler refuses: recorded, the probe goes on)
                    print(f"{dtype} {m}x{n}x{k} swizzle>={mode}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                    continue
                finally:
                    wgmma.ROW_SWIZZLE_MIN = None
                rows.append(dict(dtype=dtype, m=m, n=n, k=k, kernel=kernel or "default", layout=layout,
                                 swizzle_min="default" if mode is None else mode, time_us=us, torch_us=torch_us,
                                 vs_torch=torch_us / us, rel_to_torch=err, correct=err < 2e-2, hot=args.hot,
                                 **stamp(1, "scripts/swizzle_probe.py")))
                print(f"{dtype:12} {m}x{n}x{k} {kernel or 'default':7} {layout:8} "
                      f"swizzle>={rows[-1]['swizzle_min']!s:7}"
                      f" {us:8.2f} us  torch {torch_us:8.2f}  {torch_us / us:5.3f}x  err {err:.1e}", flush=True)
                pd.DataFrame(rows).to_csv(os.path.join(args.out, "swizzle.csv"), index=False)


if __name__ == "__main__":
    main()

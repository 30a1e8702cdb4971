"""Whether operand rows that are not 128 bytes apart slow the GEMM alone (issue 31; one GPU, graph-timed): the same
values through `fused_ops.fp8.scaled_mm` (FP8: A and B K-major, rows K bytes apart) and `fused_ops.matmul` (bf16),
as given, in storage whose rows start every 128 bytes (the same shapes and values, a padded row stride: what a
caller's once-per-weight padding gives), and copied into such storage inside the timed call (what a per-call copy
would cost). Each against torch (torch._scaled_mm / torch.matmul on the operands as given) in the same rounds.
Exploratory: its findings go into fused_ops/ and docs.

    IRIS_BACKEND=cuda python benchmarks/gemm_stride_probe.py --fp8 --shapes 4096x8192x3696 --out DIR
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402,F401
import torch  # noqa: E402

from benchmarks.harness import paired_graph_us, stamp  # noqa: E402


def padded(t, copy=None):
    """t (row-major 2-D) with the same shape and values in storage whose rows start every 128 bytes (copied by
    fused_ops.gemm.copy_rows, or `copy`)."""
    from fused_ops.gemm import copy_rows

    per = 128 // t.element_size()
    buf = torch.empty(t.shape[0], -(-t.shape[1] // per) * per, dtype=t.dtype, device=t.device)
    (copy or copy_rows)(t, buf[:, :t.shape[1]])
    return buf[:, :t.shape[1]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", required=True, help="MxNxK ...")
    parser.add_argument("--fp8", action="store_true", help="e4m3 with per-tensor scales, precise accumulation")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--out", required=True)
    parser.add_argument("--cases", nargs="+", help="only these operand cases (default: all)")
    parser.add_argument("--kernel", default=None, choices=("wgmma", "tile_loop"),
                        help="the kernel (default: the call's own pick; tile_loop: what the fused ops run)")
    args = parser.parse_args()
    import pandas as pd

    from fused_ops import fp8, matmul

    os.makedirs(args.out, exist_ok=True)
    rows, run_stamp = [], stamp(1, "benchmarks/gemm_stride_probe.py")
    for shape in args.shapes:
        m, n, k = map(int, shape.lower().split("x"))
        g = torch.Generator(device="cuda").manual_seed(m + n + k)
        a32 = torch.randn(m, k, device="cuda", generator=g)
        w32 = torch.randn(n, k, device="cuda", generator=g)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        if args.fp8:
            sa, sw = a32.abs().amax() / 448, w32.abs().amax() / 448
            a, w = (a32 / sa).to(torch.float8_e4m3fn), (w32 / sw).to(torch.float8_e4m3fn)
            sa, sw = sa.float().reshape(()), sw.float().reshape(())
            ref = (a.double() * sa.double()) @ (w.double() * sw.double()).t()

            def ours(a_, w_):
                return fp8.scaled_mm(a_, w_.t(), sa, sw, out=c, kernel=args.kernel)

            def theirs():
                return torch._scaled_mm(a, w.t(), sa, sw, out_dtype=torch.bfloat16)
        else:
            a, w = a32.bfloat16(), w32.bfloat16().t().contiguous()  # B row-major K x N
            ref = a.double() @ w.double()

            def ours(a_, w_):
                return matmul(a_, w_, out=c, kernel=args.kernel)

            def theirs():
                return torch.matmul(a, w, out=c)
        a_pad, w_pad = padded(a), padded(w)
        cases = {"as given": lambda: ours(a, w), "rows padded": lambda: ours(a_pad, w_pad),
                 "A's rows padded": lambda: ours(a_pad, w), "B's rows padded": lambda: ours(a, w_pad),
                 "copied per call": lambda: ours(padded(a), padded(w)),
                 "B copied per call": lambda: ours(a, padded(w)),
                 "B copied per call, torch": lambda: ours(a, padded(w, lambda s, d: d.copy_(s)))}
        for name, call in cases.items():
            if args.cases and name not in args.cases:
                continue
            c.fill_(float("nan"))
            call()
            err = ((c.double() - ref).norm() / ref.norm()).item()
            t, t_torch = paired_graph_us(call, theirs, rounds=args.rounds)
            rows.append(dict(m=m, n=n, k=k, dtype="float8_e4m3fn" if args.fp8 else "bfloat16", operands=name,
                             kernel=args.kernel or "default",
                             a_row_bytes=a.stride(0) * a.element_size(), time_us=t, torch_us=t_torch,
                             vs_torch=t_torch / t, tflops=2 * m * n * k / t / 1e6, rel_error=err,
                             correct=err < 1e-2, **run_stamp))
            print(f"{shape:>16s} {name:16s} {t:9.1f} µs  torch {t_torch:9.1f}  {t_torch / t:5.2f}x  err {err:.1e}",
                  flush=True)
        pd.DataFrame(rows).to_csv(os.path.join(args.out, "gemm_stride_probe.csv"), index=False)


if __name__ == "__main__":
    main()

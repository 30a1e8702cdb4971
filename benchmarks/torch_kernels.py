"""Which kernels torch runs for a GEMM (torch.matmul in bf16, torch._scaled_mm in FP8): names (cuBLAS's carry the
tile, cluster and split-K scheme), grid, block, shared memory, registers and time per call, from torch.profiler. What
the baseline of benchmarks/gemm.py does at a shape says what a tile loop has to match there. Writes
<out>/torch_kernels.csv.

    IRIS_BACKEND=cuda python benchmarks/torch_kernels.py --shapes 129x4096x4096 128x128x65536 --out results/...
"""

import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from benchmarks.gemm import shape_list  # noqa: E402
from benchmarks.harness import stamp  # noqa: E402

CALLS = 20


def operands(m, n, k, fp8):
    """(a, b, scale) as benchmarks/gemm.py makes them: bf16 row-major (scale None); FP8: B column-major with one fp32
    scale for both, per tensor, as torch._scaled_mm takes it."""
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", generator=g)
    b = torch.randn(k, n, device="cuda", generator=g)
    if not fp8:
        return a.bfloat16(), b.bfloat16(), None
    return a.to(torch.float8_e4m3fn), b.t().contiguous().to(torch.float8_e4m3fn).t(), torch.ones((), device="cuda")


def call(m, n, k, fp8, fast_accum=False):
    """One torch call on operands(m, n, k, fp8); FP8 with fast accumulation where fast_accum."""
    a, b, one = operands(m, n, k, fp8)
    if not fp8:
        return lambda: torch.matmul(a, b)
    return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                    use_fast_accum=fast_accum)


def kernels(m, n, k, fp8, fast_accum=False):
    """[(name, grid, block, shared bytes, registers, µs per call)] of one call, from CALLS calls profiled."""
    fn = call(m, n, k, fp8, fast_accum)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            fn()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:  # the trace's kernel events carry grid, block, shared memory
        prof.export_chrome_trace(os.path.join(tmp, "trace.json"))
        with open(os.path.join(tmp, "trace.json")) as f:
            events = json.load(f)["traceEvents"]
    out = {}
    for e in events:
        if e.get("cat") != "kernel":
            continue
        args = e.get("args", {})
        row = out.setdefault(e["name"], dict(name=e["name"], calls=0, us=0.0, grid=str(args.get("grid")),
                                             block=str(args.get("block")), shared=args.get("shared memory"),
                                             regs=args.get("registers per thread")))
        row["calls"] += 1
        row["us"] += e.get("dur", 0.0)
    for row in out.values():
        row["us"] /= CALLS
    return list(out.values())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", nargs="+", required=True, help="MxNxK ..., or a named set: models (the public set's "
                                                                     "sample), models-all")
    p.add_argument("--fp8", action="store_true", help="torch._scaled_mm, per-tensor scales (else torch.matmul, bf16)")
    p.add_argument("--fast-accum", action="store_true", help="with --fp8: use_fast_accum=True")
    p.add_argument("--out", default="results")
    args = p.parse_args()
    if args.fast_accum and not args.fp8:
        p.error("--fast-accum applies to --fp8 only")
    import pandas as pd

    dtype = ("float8_e4m3fn, fast accum" if args.fast_accum else "float8_e4m3fn") if args.fp8 else "bfloat16"
    rows, st = [], stamp(1, "benchmarks/torch_kernels.py")
    for m, n, k, _ in shape_list(args):
        try:
            found = kernels(m, n, k, args.fp8, args.fast_accum)
        except RuntimeError as e:  # e.g. torch._scaled_mm wants K and N multiples of 16
            print(f"{m}x{n}x{k}: torch refused: {str(e).splitlines()[0]}", flush=True)
            rows.append(dict(m=m, n=n, k=k, dtype=dtype, name=f"refused: {str(e).splitlines()[0]}", **st))
            continue
        for r in found:
            rows.append(dict(m=m, n=n, k=k, dtype=dtype, **r, **st))
            print(f"{m}x{n}x{k}: {r['us']:.1f} us  grid {r['grid']} block {r['block']}  {r['name'][:140]}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    pd.DataFrame(rows).to_csv(os.path.join(args.out, "torch_kernels.csv"), index=False)


if __name__ == "__main__":
    main()

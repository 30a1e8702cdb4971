"""One call of torch's GEMM and one of the library's per shape, for a kernel profiler to compare (Nsight Compute's
`ncu -k regex:...` replays each kernel it matches): torch.matmul and fused_ops.matmul in bf16, or torch._scaled_mm and
fused_ops.fp8.scaled_mm with per-tensor scales (--fp8; --fast-accum: both with fast accumulation), on
torch_kernels.operands. Each is called once first to compile, then --calls times.

    ncu --clock-control none --section SpeedOfLight -k 'regex:wgmma_ws_kernel|gemm_kernel|nvjet|sm90' \
        python benchmarks/gemm_profile.py --shapes 1024x2304x3584 --calls 1
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402

from benchmarks.torch_kernels import operands  # noqa: E402
from fused_ops import fp8, matmul  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", nargs="+", required=True, help="MxNxK ...")
    p.add_argument("--fp8", action="store_true")
    p.add_argument("--fast-accum", action="store_true", help="with --fp8: use_fast_accum=True on both sides")
    p.add_argument("--calls", type=int, default=1)
    args = p.parse_args()
    if args.fast_accum and not args.fp8:
        p.error("--fast-accum applies to --fp8 only")
    fast = args.fast_accum
    for shape in args.shapes:
        m, n, k = map(int, shape.lower().split("x"))
        a, b, one = operands(m, n, k, args.fp8)
        if args.fp8:
            calls = (lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16, use_fast_accum=fast),
                     lambda: fp8.scaled_mm(a, b, one, one, use_fast_accum=fast))
        else:
            calls = (lambda: torch.matmul(a, b), lambda: matmul(a, b))
        for fn in calls:
            fn()
            torch.cuda.synchronize()
            for _ in range(args.calls):
                fn()
            torch.cuda.synchronize()
        print(f"{m}x{n}x{k}: {'torch._scaled_mm and fp8.scaled_mm' if args.fp8 else 'torch.matmul and matmul'}, "
              f"{args.calls} call(s) each after one")


if __name__ == "__main__":
    main()

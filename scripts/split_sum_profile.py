"""Kernel times of the Gluon kernel's split-K (wgmma.run(split_k=...)): the GEMM and sum_slices apart, from
torch.profiler, at C widths whose rows are and are not 16 elements apart (one GPU). Exploratory: its findings go
into fused_ops/wgmma.py and results/current/gemm/README.md.

    IRIS_BACKEND=cuda python scripts/split_sum_profile.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402,F401
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from fused_ops import wgmma  # noqa: E402

# (M, N, K, split_k): non-swapped 128x128 tiles at M >= 128, swapped 128x64 ones (A's rows as the MMAs' N) below
SHAPES = ((1000, 1000, 1000, 2), (1024, 1024, 1024, 2), (72, 1000, 8192, 16), (72, 1024, 8192, 16),
          (128, 128, 65536, 33), (100, 1536, 4096, 8))


def main():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(torch.cuda.get_device_name(), os.environ.get("IRIS_COMMIT", "?"))
    for m, n, k, split in SHAPES:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        swap = m < 128
        tile = dict(block_m=128, swap=swap, split_k=split)

        def call():
            wgmma.run(a, b, c, 64 if swap else 128, 64, 4, sms, **tile)
        for _ in range(3):
            call()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                call()
            torch.cuda.synchronize()
        ref = a.double() @ b.double()
        err = ((c.double() - ref).norm() / ref.norm()).item()
        times = {e.key.split("_kernel")[0]: e.device_time_total / e.count for e in prof.key_averages() if e.count}
        print(f"{m}x{n}x{k} split {split}: " + ", ".join(f"{key} {t:.1f} us" for key, t in times.items()
                                                          if "kernel" in key or key in ("wgmma_ws", "sum_slices"))
              + f"  err {err:.1e}", flush=True)


if __name__ == "__main__":
    main()

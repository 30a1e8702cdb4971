"""Temporary probe: swapped bf16 decode tiles at 74-80 tiles and K of 3456-3584 (0.66-0.69x) and neighbours."""
import sys

import torch

sys.path.insert(0, ".")
from benchmarks.harness import paired_graph_us  # noqa: E402
from fused_ops import wgmma  # noqa: E402

SMS = torch.cuda.get_device_properties(0).multi_processor_count
for m, n, k in ((16, 4736, 3584), (16, 5120, 3456), (16, 5120, 3584), (16, 5120, 4096), (16, 5120, 3072),
                (16, 4096, 3584), (16, 4736, 6912), (16, 5120, 2560)):
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    for bn, bk, st, split in ((64, 128, 6, 1), (64, 128, 4, 1), (64, 128, 8, 1), (64, 64, 8, 1), (64, 256, 3, 1),
                              (64, 128, 6, 2), (128, 128, 4, 2), (128, 128, 4, 3)):
        def fn():
            return wgmma.run(a, b, c, bn, bk, st, SMS, block_m=16, swap=True, split_k=split)
        fn()
        torch.matmul(a, b, out=c)
        t, tt = paired_graph_us(fn, lambda: torch.matmul(a, b, out=c), rounds=11)
        print(f"{m}x{n}x{k} swap 16x{bn}x{bk} s{st} k{split}: {t:6.2f} torch {tt:6.2f} {tt / t:5.2f}x", flush=True)

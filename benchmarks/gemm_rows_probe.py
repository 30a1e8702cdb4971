"""Why the Gluon kernel's tiles run slower at M = 129 than the same tiles at M = 256 (issue 31; one GPU,
graph-timed): the same 128-row tiles with A's and C's TMA descriptors over 129 or 256 rows, crossed, so that loads
past A's last row and stores past C's last row are timed apart. Exploratory: its findings go into fused_ops/wgmma.py
and config.py.

    IRIS_BACKEND=cuda python benchmarks/gemm_rows_probe.py --out results/current/gemm/rows_probe
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402,F401
import torch  # noqa: E402

from benchmarks.harness import graph_us, stamp  # noqa: E402
from fused_ops import wgmma  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/rows_probe")
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--k", type=int, default=4096)
    args = parser.parse_args()
    import pandas as pd

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    n, k = args.n, args.k
    a = torch.randn(256, k, device="cuda", dtype=torch.bfloat16)
    a[129:] = 0
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(256, n, device="cuda", dtype=torch.bfloat16)
    rows, keep_inside = [], wgmma.KEEP_INSIDE
    for tile in ((128, 64, 64, 8, False), (128, 64, 64, 6, True), (128, 128, 64, 6, False)):  # wgmma.run's terms
        block_m, block_n, block_k, stages, swap = tile
        name = f"{'swap ' if swap else ''}{block_m}x{block_n}x{block_k} s{stages}"
        a_side, c_side = (1 if swap else 0), 2  # swapped: A is the kernel's B operand
        # edge boxes loaded past the edge (zero-filled) with A's and C's descriptors over 129 or 256 rows, crossed
        # (M and the tile count: 256's); then moved back inside (wgmma.KEEP_INSIDE) at 129 rows
        for inside, a_rows, c_rows in ((False, 256, 256), (False, 256, 129), (False, 129, 256), (False, 129, 129),
                                       (True, 129, 129)):
            wgmma.KEEP_INSIDE = inside
            full = wgmma.kernel_args(a, b, c, block_n, block_k, stages, block_m, swap)
            cut = wgmma.kernel_args(a[:129], b, c[:129], block_n, block_k, stages, block_m, swap)
            kargs, consts, units = list((cut if inside else full)[0]), full[1], full[2]
            kargs[a_side] = (full if a_rows == 256 else cut)[0][a_side]
            kargs[c_side] = (full if c_rows == 256 else cut)[0][c_side]

            def call():
                wgmma.wgmma_ws_kernel[(min(sms, units),)](*kargs, **consts, num_warps=4)
            c.fill_(float("nan"))
            call()
            ref = a[:129].double() @ b.double()
            err = ((c[:129].double() - ref).norm() / ref.norm()).item()
            t = graph_us(call)
            t_torch = graph_us(lambda: torch.matmul(a[:129], b))
            print(f"{name:18s} {'inside' if inside else 'past  '} A over {a_rows} rows, C over {c_rows}: {t:7.1f} µs "
                  f"(torch at 129 rows {t_torch:6.1f})  err {err:.1e}", flush=True)
            rows.append(dict(tile=name, inside=inside, a_rows=a_rows, c_rows=c_rows, n=n, k=k, time_us=t,
                             torch_129_us=t_torch, rel_error=err, **stamp(1, "benchmarks/gemm_rows_probe.py")))
    wgmma.KEEP_INSIDE = keep_inside
    os.makedirs(args.out, exist_ok=True)
    pd.DataFrame(rows).to_csv(os.path.join(args.out, "rows_probe.csv"), index=False)


if __name__ == "__main__":
    main()

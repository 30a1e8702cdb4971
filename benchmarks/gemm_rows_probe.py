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
    rows = []
    for tile in ((128, 64, 64, 8, False), (128, 64, 64, 6, True), (128, 128, 64, 6, False)):  # wgmma.run's terms
        block_m, block_n, block_k, stages, swap = tile
        full = wgmma.kernel_args(a, b, c, block_n, block_k, stages, block_m, swap)
        cut = wgmma.kernel_args(a[:129], b, c[:129], block_n, block_k, stages, block_m, swap)
        for a_rows in (256, 129):
            for c_rows in (256, 129):
                a_side = 1 if swap else 0  # swapped: A is the kernel's B operand
                c_side = 2
                pick = lambda rows, i: (full if rows == 256 else cut)[0][i]  # noqa: E731
                kargs = list(full[0])
                kargs[a_side] = pick(a_rows, a_side)
                kargs[c_side] = pick(c_rows, c_side)
                tiles = full[2]

                def call():
                    wgmma.wgmma_ws_kernel[(min(sms, tiles),)](*kargs, **full[1], num_warps=4)
                c.fill_(float("nan"))
                call()
                err = ((c[:129].double() - a[:129].double() @ b.double()).norm() /
                       (a[:129].double() @ b.double()).norm()).item()
                t = graph_us(call)
                t_torch = graph_us(lambda: torch.matmul(a[:129], b))
                name = f"{'swap ' if swap else ''}{tile[0]}x{tile[1]}x{block_k} s{stages}"
                print(f"{name:22s} A over {a_rows} rows, C over {c_rows}: {t:7.1f} µs (torch at 129 rows "
                      f"{t_torch:6.1f})  err {err:.1e}", flush=True)
                rows.append(dict(tile=name, a_rows=a_rows, c_rows=c_rows, n=n, k=k, time_us=t,
                                 torch_129_us=t_torch, rel_error=err, **stamp(1, "benchmarks/gemm_rows_probe.py")))
    os.makedirs(args.out, exist_ok=True)
    pd.DataFrame(rows).to_csv(os.path.join(args.out, "rows_probe.csv"), index=False)


if __name__ == "__main__":
    main()

"""Which FP8 tile wins where: per shape, every config of an FP8 benchmark CSV (benchmarks/gemm.py --fp8 --configs ...)
as a ratio to torch._scaled_mm, the best one, and per config the geomean over the shapes it ran at with its error
against torch's. Usage: python benchmarks/gemm_fp8_pick.py RUN/gemm_fp8.csv"""

import sys

import numpy as np
import pandas as pd


def main(path):
    df = pd.read_csv(path)
    t = df[(df.scaling == "tensor") & ~df.fast_accum]
    wide = t.pivot_table(index=["m", "n", "k", "shape_class"], columns="config", values="vs_torch")
    pd.set_option("display.width", 250)
    print(wide.round(2).to_string())
    best = wide.idxmax(axis=1)
    print("\nbest per shape:")
    print(pd.DataFrame({"best": best, "ratio": wide.max(axis=1).round(3),
                        "default": wide["default"].round(3)}).to_string())
    g = lambda s: float(np.exp(np.log(s.dropna()).mean()))  # noqa: E731
    print("\nper config: shapes, geomean, geomean of default at the same shapes, worst error / torch's")
    for c in wide.columns:
        s = wide[c].dropna()
        e = t[t.config == c]
        print(f"{c:32s} {len(s):3d} {g(s):6.3f} {g(wide.loc[s.index, 'default']):6.3f} "
              f"{(e.rel_error / e.torch_rel_error).max():5.2f}")
    print(f"best of all: {g(wide.max(axis=1)):.3f}, min {wide.max(axis=1).min():.3f}")
    f = df[df.fast_accum]
    if len(f):
        print(f"fast accum default: {g(f.vs_torch):.3f}")


if __name__ == "__main__":
    main(sys.argv[1])

"""Build fused_ops/tuned.csv (the `auto` variant's table) from sweep CSVs: for every swept shape and timing mode
(graph / eager, the sweeps' `timing` column), all variants ranked fastest first, except that a non-baseline variant
only ranks above torch_nccl where it was at least MARGIN faster (run-to-run noise on the shared GPUs is a few
percent; `auto` must never lose to the baseline).

    python scripts/tune_table.py                           # rebuild from INPUTS (results/current/ only)
    python scripts/tune_table.py <sweep CSVs>              # from these instead
    python scripts/tune_table.py --keep <new sweep CSVs>   # keep the table's rows of (GPU, world size, op, dtype,
                                                           # timing) groups that the new sweeps do not cover
    python scripts/tune_table.py --holdout [<sweep CSVs>]  # how `auto` picks for shapes it has no row for: each
                                                           # swept shape left out in turn, its pick against torch_nccl

A sweep that should feed the table goes under results/current/ and into INPUTS (the run it replaces moves to
results/archive/), so that the table always rebuilds from the tree: `python scripts/tune_table.py` and then
`git diff fused_ops/tuned.csv` shows nothing.
"""

import math
import re
import sys
from pathlib import Path

import pandas as pd

MARGIN = 1.03
OUT = "fused_ops/tuned.csv"
ROOT = Path(__file__).resolve().parent.parent
_OPS = ("all_gather_gemm", "gemm_all_reduce", "gemm_all_scatter", "gemm_reduce_scatter")
# The sweeps fused_ops/tuned.csv is built from, relative to the repository root (results/README.md lists them).
INPUTS = (
    [f"results/current/catalog/{t}{op}.csv" for t in ("", "graph/") for op in _OPS]
    + [f"results/current/catalog/w4/graph/{op}.csv" for op in _OPS]
    + [f"results/current/catalog/w8/{op}.csv" for op in _OPS]
    + [f"results/current/catalog/{run}_{gpu}/{op}.csv" for gpu in ("h100_w2", "h200_w2", "h200_w4")
       for run in ("models", "fp8") for op in _OPS]
)


def rank(group):
    times = group.groupby("variant")["time_us"].min().sort_values()
    order = list(times.index)
    if "torch_nccl" in times:
        base = times["torch_nccl"]
        ahead = [v for v in order if times[v] * MARGIN <= base]
        order = ahead + ["torch_nccl"] + [v for v in order if v not in ahead and v != "torch_nccl"]
    return " ".join(order)


def build(paths, keep=False):
    """The table from these sweep CSVs (with keep: plus the rows of OUT whose groups they do not cover)."""
    df = _sweeps(paths)
    keys = ["gpu", "world_size", "op", "dtype", "timing", "m", "n", "k"]
    table = df.groupby(keys).apply(rank, include_groups=False).rename("ranking").reset_index()
    table["source"] = df.groupby(keys)["commit"].first().values
    if keep:
        old = pd.read_csv(OUT, dtype={"source": str})
        group = ["gpu", "world_size", "op", "dtype", "timing"]
        covered = set(map(tuple, table[group].drop_duplicates().values.tolist()))
        old = old[[tuple(r) not in covered for r in old[group].values.tolist()]]
        table = pd.concat([table, old]).sort_values(keys, kind="stable")
    return table


def _sweeps(paths):
    df = pd.concat([pd.read_csv(p, dtype={"commit": str}) for p in paths])
    if "timing" not in df:
        df["timing"] = None
    df["timing"] = df["timing"].fillna("eager")  # sweeps from before the timing column were eager
    df = df[df["correct"].astype(bool) & df["time_us"].notna() & (df["variant"] != "auto")]
    df["gpu"] = df["device"].map(lambda d: re.sub(r"^\d+x ", "", d))
    return df


def holdout(paths):
    """Every swept shape left out of its group's rows in turn, and `auto`'s pick for it from the rest (the nearest
    shape's ranking alone, then fused_ops.auto.nearest's two-shape blend), timed against torch_nccl in that sweep."""
    sys.path.insert(0, str(ROOT))
    from fused_ops import auto

    ratios = {"nearest shape": [], "auto (two nearest)": []}
    for _, group in _sweeps(paths).groupby(["gpu", "world_size", "op", "dtype", "timing"]):
        shapes = {s: g for s, g in group.groupby(["m", "n", "k"]) if "torch_nccl" in set(g["variant"])}
        if len(shapes) < 3:
            continue
        rows = [(s, rank(g).split()) for s, g in shapes.items()]
        for s, g in shapes.items():
            times = g.groupby("variant")["time_us"].min()
            rest = [r for r in rows if r[0] != s]
            single = auto.by_distance(rest, s)[0][1]
            for name, ranked in (("nearest shape", single), ("auto (two nearest)", auto.nearest(rest, s))):
                pick = next(v for v in ranked if v in times)
                ratios[name].append(times["torch_nccl"] / times[pick])
    for name, r in ratios.items():
        geo = math.exp(sum(map(math.log, r)) / len(r))
        print(f"{name:20s} {len(r)} shapes: geo-mean {geo:.3f}x torch_nccl, worst {min(r):.3f}x, "
              f"below 0.95x: {sum(x < 0.95 for x in r)}, below 0.90x: {sum(x < 0.90 for x in r)}")


def main(paths):
    if "--holdout" in paths:
        return holdout([p for p in paths if p != "--holdout"] or [str(ROOT / p) for p in INPUTS])
    keep = "--keep" in paths
    paths = [p for p in paths if p != "--keep"] or [str(ROOT / p) for p in INPUTS]
    table = build(paths, keep)
    table.to_csv(OUT, index=False)
    print(f"{OUT}: {len(table)} shapes")
    print(table.assign(first=table["ranking"].str.split().str[0]).groupby(["timing", "op", "first"]).size()
          .to_string())

if __name__ == "__main__":
    main(sys.argv[1:])

"""Build fused_ops/tuned.csv (the `auto` variant's table) from sweep CSVs: for every swept shape and timing mode
(graph / eager, the sweeps' `timing` column), all variants ranked fastest first, except that a non-baseline variant
only ranks above torch_nccl where it was at least MARGIN faster (run-to-run noise on the shared GPUs is a few
percent; `auto` must never lose to the baseline).

    python scripts/tune_table.py results/graph/*.csv results/*.csv
    python scripts/tune_table.py --keep <new sweep CSVs>   # keep the table's rows of (GPU, world size, op, dtype,
                                                           # timing) groups that the new sweeps do not cover
"""

import re
import sys

import pandas as pd

MARGIN = 1.03
OUT = "fused_ops/tuned.csv"


def rank(group):
    times = group.groupby("variant")["time_us"].min().sort_values()
    order = list(times.index)
    if "torch_nccl" in times:
        base = times["torch_nccl"]
        ahead = [v for v in order if times[v] * MARGIN <= base]
        order = ahead + ["torch_nccl"] + [v for v in order if v not in ahead and v != "torch_nccl"]
    return " ".join(order)


def main(paths):
    keep = "--keep" in paths
    paths = [p for p in paths if p != "--keep"]
    df = pd.concat([pd.read_csv(p, dtype={"commit": str}) for p in paths])
    if "timing" not in df:
        df["timing"] = None
    df["timing"] = df["timing"].fillna("eager")  # sweeps from before the timing column were eager
    df = df[df["correct"].astype(bool) & df["time_us"].notna() & (df["variant"] != "auto")]
    df["gpu"] = df["device"].map(lambda d: re.sub(r"^\d+x ", "", d))
    keys = ["gpu", "world_size", "op", "dtype", "timing", "m", "n", "k"]
    table = df.groupby(keys).apply(rank, include_groups=False).rename("ranking").reset_index()
    table["source"] = df.groupby(keys)["commit"].first().values
    if keep:
        old = pd.read_csv(OUT, dtype={"source": str})
        group = ["gpu", "world_size", "op", "dtype", "timing"]
        covered = set(map(tuple, table[group].drop_duplicates().values.tolist()))
        old = old[[tuple(r) not in covered for r in old[group].values.tolist()]]
        table = pd.concat([table, old]).sort_values(keys, kind="stable")
    table.to_csv(OUT, index=False)
    print(f"{OUT}: {len(table)} shapes")
    print(table.assign(first=table["ranking"].str.split().str[0]).groupby(["timing", "op", "first"]).size()
          .to_string())


if __name__ == "__main__":
    main(sys.argv[1:])

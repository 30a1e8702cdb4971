"""Before/after table and plot per shape class of benchmarks/gemm.py CSVs (rows of one config each side, `default`
unless named; FP8 CSVs per scaling and accumulation, with the tile loop alone beside them), against issue 31's
targets. CPU only: reads the CSVs. Several CSVs on a side: runs of the same command (the lower median per shape), or
parts of one set (each shape from the part that has it; the tables name every commit).

    G=results/current/gemm; python benchmarks/gemm_classes.py --before $G/final_5acd177/h200/gemm_models_run*.csv \
        --after $G/final_5acd177/h200/gemm_models_run*.csv --after-config matmul \
        --fp8 $G/final_c2cb8b5/h200/gemm_fp8_run*.csv --png $G/gemm_classes.png
    A=$G/all_721; python benchmarks/gemm_classes.py --before $A/bf16_all_h200_c926c3d.csv.gz --before-config matmul \
        --after $A/bf16_all_h200_6f25ac6.csv.gz --after-config matmul --png $A/classes_h200.png \
        --spread $A/spread_h200.png --fp8-before $G/fp8_all/fp8_all_h200_c926c3d.csv.gz \
        --fp8 $G/fp8_all/fp8_all_h200_41638b1.csv.gz
"""

import argparse
import os
import sys

import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import shapes as S  # noqa: E402
from benchmarks.gemm import class_table  # noqa: E402


def lower_median(v):
    """The median of a shape's runs; of an even number, the lower of the middle two (of two runs, the slower)."""
    return v.sort_values().iloc[(len(v) - 1) // 2]


def read_runs(paths):
    """The rows of these CSVs, one frame."""
    return pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)


def defaults(path, padded=False, config="default"):
    """The rows of `config`; padded: where the CSV has a `default, padded B` row for a shape (B rows not 128-byte
    aligned, B through fused_ops.pad_weight), that row instead. Several CSVs (runs of the same command): per shape and
    config, the row of the lower_median vs_torch."""
    if not isinstance(path, str):
        runs = read_runs(path)
        pick = runs.groupby(["m", "n", "k", "config"]).vs_torch.transform(lower_median)
        path = runs[runs.vs_torch == pick].drop_duplicates(["m", "n", "k", "config"])
    df = pd.read_csv(path) if isinstance(path, str) else path
    if padded:
        pad = df[df.config == "default, padded B"].set_index(["m", "n", "k"])
        df = df[df.config == "default"].set_index(["m", "n", "k"])
        df.loc[pad.index] = pad
        df = df.reset_index()
    df = df[df.config.str.startswith("default")].copy() if padded else df[df.config == config].copy()
    df["shape_class"] = [S.shape_class(m, n, k) for m, n, k in zip(df.m, df.n, df.k)]  # older CSVs have no class
    return df


def fp8_tables(f, keep=None):
    """{mode: class table} of FP8 rows (read_runs; several runs: the lower median per shape), the defaults only;
    keep: only these (m, n, k)."""
    f = f if keep is None else f[shape_keys(f).isin(keep)]
    f = f.groupby(["m", "n", "k", "scaling", "config", "shape_class", "dtype"],  # dtype: FP8's floor, 0.85
                  as_index=False).vs_torch.agg(lower_median)
    f = f[f.config.isin(["default", "default, fast accum", "default, tile loop"])]  # not the candidate tiles
    tables = {}
    for (scaling, config), g in f.groupby(["scaling", "config"]):
        if config == "default, tile loop" and scaling != "tensor":
            continue
        name = f"fp8 scaled_mm, {'per-tensor' if scaling == 'tensor' else 'row-wise'}, " \
            f"{'fast' if 'fast' in config else 'precise'}"
        tables[name + (", tile loop alone" if "tile loop" in config else "")] = class_table(g.copy())
    return tables


def shape_keys(df):
    return pd.Series(list(zip(df.m, df.n, df.k)), index=df.index)


def common(a, b):
    """The (m, n, k) of the rows of both frames."""
    return set(shape_keys(a)) & set(shape_keys(b))


def commits(paths):
    """The commits of these CSVs' rows, joined ("c7cbccc+91d3d11" where parts of one set ran at two commits)."""
    return "+".join(dict.fromkeys(c for p in paths for c in pd.read_csv(p).commit.astype(str)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, nargs="+", help="one CSV, or several runs (the median per shape)")
    ap.add_argument("--after", required=True, nargs="+", help="one CSV, or several runs (the median per shape)")
    ap.add_argument("--before-config", default="default", help="the config of the `before` rows")
    ap.add_argument("--after-config", default="default", help="the config of the `after` rows (e.g. matmul)")
    ap.add_argument("--fp8", default=None, nargs="+", help="FP8 CSVs: one, or several runs")
    ap.add_argument("--fp8-before", default=None, nargs="+", help="FP8 CSVs of the defaults before, beside --fp8's")
    ap.add_argument("--common", action="store_true", help="only the GEMMs both sides ran (a sample run before "
                                                         "against a whole set after)")
    ap.add_argument("--png", default=None)
    ap.add_argument("--spread", default=None, help="a second plot: every shape's ratio before and after, sorted, "
                                                   "decode rows (floor 0.85) apart from the rest (floor 0.90)")
    args = ap.parse_args()
    one = lambda paths: paths[0] if len(paths) == 1 else paths  # noqa: E731
    before_rows = defaults(one(args.before), config=args.before_config)
    after_rows = defaults(one(args.after), config=args.after_config)
    if args.common:
        keep = common(before_rows, after_rows)
        before_rows, after_rows = (d[shape_keys(d).isin(keep)] for d in (before_rows, after_rows))
    before, after = class_table(before_rows), class_table(after_rows)
    table = before.set_index("shape_class")[["shapes", "geomean", "min"]].merge(
        after.set_index("shape_class")[["geomean", "min", "below_floor", "worst"]], left_index=True, right_index=True,
        suffixes=("_before", "_after"))
    padded = None
    if (pd.read_csv(args.after[0]).config == "default, padded B").any():
        padded = class_table(defaults(args.after, padded=True)).set_index("shape_class")
        table = table.join(padded[["geomean", "min", "below_floor"]].add_suffix("_padded_b"))
    a = pd.read_csv(args.after[0]).iloc[0]
    runs = f" (median of {len(args.after)} runs)" if len(args.after) > 1 else ""
    print(f"bf16 vs torch.matmul, {a.device}, {a.date}, commit {commits(args.after)}: `{a.command}`{runs}; before: "
          f"{args.before_config} at {commits(args.before)}, after: {args.after_config}"
          f"{'; only the GEMMs both ran' if args.common else ''}")
    print(table.to_string())
    fp8_rows, fp8_before_rows = (read_runs(paths) if paths else None for paths in (args.fp8, args.fp8_before))
    keep = common(fp8_rows, fp8_before_rows) if args.common and args.fp8 and args.fp8_before else None
    fp8 = fp8_tables(fp8_rows, keep) if args.fp8 else {}
    fp8_before = fp8_tables(fp8_before_rows, keep) if args.fp8_before else {}
    fp8_commits = commits(args.fp8) if args.fp8 else ""
    for name, t in fp8.items():
        f = pd.read_csv(args.fp8[0]).iloc[0]
        print(f"{name} vs torch._scaled_mm, {f.device}, {f.date}, commit {fp8_commits}:")
        cols = ["shapes", "geomean", "min", "below_floor"]
        if name in fp8_before:
            t = fp8_before[name].set_index("shape_class")[cols].merge(
                t.set_index("shape_class")[cols[1:] + ["worst"]], left_index=True, right_index=True,
                suffixes=(f"_{commits(args.fp8_before)}", f"_{fp8_commits}"))
            print(t.to_string())
        else:
            print(t[["shape_class"] + cols].to_string(index=False))
    if args.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        classes = list(table.index)
        label = {"default": "tile loop (what the fused ops run)", "matmul": "fused_ops.matmul"}.get
        series = {f"bf16 {label(args.before_config, args.before_config)}, {commits(args.before)}": table.geomean_before,
                  f"bf16 {label(args.after_config, args.after_config)}, {commits(args.after)}": table.geomean_after}
        if padded is not None:
            series["bf16 after, B via pad_weight"] = table.geomean_padded_b
        series.update({f"{name}, {fp8_commits}": t.set_index("shape_class").geomean.reindex(classes)
                       for name, t in fp8.items()})
        fig, ax = plt.subplots(figsize=(12, 5.2))
        width = 0.8 / len(series)
        for i, (name, values) in enumerate(series.items()):
            ax.bar([x + i * width for x in range(len(classes))], values.clip(upper=1.6), width, label=name)
        ax.axhline(0.95, color="k", lw=0.8, ls="--", label="target 0.95x (geomean)")
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(classes))], classes, rotation=20)
        ax.set_ylabel("geomean speed vs torch (same run)")
        ax.set_title(f"the GEMM alone per shape class vs torch, {a.device}, {a.date} (bars clipped at 1.6)")
        ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.16))
        fig.tight_layout()
        fig.savefig(args.png, dpi=120)
        print(f"wrote {args.png}")
    if args.spread:
        spread(before_rows, after_rows, a, args.spread)


def spread(before, after, a, png):
    """Every shape's ratio to torch before and after, sorted within M < 128 and M >= 128, with their floors: how many
    shapes sit below them, at a glance."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), sharey=True)
    for ax, (title, few, floor) in zip(axes, (("M < 128 (decode rows)", True, 0.85), ("M >= 128", False, 0.90))):
        for df, name, color in ((before, "before", "tab:gray"), (after, "after", "tab:blue")):
            v = df[(df.m < 128) == few].vs_torch.sort_values().reset_index(drop=True)
            below = int((v < floor).sum())
            ax.plot(v.index / max(1, len(v) - 1) * 100, v.clip(upper=1.6), color=color, lw=1.8,
                    label=f"{name}: {below} of {len(v)} below {floor}")
        ax.axhline(floor, color="k", lw=0.8, ls="--")
        ax.axhline(1.0, color="k", lw=0.5, ls=":")
        ax.set_title(title)
        ax.set_xlabel("shapes, sorted by ratio (%)")
        ax.legend(fontsize=8, loc="lower right")
    axes[0].set_ylabel("speed vs torch.matmul (same run; clipped at 1.6)")
    fig.suptitle(f"every GEMM of the set, before and after, {a.device}, {a.date}")
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")


if __name__ == "__main__":
    main()

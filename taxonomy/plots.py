"""Plots from the sweep CSVs: speedup of every variant over torch_nccl per shape (with the overlap limit marked),
and each shape's time against its GEMM-alone / collective-alone breakdown. One pair of PNGs per (op, dtype, world
size, timing), from the newest run of every row: FP8 rows (dtype float8_e4m3fn, float8_e4m3fn/row) get their own, named
fp8 and fp8-row."""

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

KEY = ["op", "variant", "m", "n", "k", "dtype", "world_size", "timing"]
SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float8_e4m3fn": "fp8",
         "float8_e4m3fn/row": "fp8-row"}


def _short(dtype):
    """The dtype's name in titles and file names (no "/": it would be a directory)."""
    return SHORT.get(dtype, str(dtype).replace("/", "-"))


def _gemm_alone(dtype):
    return "torch._scaled_mm alone" if str(dtype).startswith("float8") else "torch.matmul alone"


def latest(df):
    return df.drop_duplicates(subset=KEY, keep="last")


def _shape_labels(df):
    shapes = df[["m", "n", "k"]].drop_duplicates().sort_values(["n", "k", "m"])
    return [tuple(s) for s in shapes.itertuples(index=False)], [f"{m}×{n}×{k}" for m, n, k in shapes.itertuples(
        index=False)]


def _colors(variants):
    cmap = plt.get_cmap("tab10")
    return {v: cmap(i % 10) for i, v in enumerate(variants)}


def speedup_plot(df, path):
    shapes, labels = _shape_labels(df)
    variants = [v for v in df.variant.unique() if v != "torch_nccl"]
    colors = _colors(variants)
    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(shapes) * max(1, len(variants)) / 3), 5))
    width = 0.8 / max(1, len(variants))
    for i, v in enumerate(variants):
        ys = []
        for s in shapes:
            row = df[(df.variant == v) & (df.m == s[0]) & (df.n == s[1]) & (df.k == s[2])]
            ys.append(row.speedup.iloc[0] if len(row) else float("nan"))
        xs = [j + (i - (len(variants) - 1) / 2) * width for j in range(len(shapes))]
        ax.bar(xs, ys, width, label=v, color=colors[v])
    limit = []
    for s in shapes:
        row = df[(df.variant == "torch_nccl") & (df.m == s[0]) & (df.n == s[1]) & (df.k == s[2])]
        limit.append(row.time_us.iloc[0] / row.overlap_limit_us.iloc[0] if len(row) else float("nan"))
    ax.plot(range(len(shapes)), limit, "k_", markersize=22, mew=2, label="overlap limit max(GEMM, comm)")
    ax.axhline(1.0, color="grey", lw=1, ls="--")
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel(f"speedup over {_gemm_alone(df['dtype'].iloc[0]).split()[0]} + NCCL (same run)")
    r = df.iloc[0]
    dt = _short(r["dtype"])
    ax.set_title(f"{r.op}: {dt}, {r.world_size} ranks, {r.timing} timing — {r.device}, {r.date} ({r.commit})",
                 fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def breakdown_plot(df, path):
    """Per shape, times normalized to the no-overlap sum: GEMM alone + collective alone as a stacked bar, then each
    variant's measured time."""
    shapes, labels = _shape_labels(df)
    variants = list(df.variant.unique())
    colors = _colors(variants)
    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(shapes) * (len(variants) + 1) / 3), 5))
    width = 0.8 / (len(variants) + 1)
    for j, s in enumerate(shapes):
        rows = df[(df.m == s[0]) & (df.n == s[1]) & (df.k == s[2])]
        base = rows.no_overlap_us.iloc[0]
        x0 = j - 0.4 + width / 2
        g, c = rows.gemm_only_us.iloc[0] / base, rows.comm_only_us.iloc[0] / base
        ax.bar(x0, g, width, color="#4c72b0", label=_gemm_alone(rows["dtype"].iloc[0]) if j == 0 else None)
        ax.bar(x0, c, width, bottom=g, color="#dd8452", label="collective alone" if j == 0 else None)
        for i, v in enumerate(variants):
            row = rows[rows.variant == v]
            if len(row):
                ax.bar(x0 + (i + 1) * width, row.time_us.iloc[0] / base, width, color=colors[v],
                       label=v if j == 0 else None, alpha=0.85)
    ax.axhline(1.0, color="grey", lw=1, ls="--")
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("time / (GEMM alone + collective alone)")
    r = df.iloc[0]
    dt = _short(r["dtype"])
    ax.set_title(f"{r.op}: where the time goes ({dt}, {r.world_size} ranks, {r.timing} timing, {r.device})",
                 fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def plot_all(out, ops):
    from .cli import read_csv

    written = []
    for op in ops:
        path = os.path.join(out, f"{op}.csv")
        if not os.path.exists(path):
            continue
        df = read_csv(path)
        df["timing"] = df["timing"].fillna("eager") if "timing" in df else "eager"  # CSVs from before the column
        df = latest(df)
        df = df[df.time_us.notna()]
        for (dtype, world, timing), part in df.groupby(["dtype", "world_size", "timing"]):
            suffix = "" if timing == "eager" else f"_{timing}"
            stem = os.path.join(out, f"{op}_{_short(dtype)}_w{world}{suffix}")
            speedup_plot(part, stem + "_speedup.png")
            breakdown_plot(part, stem + "_breakdown.png")
            written += [stem + "_speedup.png", stem + "_breakdown.png"]
    return written

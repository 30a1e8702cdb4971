"""What fused_ops.matmul and fp8.scaled_mm pick at every GEMM of a shape set, computed on the host (no GPU): the
kernel, tile, stages, slices of K and widening of each, for an H100/H200's SM count, with its units of work (tiles
times slices) and the waves they make over its programs, and the benchmarks/gemm.py candidate that runs it by name;
bf16 both on row-major B and on K-major B, nn.Linear's layout (`gemm.py --weights k-major` times those). Two such
CSVs, before and after a change to fused_ops/config.py, name the GEMMs whose pick it moves, the ones to time against
their old pick (that candidate) in one run.

    python benchmarks/gemm_picks.py --shapes models-all --out picks.csv [--sms 132]
    python benchmarks/gemm_picks.py --diff before.csv after.csv

The copies of operands whose rows are off 32 bytes that the Gluon kernel reads (local_gemm.sector_copies) are listed
("copies": A, B or both) and count as a move; copies of rows TMA cannot describe at all (local_gemm.aligned_operands)
are not modelled: shapes are taken as TMA-describable.
"""

import argparse
import os
import sys

import pandas as pd
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import shapes as shape_sets  # noqa: E402
from fused_ops import config as C  # noqa: E402
from fused_ops import fp8, local_gemm  # noqa: E402

FP8 = torch.float8_e4m3fn
# mode: (dtype, fast accumulation, B K-major); "bf16 k-major" is nn.Linear's layout (weight.t(), as F.linear passes it)
MODES = {"bf16": (torch.bfloat16, False, False), "bf16 k-major": (torch.bfloat16, False, True),
         "fp8": (FP8, False, True), "fp8 fast": (FP8, True, True)}


class HostDevice:
    """What config.default_config reads off a device, for a plain one-GPU call on a GPU of `sms` SMs."""

    def __init__(self, sms):
        self.backend, self.ranks_per_device, self.sms = "cuda", 1, sms

    def get_cu_count(self):
        return self.sms


def pick(m, n, k, mode, sms=132, b_k_major=False):
    """(kernel, Config) the call would run (local_gemm.pick_kernel's choice for row-major bf16 B, or K-major where
    b_k_major or the mode says so, as nn.Linear's weight.t(); FP8's B is K-major)."""
    dtype, fast, k_major = MODES[mode]
    b_k_major = b_k_major or k_major
    dev = HostDevice(sms)
    cfg = fp8.defaults(dev, m, n, k, fast) if dtype == FP8 else local_gemm.defaults(dev, m, n, k, dtype)
    cfg = C.resolve(cfg, None, m, n, k)  # as local_gemm.tile_loop_plan, with no caller's config
    row_bytes = (k if b_k_major else n) * dtype.itemsize  # B's rows
    gluon = local_gemm.gluon_pick(cfg, m, n, k, dtype, fast, sms, row_bytes % 128 == 0, b_k_major=b_k_major)
    return ("wgmma", gluon) if gluon is not None else ("tile_loop", cfg)


def copies(m, n, k, mode, kernel):
    """The operands the call copies into aligned rows for the Gluon kernel (local_gemm.sector_copies): "A", "B",
    "A+B" or ""; contiguous operands assumed (rows of K elements, B's of N where row-major)."""
    dtype, fast, k_major = MODES[mode]
    if kernel != "wgmma" or (k * dtype.itemsize) % 16 or (not k_major and (n * dtype.itemsize) % 16):
        return ""  # (rows TMA cannot describe: aligned_operands' copies, not modelled)
    a = torch.empty(m, k, dtype=dtype, device="meta")
    b = torch.empty(n, k, dtype=dtype, device="meta").t() if k_major else torch.empty(k, n, dtype=dtype, device="meta")
    return "+".join(name for name, copied in zip("AB", local_gemm.sector_copies(m, n, k, a, b, fast)) if copied)


def in_pairs(kernel, cfg, mode):
    """Whether the pick promotes FP8 precise sums two blocks at a time (config.precise_promotion)."""
    return mode == "fp8" and kernel == "wgmma" and C.precise_promotion(cfg) == "pairs"


def describe(kernel, cfg, mode="bf16"):
    swap = " swap" if cfg.swap_ab else ""
    rem = cfg.rem_rows or cfg.rem_cols or 0
    pairs = in_pairs(kernel, cfg, mode)
    return (f"{kernel}{swap} {cfg.block_m}x{cfg.block_n}{f'+{rem}' if rem else ''}x{cfg.block_k} s{cfg.num_stages}"
            f" w{cfg.num_warps} k{cfg.split_k}{' tail' if cfg.split_tail else ''} p{cfg.gemm_sms}"
            f"{' turns' if cfg.turns else ''}{' pairs' if pairs else ''}")


def candidate(kernel, cfg, mode):
    """The benchmarks/gemm.py candidate that runs this Gluon pick by name (to time a moved GEMM against its pick
    before), or "" (the tile loop's picks, and Gluon ones no candidate names)."""
    from benchmarks.gemm import FP8_CANDIDATES, WGMMA_CANDIDATES
    if kernel != "wgmma":
        return ""
    rem = cfg.rem_rows or cfg.rem_cols or 0
    base = (f"wgmma{' fp8' if MODES[mode][0] == FP8 else ''}{' swap' if cfg.swap_ab else ''} "
            f"{cfg.block_m}x{cfg.block_n}x{cfg.block_k} s{cfg.num_stages}{f' rem{rem}' if rem else ''}")
    split = f" k{cfg.split_k}" if cfg.split_k > 1 else ""
    fast = " fast accum" if mode == "fp8 fast" else ""
    turns = " turns" if cfg.turns else ""
    pairs = " pairs" if in_pairs(kernel, cfg, mode) else ""
    names = ((base + pairs + split,) if pairs else ()) + (base + split + turns + fast, base + turns + fast + split,
                                                         base + fast + split)  # (fast accum: never the precise one)
    return next((n for n in names if n in WGMMA_CANDIDATES or n in FP8_CANDIDATES), "")


def waves(m, n, cfg):
    """(units of work, waves over the programs): tiles (block_m + rem_rows rows of A by block_n + rem_cols columns of
    B, swapped or not) times slices of K, over cfg.gemm_sms persistent programs."""
    units = C.tile_count(m, n, (cfg.block_m + (cfg.rem_rows or 0), cfg.block_n + (cfg.rem_cols or 0)))
    units *= cfg.split_k or 1
    return units, round(units / cfg.gemm_sms, 2)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default=["models-all"], help="a named set (models-all, models) or MxNxK ...", nargs="+")
    p.add_argument("--sms", type=int, default=132)
    p.add_argument("--out", help="CSV of the picks (else printed)")
    p.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"), help="the GEMMs whose pick moved between two CSVs")
    args = p.parse_args()
    if args.diff:
        before, after = (pd.read_csv(f, keep_default_na=False).set_index(["mode", "m", "n", "k"]) for f in args.diff)
        both = before.merge(after, left_index=True, right_index=True, suffixes=("_before", "_after"))
        changed = both.pick_before != both.pick_after
        if "copies_before" in both and "copies_after" in both:
            changed |= both.copies_before != both.copies_after
        moved = both[changed]
        moved = moved[[c for c in ("pick_before", "copies_before", "waves_before", "candidate_before", "pick_after",
                                   "copies_after", "waves_after") if c in moved]]
        print(moved.to_string() if len(moved) else "no pick moved")
        print(f"{len(moved)} of {len(both)} picks moved")
        return
    if args.shapes in (["models-all"], ["models"]):
        found = shape_sets.model_shapes()
        found = found if args.shapes == ["models-all"] else shape_sets.sample(found)
        found = [(m, n, k) for m, n, k, _ in found]
    else:
        found = [tuple(int(x) for x in s.split("x")) for s in args.shapes]
    rows = []
    for mode in MODES:
        for m, n, k in found:
            if MODES[mode][0] == FP8 and (n % 16 or k % 16):
                continue  # torch._scaled_mm's rule: the FP8 set
            kernel, cfg = pick(m, n, k, mode, args.sms)
            units, wave_count = waves(m, n, cfg)
            rows.append(dict(mode=mode, m=m, n=n, k=k, pick=describe(kernel, cfg, mode),
                             copies=copies(m, n, k, mode, kernel), units=units, waves=wave_count,
                             candidate=candidate(kernel, cfg, mode)))
    df = pd.DataFrame(rows)
    if args.out:
        df.to_csv(args.out, index=False)
        print(f"wrote {args.out} ({len(df)} picks)")
    else:
        print(df.to_string(index=False))


if __name__ == "__main__":
    main()

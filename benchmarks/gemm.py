"""The catalog's GEMM alone (fused_ops/gemm.py's persistent tile loop, as the fused ops run it) against torch.matmul,
on one GPU, graph-timed (10 calls captured; each configuration's graph replayed in turns with torch.matmul's, so
their ratio does not drift with the clocks), bf16. Each shape runs the per-device default configuration and
a few alternatives, so the defaults can follow the measurement. Every result is checked against torch.matmul first.
Writes <out>/gemm.csv.

    python benchmarks/gemm.py --out results
    python benchmarks/gemm.py --shapes models --configs default --out results/current/gemm   # the public set's sample
    python benchmarks/gemm.py --shapes models --fp8 --out results/current/gemm  # FP8 vs torch._scaled_mm
"""

import argparse
import dataclasses
import fnmatch
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402

from benchmarks import shapes as shape_set  # noqa: E402
from benchmarks.harness import paired_graph_us, stamp  # noqa: E402
from fused_ops import config as _config  # noqa: E402
from fused_ops import local_gemm, wgmma  # noqa: E402
from fused_ops import problem as _problem  # noqa: E402
from fused_ops.config import Config  # noqa: E402
from fused_ops.gemm import gemm_kernel, pad_weight, store_vec  # noqa: E402
from fused_ops.problem import Problem  # noqa: E402
from fused_ops.registry import OPS  # noqa: E402


def tile(block_m, block_n, block_k, num_stages, num_warps, **more):
    """A candidate Config: the tile, pipeline stages, warps (group_m 8; gemm_sms, comm_sms and the rest: the device's
    defaults, unless given)."""
    return Config(block_m=block_m, block_n=block_n, block_k=block_k, group_m=8, num_stages=num_stages,
                  num_warps=num_warps, **more)


def gluon_candidate(name, cfg, a, c, sms):
    """A Gluon-kernel candidate as run: every SM's program, group_m 8; "kfill": split_k = the SMs over the tiles
    (wgmma.slices keeps those with a block of K); "remR": tiles R wider (wgmma.run(rem=R)): block_m + R rows of A
    (swapped), else block_n + R columns of B; "kS": S slices of K (fewer where K has fewer blocks); "turns": two
    consumers on each 64-row tile (wgmma.run(turns=True)); its stages cut to what fits beside the staging tiles."""
    swap = "swap" in name
    cfg = dataclasses.replace(cfg, gemm_sms=sms, group_m=8, split_k=1, swap_ab=swap, rem_rows=rem(name) if swap else 0,
                              rem_cols=0 if swap else rem(name), turns=" turns" in name)
    if name.endswith("kfill") or named_slices(name):
        tiles = -(-c.shape[0] // (cfg.block_m + cfg.rem_rows)) * -(-c.shape[1] // (cfg.block_n + cfg.rem_cols))
        want = named_slices(name) or max(1, sms // tiles)  # C's tiles: "kfill" fills the SMs once
        cfg = dataclasses.replace(cfg, split_k=wgmma.slices(a.shape[1], cfg.block_k, want))
    return local_gemm._fit(cfg, a, c)


def gluon_kwargs(name, cfg, fp8=False):
    """wgmma.run's keywords for the Gluon candidate `name` as gluon_candidate set it up (cfg): its rows, swap, slices,
    rem and turns; FP8: each block's sum promoted, "... pairs" two blocks at a time, "... fast accum" none."""
    promote = False if not fp8 or "fast accum" in name else "pairs" if " pairs" in name else True
    return dict(block_m=cfg.block_m, swap="swap" in name, split_k=cfg.split_k, rem=local_gemm.rem(cfg),
                turns=bool(cfg.turns), promote=promote)


def wave_fill(units, programs):
    """How full the waves of a persistent grid of `programs` are, running `units` units of work (1: all full)."""
    return units / (-(-units // programs) * programs)


def named_slices(name):
    """S of a Gluon candidate named "... kS" (slices of K), else None."""
    found = re.search(r" k(\d+)$", name)
    return int(found.group(1)) if found else None


def rem(name):
    """R of a candidate named "... remR" (wgmma.run(rem=R)), else 0."""
    found = re.search(r" rem(\d+)\b", name)
    return int(found.group(1)) if found else 0


def per_sm(name, cfg, sms):
    """A candidate named "... xN" runs N programs per SM: gemm_sms = N x this device's SMs."""
    more = re.search(r" x(\d+)\b", name)
    return dataclasses.replace(cfg, gemm_sms=int(more.group(1)) * sms) if more and cfg is not None else cfg


ROWS64 = (_config.WGMMA_ROW64_TILES, _config.WGMMA_FP8_FAST_ROW64_TILES, _config.WGMMA_FP8_PRECISE_ROW64_TILES,
          _config.WGMMA_ROW64_KMAJOR_TILES)
ROWS64_NARROW = tuple(tuple(t for t in tiles if t[1] <= 144) for tiles in ROWS64)  # as at git 8371e95
ROWS64_SHALLOW = (((64, 64, 64, 12, 4608, 0.8, 128),) + ROWS64[0][1:],) + ROWS64[1:]  # as at git 69dc0bc
ROWS64_LISTS = {", no 64-row tiles": ((), (), (), ()), ", narrow 64-row tiles": ROWS64_NARROW,
                ", 64-deep 64-row tiles": ROWS64_SHALLOW, ", no K-major 288-wide tiles": ROWS64[:3] + ((),)}
ROWS64_TOGGLES = tuple("matmul" + toggle for toggle in ROWS64_LISTS)  # matmul, with rows64() applied


def rows64(name):
    """The defaults' 64-row Gluon tiles (config.WGMMA_ROW64_TILES) off for a candidate named "..., no 64-row tiles",
    as at 8371e95 for one named "..., narrow 64-row tiles", bf16's 64x64 ones 64 deep (as at 69dc0bc) for "..., 64-deep
    64-row tiles", bf16's K-major 64x288 ones off for "..., no K-major 288-wide tiles" (the picks before them, timed
    beside the current ones), as they are for every other."""
    lists = [v for toggle, v in ROWS64_LISTS.items() if name.endswith(toggle)]
    (_config.WGMMA_ROW64_TILES, _config.WGMMA_FP8_FAST_ROW64_TILES, _config.WGMMA_FP8_PRECISE_ROW64_TILES,
     _config.WGMMA_ROW64_KMAJOR_TILES) = lists[0] if lists else ROWS64


# tile(block_m, block_n, block_k, num_stages, num_warps, split_k=..., split_tail=...); unset fields: the device
# default. 64-row tiles run up to M = 4096.
CANDIDATES = {"default": None,
              "default, device-built descriptors": None,  # TMA descriptors made by every program, as before 2026-11-23
              "128x256x64 s3 w8": tile(128, 256, 64, 3, 8),
              "128x256x64 s4 w8": tile(128, 256, 64, 4, 8),
              "128x128x64 s4 w8": tile(128, 128, 64, 4, 8),
              "128x128x64 s4 w4": tile(128, 128, 64, 4, 4),
              "128x128x64 s6 w8": tile(128, 128, 64, 6, 8),
              # the last, partial wave's tiles split along K (split_k as the defaults choose it for the tail)
              "128x256x64 s3 w8 tail": tile(128, 256, 64, 3, 8, split_tail=True),
              "128x128x64 s6 w8 tail": tile(128, 128, 64, 6, 8, split_tail=True),
              "64x128x64 s4 w4": tile(64, 128, 64, 4, 4),
              "64x64x128 s4 w4": tile(64, 64, 128, 4, 4),
              "64x128x128 s3 w4": tile(64, 128, 128, 3, 4),
              "64x256x64 s4 w4": tile(64, 256, 64, 4, 4),
              # two programs per SM ("x2": gemm_sms = 2 x SMs, set per device by per_sm): where both fit (shared memory,
              # registers), one program's epilogue overlaps the other's main loop, as warp specialization would
              "128x128x64 s2 w8 x2": tile(128, 128, 64, 2, 8),
              "128x128x64 s3 w8 x2": tile(128, 128, 64, 3, 8),
              "128x128x64 s3 w4 x2": tile(128, 128, 64, 3, 4),
              "128x256x64 s2 w8 x2": tile(128, 256, 64, 2, 8)}
# Where tiles are few (M <= 1024): split-K ("kS": S slices of K per tile), and more shapes of tile, pipeline depth
# and warps.
SMALL_M_CANDIDATES = {"128x128x64 s4 w8 k2": tile(128, 128, 64, 4, 8, split_k=2),
                      "128x128x64 s4 w8 k4": tile(128, 128, 64, 4, 8, split_k=4),
                      "128x256x64 s3 w8 k2": tile(128, 256, 64, 3, 8, split_k=2),
                      "128x256x64 s3 w8 k4": tile(128, 256, 64, 3, 8, split_k=4),
                      "64x128x128 s3 w4 k2": tile(64, 128, 128, 3, 4, split_k=2),
                      "64x256x64 s4 w4 k2": tile(64, 256, 64, 4, 4, split_k=2),
                      "128x64x64 s4 w4": tile(128, 64, 64, 4, 4),
                      "128x64x128 s3 w4": tile(128, 64, 128, 3, 4),
                      "64x128x128 s4 w4": tile(64, 128, 128, 4, 4),
                      "64x128x128 s3 w8": tile(64, 128, 128, 3, 8),
                      "64x64x256 s3 w4": tile(64, 64, 256, 3, 4),
                      "64x128x64 s6 w4": tile(64, 128, 64, 6, 4),
                      "64x128x64 s8 w4": tile(64, 128, 64, 8, 4),
                      "128x128x64 s6 w8 k2": tile(128, 128, 64, 6, 8, split_k=2)}

# The warp-specialized Gluon kernel of fused_ops/wgmma.py (one load warp running ahead across tiles, two consumer
# warpgroups of 64 rows; B as given, row-major), with its own tiles (block_m 128; num_warps: per consumer).
WGMMA_CANDIDATES = {"wgmma 128x256x64 s3": tile(128, 256, 64, 3, 4),
                    "wgmma 128x128x64 s6": tile(128, 128, 64, 6, 4),
                    # three consumer warpgroups: 192-row tiles fill one wave where 128-row ones need two
                    "wgmma 192x128x64 s4": tile(192, 128, 64, 4, 4),
                    # 64-wide tiles: N of 64, and tile counts that fill whole waves where 128-wide ones do not
                    "wgmma 128x64x64 s8": tile(128, 64, 64, 8, 4),
                    "wgmma 192x64x64 s6": tile(192, 64, 64, 6, 4),
                    # 64-row tiles (one consumer), deep rings: 128 rows of many columns in twice the programs
                    "wgmma 64x64x64 s12": tile(64, 64, 64, 12, 4),
                    "wgmma 64x64x64 s12 rem16": tile(64, 64, 64, 12, 4),
                    "wgmma 64x64x64 s12 rem32": tile(64, 64, 64, 12, 4),
                    "wgmma 64x128x64 s8": tile(64, 128, 64, 8, 4),
                    # 128-deep blocks of K (two TMA boxes of 64 per operand and stage): half the ring's barrier
                    # waits and arrivals per tile
                    "wgmma 64x64x128 s6": tile(64, 64, 128, 6, 4),
                    "wgmma 64x128x128 s4": tile(64, 128, 128, 4, 4),
                    "wgmma 64x128x128 s3 rem64": tile(64, 128, 128, 3, 4),
                    "wgmma 128x64x128 s4": tile(128, 64, 128, 4, 4),
                    "wgmma 128x64x128 s3 rem32": tile(128, 64, 128, 3, 4),
                    "wgmma 128x128x128 s3": tile(128, 128, 128, 3, 4),
                    # ... 160 and 192 wide (128 + 32, 128 + 64): 128 tiles at 1024 rows of 1280-1536 columns, one
                    # consumer or two taking turns on K
                    "wgmma 64x128x64 s8 rem32": tile(64, 128, 64, 8, 4),
                    "wgmma 64x128x64 s8 rem64": tile(64, 128, 64, 8, 4),
                    "wgmma 64x128x64 s8 rem32 turns": tile(64, 128, 64, 8, 4),
                    "wgmma 64x128x64 s8 rem64 turns": tile(64, 128, 64, 8, 4),
                    # ... 288 and 320 wide (256 + 32, 256 + 64): 128 tiles at 1024 rows of 2304-2560 columns
                    "wgmma 64x256x64 s4 rem32": tile(64, 256, 64, 4, 4),
                    "wgmma 64x256x32 s8 rem32": tile(64, 256, 32, 8, 4),
                    "wgmma 64x256x64 s4 rem64": tile(64, 256, 64, 4, 4),
                    "wgmma 64x256x32 s8 rem64": tile(64, 256, 32, 8, 4),
                    # swap AB: the MMAs run on C's transpose, B's 64-192 columns per tile as their rows (one to three
                    # consumers) and A's 16-256 rows as their N, so tiles narrow along M cost no padded MMA rows
                    "wgmma swap 256x64x64 s4": tile(256, 64, 64, 4, 4),
                    "wgmma swap 128x64x64 s6": tile(128, 64, 64, 6, 4),
                    "wgmma swap 64x64x64 s8": tile(64, 64, 64, 8, 4),
                    "wgmma swap 32x64x64 s8": tile(32, 64, 64, 8, 4),
                    "wgmma swap 16x64x64 s8": tile(16, 64, 64, 8, 4),
                    "wgmma swap 32x64x128 s6": tile(32, 64, 128, 6, 4),
                    "wgmma swap 64x64x128 s4": tile(64, 64, 128, 4, 4),
                    "wgmma swap 256x128x64 s3": tile(256, 128, 64, 3, 4),
                    "wgmma swap 128x128x64 s6": tile(128, 128, 64, 6, 4),
                    "wgmma swap 64x128x64 s6": tile(64, 128, 64, 6, 4),
                    "wgmma swap 32x128x64 s8": tile(32, 128, 64, 8, 4),
                    "wgmma swap 16x128x64 s8": tile(16, 128, 64, 8, 4),
                    "wgmma swap 128x192x64 s4": tile(128, 192, 64, 4, 4),
                    "wgmma swap 64x192x64 s6": tile(64, 192, 64, 6, 4),
                    "wgmma swap 32x192x64 s6": tile(32, 192, 64, 6, 4),
                    # split-K ("kfill": each tile's K in as many slices as fill the SMs once; fp32 partials, added
                    # by a second kernel), where tiles are few
                    "wgmma 128x64x64 s8 kfill": tile(128, 64, 64, 8, 4),
                    "wgmma 128x128x64 s6 kfill": tile(128, 128, 64, 6, 4),
                    "wgmma 192x64x64 s6 kfill": tile(192, 64, 64, 6, 4),
                    "wgmma 192x128x64 s4 kfill": tile(192, 128, 64, 4, 4),
                    "wgmma swap 256x64x64 s4 kfill": tile(256, 64, 64, 4, 4),
                    "wgmma swap 128x64x64 s6 kfill": tile(128, 64, 64, 6, 4),
                    "wgmma swap 64x64x64 s8 kfill": tile(64, 64, 64, 8, 4),
                    "wgmma swap 128x128x64 s6 kfill": tile(128, 128, 64, 6, 4),
                    # swapped tiles block_m + R rows of A wide (a second MMA of N = R): 129-160 rows in one tile
                    "wgmma swap 128x64x64 s6 rem16": tile(128, 64, 64, 6, 4),
                    "wgmma swap 128x64x64 s6 rem16 kfill": tile(128, 64, 64, 6, 4),
                    "wgmma swap 128x128x64 s4 rem16 kfill": tile(128, 128, 64, 4, 4),
                    "wgmma swap 128x64x64 s6 rem32 kfill": tile(128, 64, 64, 6, 4),
                    "wgmma swap 128x128x64 s4 rem32 kfill": tile(128, 128, 64, 4, 4),
                    "wgmma swap 128x192x64 s4 rem16": tile(128, 192, 64, 4, 4),
                    # swapped tiles 96 rows of A (64 + 32) by 128 or 192 columns of B: one wave of 132 at 1024 rows
                    # of 1440-2304 columns, as cuBLAS's 96x128 and 192x96 kernels there
                    "wgmma swap 64x128x64 s6 rem32": tile(64, 128, 64, 6, 4),
                    "wgmma swap 64x192x64 s5 rem32": tile(64, 192, 64, 5, 4),
                    # tiles R columns of B wider (a second MMA of N = R): widths between powers of two, whose tile
                    # counts fill one wave where 128- and 256-wide ones leave SMs idle or need two
                    "wgmma 128x128x64 s4 rem16": tile(128, 128, 64, 4, 4),
                    "wgmma 128x128x64 s4 rem32": tile(128, 128, 64, 4, 4),
                    "wgmma 128x128x64 s4 rem64": tile(128, 128, 64, 4, 4),
                    "wgmma 192x128x64 s3 rem32": tile(192, 128, 64, 3, 4),
                    # four consumers: 256-row tiles, 160 wide (one wave of 128 at 4096x1280) or 128
                    "wgmma 256x128x64 s3 rem32": tile(256, 128, 64, 3, 4),
                    "wgmma 256x128x32 s5 rem32": tile(256, 128, 32, 5, 4),
                    "wgmma 256x128x32 s5 rem16": tile(256, 128, 32, 5, 4),  # 144 wide: 1152 = 8 x 144
                    "wgmma 256x128x64 s3": tile(256, 128, 64, 3, 4),
                    "wgmma 256x64x64 s4 rem32": tile(256, 64, 64, 4, 4),
                    "wgmma 128x256x64 s2 rem64": tile(128, 256, 64, 2, 4),
                    "wgmma 128x64x64 s6 rem32": tile(128, 64, 64, 6, 4),
                    "wgmma 128x64x64 s6 rem16": tile(128, 64, 64, 6, 4),
                    # sums of powers of two (one wide MMA: K-major B only): 224 (128 + 96), 112 (64 + 48)
                    "wgmma 128x128x64 s4 rem96": tile(128, 128, 64, 4, 4),
                    "wgmma 128x64x64 s6 rem48": tile(128, 64, 64, 6, 4)}
# slices of K at 33-128 rows: the swapped 128x64 and 128x128 tiles in S slices ("kS"; fp32 partials, a second kernel)
SPLITS = (1, 2, 3, 4, 6, 8, 11, 16)
WGMMA_CANDIDATES.update({f"wgmma swap 128x{bn}x64 s6 k{s}": tile(128, bn, 64, 6, 4) for bn in (64, 128)
                         for s in SPLITS[1:]})
# 128 rows, many columns, long K (memory-bound: B streams once, A is re-read per tile): wider tiles read fewer bytes of
# A per byte of B, in slices of K that fill the SMs ("kfill"); 288-wide (256 + 32) tiles, one wave at N = 38016
# (the 288-wide tiles' fp32 staging leaves 64-deep blocks one stage: in slices only 32 deep)
WGMMA_CANDIDATES.update({f"wgmma {t}{s}": tile(128, bn, bk, st, 4)
                         for t, bn, bk, st, sliced in (("128x256x32 s4", 256, 32, 4, True),
                                                       ("128x256x64 s3", 256, 64, 3, True),
                                                       ("128x128x64 s4 rem64", 128, 64, 4, True),
                                                       ("128x256x64 s3 rem32", 256, 64, 3, False),
                                                       ("128x256x32 s5 rem32", 256, 32, 5, True))
                         for s in ("", " kfill")[:1 + sliced]})
WGMMA_CANDIDATES.update({"wgmma swap 128x192x64 s4 kfill": tile(128, 192, 64, 4, 4)})
CANDIDATES.update(WGMMA_CANDIDATES)
# fused_ops.matmul, the library's GEMM alone (fused_ops/local_gemm.py): the Gluon kernel where config.wgmma_config
# picks it, else the tile loop ("default" is the tile loop as the fused ops run it)
CANDIDATES["matmul"] = None
# ... with operands whose rows TMA cannot describe (not 16-byte aligned) as given, never copied into aligned rows
# (local_gemm.ALIGN_OPERANDS = False), and always copied (local_gemm.PTR_FLOPS tiny)
CANDIDATES["matmul, as given"] = None
CANDIDATES["matmul, always copied"] = None
CANDIDATES["matmul, edges past"] = None
CANDIDATES["matmul, decode tile loop"] = None
CANDIDATES.update(dict.fromkeys(ROWS64_TOGGLES))  # the picks before config.WGMMA_ROW64_TILES, and before its 160-
# and 192-wide tiles (rows64())
# Alternatives where the C row stride is not a multiple of 16 elements: the store without the alignment hint (C_VEC=1).
CANDIDATES["default, no vec"] = None
# Where B's rows are not 128-byte aligned: B through fused_ops.pad_weight (done once per weight, outside the timing),
# against torch.matmul on the unpadded B (what a user gets who pads vs one who does not; torch ran as fast on either).
CANDIDATES["default, padded B"] = None
CANDIDATES["matmul, padded B"] = None  # ... fused_ops.matmul's own pick on it (K-major B: its rows of K padded)
# The default with B as given where the call would copy it into aligned rows itself (fused_ops/problem.py pads_b):
# what the default ran before that copy.
CANDIDATES["default, B as given"] = None
CANDIDATES["matmul, B rows as given"] = None  # B's rows off 32 bytes not copied (local_gemm.sector_copies)
CANDIDATES["matmul, two MMAs"] = None  # where the pick runs one MMA BLOCK_N + REM wide: two (wgmma.WIDE_MMA off)
# Decode-sized (M < 128) and few-tile shapes: split-K over more slices, narrow tiles.
SMALL_M_CANDIDATES.update({"64x64x128 s4 w4 k2": tile(64, 64, 128, 4, 4, split_k=2),
                           "64x64x128 s4 w4 k3": tile(64, 64, 128, 4, 4, split_k=3),
                           "64x64x128 s4 w4 k4": tile(64, 64, 128, 4, 4, split_k=4),
                           "64x64x128 s4 w4 k8": tile(64, 64, 128, 4, 4, split_k=8),
                           "64x128x128 s4 w4 k4": tile(64, 128, 128, 4, 4, split_k=4),
                           "64x64x256 s4 w4": tile(64, 64, 256, 4, 4),
                           "64x64x256 s4 w4 k4": tile(64, 64, 256, 4, 4, split_k=4),
                           "64x64x128 s4 w4 k16": tile(64, 64, 128, 4, 4, split_k=16),
                           "64x64x128 s4 w4 k32": tile(64, 64, 128, 4, 4, split_k=32),
                           "16x128x128 s4 w4": tile(16, 128, 128, 4, 4),
                           "16x64x256 s4 w4": tile(16, 64, 256, 4, 4),
                           "16x64x128 s6 w4": tile(16, 64, 128, 6, 4),
                           "32x64x128 s4 w4": tile(32, 64, 128, 4, 4),
                           "16x64x128 s6 w4 k2": tile(16, 64, 128, 6, 4, split_k=2),
                           "16x128x128 s4 w4 k4": tile(16, 128, 128, 4, 4, split_k=4),
                           # two 64-row programs per SM (96 KB of shared memory each): one warpgroup alone leaves the
                           # tensor cores idle while it waits; with slices of K where tiles are fewer than programs
                           "64x128x64 s4 w4 x2": tile(64, 128, 64, 4, 4),
                           "64x128x64 s4 w4 x2 k2": tile(64, 128, 64, 4, 4, split_k=2),
                           "64x64x128 s3 w4 x2": tile(64, 64, 128, 3, 4),
                           "64x64x128 s3 w4 x2 k2": tile(64, 64, 128, 3, 4, split_k=2),
                           "64x128x128 s2 w4 x2 k2": tile(64, 128, 128, 2, 4, split_k=2),
                           # K >> M x N: fewer, larger tiles in more slices (each operand byte read by fewer programs,
                           # more partial sums to add)
                           "64x128x128 s4 w4 k66": tile(64, 128, 128, 4, 4, split_k=66),
                           "128x64x128 s4 w4 k66": tile(128, 64, 128, 4, 4, split_k=66),
                           "128x128x64 s4 w8 k132": tile(128, 128, 64, 4, 8, split_k=132),
                           "64x64x256 s3 w4 k33": tile(64, 64, 256, 3, 4, split_k=33)})
# Slices of K where tiles are few, by how full they leave the last wave (one wave of 144 tiles on 132 SMs is two;
# 11 slices of each, twelve full ones): decode (16-row) tiles of three widths and depths, also with plain pointer
# loads ("ptr": no TMA boxes over rows of A that are not there); at 33-128 rows, 64-row tiles (SPLITS: above)
SMALL_M_CANDIDATES.update({f"16x{bn}x{bk} s{st} w4" + (f" k{s}" if s > 1 else ""): tile(
    16, bn, bk, st, 4, split_k=s if s > 1 else None) for bn, bk, st in ((64, 256, 4), (64, 128, 6), (64, 128, 8),
                                                                        (32, 256, 6)) for s in SPLITS})
SMALL_M_CANDIDATES.update({"16x64x256 s4 w4 ptr" + (f" k{s}" if s > 1 else ""): tile(
    16, 64, 256, 4, 4, split_k=s if s > 1 else None, tma=False) for s in (1, 2, 4, 8)})
# ... and several decode programs per SM (each a few stages deep), so that one's pipeline fills and epilogue overlap
# another's loads: N resident programs per SM ("xN") in place of one persistent program
SMALL_M_CANDIDATES.update({f"16x{bn}x{bk} s{st} w4 x{per}" + (f" k{s}" if s > 1 else ""): tile(
    16, bn, bk, st, 4, split_k=s if s > 1 else None) for bn, bk, st, per in (
        (64, 256, 2, 2), (64, 128, 4, 2), (64, 128, 3, 3), (64, 128, 2, 4), (32, 256, 3, 3), (32, 128, 3, 6))
    for s in SPLITS[:4]})
SMALL_M_CANDIDATES.update({f"{bm}x{bn}x128 s4 w4" + (f" k{s}" if s > 1 else ""): tile(
    bm, bn, 128, 4, 4, split_k=s if s > 1 else None) for bm, bn in ((64, 64), (64, 128)) for s in SPLITS[:6]})
# FP8 tiles (block_k twice the bf16 one: the same bytes per stage)
FP8_CANDIDATES = {"fp8 128x256x128 s3 w8": tile(128, 256, 128, 3, 8),
                  "fp8 128x256x128 s4 w8": tile(128, 256, 128, 4, 8),
                  "fp8 128x128x128 s6 w8": tile(128, 128, 128, 6, 8),
                  "fp8 128x128x128 s4 w4": tile(128, 128, 128, 4, 4),
                  "fp8 64x128x256 s4 w4": tile(64, 128, 256, 4, 4),
                  "fp8 64x128x256 s4 w4 fast accum": tile(64, 128, 256, 4, 4),
                  "fp8 64x64x256 s4 w4": tile(64, 64, 256, 4, 4),
                  "fp8 128x256x64 s4 w8": tile(128, 256, 64, 4, 8),
                  "fp8 128x256x128 s3 w8 tail": tile(128, 256, 128, 3, 8, split_tail=True),
                  "fp8 128x128x128 s6 w8 tail": tile(128, 128, 128, 6, 8, split_tail=True),
                  "fp8 16x128x256 s4 w4": tile(16, 128, 256, 4, 4),
                  # issue 31 round 3: K blocks of 256 (one promotion of the FP8 accumulator per 256 products of K,
                  # half the waits of 128), 128x64 tiles, and two or three 64x128 programs per SM ("x2", "x3":
                  # gemm_sms 2 or 3 x the SMs; <= 98 KB of shared memory and <= 21k registers each), so that one
                  # program's MMAs run while another waits on its promotion
                  "fp8 64x128x128 s4 w4 x2": tile(64, 128, 128, 4, 4),
                  "fp8 64x128x128 s3 w4 x3": tile(64, 128, 128, 3, 4),
                  "fp8 128x128x256 s3 w8": tile(128, 128, 256, 3, 8),
                  "fp8 128x128x256 s3 w8 tail": tile(128, 128, 256, 3, 8, split_tail=True),
                  "fp8 128x64x256 s4 w4": tile(128, 64, 256, 4, 4),
                  "fp8 64x128x256 s2 w4 x2": tile(64, 128, 256, 2, 4),
                  "fp8 64x256x128 s4 w8": tile(64, 256, 128, 4, 8),
                  "fp8 16x64x256 s4 w4": tile(16, 64, 256, 4, 4),
                  # decode rows (M <= 16): deeper K blocks, narrower tiles, more stages, split-K
                  "fp8 16x64x256 s4 w4 k2": tile(16, 64, 256, 4, 4, split_k=2),
                  "fp8 16x64x256 s4 w4 k4": tile(16, 64, 256, 4, 4, split_k=4),
                  "fp8 16x64x256 s6 w4": tile(16, 64, 256, 6, 4),
                  "fp8 16x32x256 s6 w4": tile(16, 32, 256, 6, 4),
                  "fp8 16x64x512 s4 w4": tile(16, 64, 512, 4, 4),
                  "fp8 16x32x512 s6 w4": tile(16, 32, 512, 6, 4),
                  # wider decode tiles in slices of K: tiles x slices filling one wave of programs where 64-wide
                  # tiles leave SMs idle or spill into a second wave
                  "fp8 16x64x256 s4 w4 k3": tile(16, 64, 256, 4, 4, split_k=3),
                  "fp8 16x128x256 s4 w4 k2": tile(16, 128, 256, 4, 4, split_k=2),
                  "fp8 16x128x256 s4 w4 k3": tile(16, 128, 256, 4, 4, split_k=3),
                  "fp8 16x128x256 s4 w4 k4": tile(16, 128, 256, 4, 4, split_k=4),
                  "fp8 16x256x256 s3 w4": tile(16, 256, 256, 3, 4),
                  # decode rows, several programs per SM (as config.decode_alone's 16-bit ones)
                  "fp8 16x64x256 s3 w4 x3": tile(16, 64, 256, 3, 4),
                  "fp8 16x64x256 s3 w4 x3 k2": tile(16, 64, 256, 3, 4, split_k=2),
                  "fp8 16x64x256 s3 w4 x3 k3": tile(16, 64, 256, 3, 4, split_k=3),
                  "fp8 16x64x256 s2 w4 x4": tile(16, 64, 256, 2, 4),
                  "fp8 16x256x256 s3 w4 k2": tile(16, 256, 256, 3, 4, split_k=2),
                  "fp8 16x256x256 s3 w4 k4": tile(16, 256, 256, 3, 4, split_k=4),
                  "fp8 16x256x256 s3 w4 k6": tile(16, 256, 256, 3, 4, split_k=6),
                  "fp8 16x256x256 s3 w8 k4": tile(16, 256, 256, 3, 8, split_k=4),
                  # few-tile FP8 shapes (M of 128, fewer 64-row tiles than SMs): slices of K that fill one wave,
                  # with slices of 4+ blocks (the defaults' MIN_SLICE_BLOCKS = 8 allows one or two slices there)
                  "fp8 64x64x256 s4 w4 k2": tile(64, 64, 256, 4, 4, split_k=2),
                  "fp8 64x64x256 s4 w4 k3": tile(64, 64, 256, 4, 4, split_k=3),
                  "fp8 64x64x256 s4 w4 k5": tile(64, 64, 256, 4, 4, split_k=5),
                  "fp8 64x128x256 s4 w4 k2": tile(64, 128, 256, 4, 4, split_k=2),
                  "fp8 64x128x256 s4 w4 k4": tile(64, 128, 256, 4, 4, split_k=4),
                  # ... K blocks of 512 (one promotion of the FP8 partial sum per 512 products: half the waits)
                  "fp8 64x64x512 s3 w4": tile(64, 64, 512, 3, 4),
                  "fp8 64x64x512 s3 w4 k2": tile(64, 64, 512, 3, 4, split_k=2),
                  "fp8 64x64x512 s3 w4 k3": tile(64, 64, 512, 3, 4, split_k=3),
                  "fp8 64x128x512 s2 w4": tile(64, 128, 512, 2, 4),
                  # ... and two such programs per SM (96 KB of shared memory each)
                  "fp8 64x64x256 s3 w4 x2": tile(64, 64, 256, 3, 4),
                  "fp8 64x64x256 s3 w4 x2 k2": tile(64, 64, 256, 3, 4, split_k=2),
                  "fp8 64x128x128 s4 w4 x2 k2": tile(64, 128, 128, 4, 4, split_k=2),
                  # the warp-specialized Gluon kernel (fused_ops/wgmma.py; two consumer warpgroups of 4 warps),
                  # precise accumulation unless named fast, wherever it runs (the default picks it by tile count)
                  "wgmma fp8 128x128x128 s4": tile(128, 128, 128, 4, 4),
                  "wgmma fp8 128x128x128 s6": tile(128, 128, 128, 6, 4),
                  "wgmma fp8 192x128x128 s4": tile(192, 128, 128, 4, 4),
                  "wgmma fp8 128x64x128 s8": tile(128, 64, 128, 8, 4),
                  "wgmma fp8 192x64x128 s6": tile(192, 64, 128, 6, 4),
                  "wgmma fp8 128x128x128 s4 rem16": tile(128, 128, 128, 4, 4),
                  "wgmma fp8 128x128x128 s4 rem32": tile(128, 128, 128, 4, 4),
                  "wgmma fp8 128x128x128 s3 rem64": tile(128, 128, 128, 3, 4),
                  # 129-160 rows: swapped tiles 16 or 32 rows of A wider, in slices of K (bf16's WGMMA_REM_TILE)
                  "wgmma fp8 swap 128x64x128 s6 rem16 kfill": tile(128, 64, 128, 6, 4),
                  "wgmma fp8 swap 128x64x128 s6 rem32 kfill": tile(128, 64, 128, 6, 4),
                  "wgmma fp8 swap 128x128x128 s4 rem16 kfill": tile(128, 128, 128, 4, 4),
                  # swapped tiles 96 rows of A by 128 or 192 columns of B (bf16's "wgmma swap 64x128x64 s6 rem32")
                  "wgmma fp8 swap 64x128x128 s6 rem32": tile(64, 128, 128, 6, 4),
                  "wgmma fp8 swap 64x128x128 s6 rem32 fast accum": tile(64, 128, 128, 6, 4),
                  "wgmma fp8 swap 64x192x128 s4 rem32": tile(64, 192, 128, 4, 4),
                  "wgmma fp8 swap 64x192x128 s4 rem32 fast accum": tile(64, 192, 128, 4, 4),
                  "wgmma fp8 128x128x128 s6 fast accum": tile(128, 128, 128, 6, 4),
                  "wgmma fp8 128x256x128 s3 fast accum": tile(128, 256, 128, 3, 4),
                  "wgmma fp8 128x128x256 s3 fast accum": tile(128, 128, 256, 3, 4),
                  "wgmma fp8 64x128x256 s4 fast accum": tile(64, 128, 256, 4, 4),
                  # four consumers, 256x160 (fast accumulation, per-tensor: precise keeps a second accumulator, and
                  # row-wise scales spill in the epilogue)
                  "wgmma fp8 256x128x128 s3 rem32 fast accum": tile(256, 128, 128, 3, 4),
                  "wgmma fp8 256x128x64 s5 rem32 fast accum": tile(256, 128, 64, 5, 4),
                  # swap AB (B's columns as the MMAs' rows, A's rows as their N: no padded MMA rows at few rows)
                  # fast accumulation on the precise tiles (config.WGMMA_FP8_FAST_TILES)
                  "wgmma fp8 192x128x128 s4 fast accum": tile(192, 128, 128, 4, 4),
                  "wgmma fp8 128x128x128 s4 rem16 fast accum": tile(128, 128, 128, 4, 4),
                  "wgmma fp8 128x128x128 s4 rem32 fast accum": tile(128, 128, 128, 4, 4),
                  "wgmma fp8 128x128x128 s3 rem64 fast accum": tile(128, 128, 128, 3, 4),
                  "wgmma fp8 swap 16x64x256 s4 fast accum": tile(16, 64, 256, 4, 4),
                  "wgmma fp8 swap 16x64x128 s8": tile(16, 64, 128, 8, 4),
                  "wgmma fp8 swap 16x128x128 s8": tile(16, 128, 128, 8, 4),
                  "wgmma fp8 swap 32x64x128 s8": tile(32, 64, 128, 8, 4),
                  "wgmma fp8 swap 64x64x128 s8": tile(64, 64, 128, 8, 4),
                  "wgmma fp8 swap 16x64x256 s4": tile(16, 64, 256, 4, 4),
                  "wgmma fp8 swap 16x64x256 s4 k2": tile(16, 64, 256, 4, 4),
                  "wgmma fp8 swap 16x64x256 s4 kfill": tile(16, 64, 256, 4, 4),
                  "wgmma fp8 swap 16x128x256 s4": tile(16, 128, 256, 4, 4),
                  "wgmma fp8 swap 32x64x256 s4": tile(32, 64, 256, 4, 4),
                  "wgmma fp8 swap 64x64x256 s4": tile(64, 64, 256, 4, 4),
                  "wgmma fp8 swap 16x192x256 s4": tile(16, 192, 256, 4, 4),
                  "wgmma fp8 swap 128x128x128 s6": tile(128, 128, 128, 6, 4),
                  "wgmma fp8 swap 256x128x128 s3 fast accum": tile(256, 128, 128, 3, 4),
                  "wgmma fp8 swap 64x192x128 s6": tile(64, 192, 128, 6, 4),
                  "wgmma fp8 swap 256x64x128 s4": tile(256, 64, 128, 4, 4),
                  "wgmma fp8 swap 16x64x128 s8 fast accum": tile(16, 64, 128, 8, 4),
                  "wgmma fp8 swap 64x192x128 s6 fast accum": tile(64, 192, 128, 6, 4),
                  "wgmma fp8 128x64x128 s8 kfill": tile(128, 64, 128, 8, 4),
                  "wgmma fp8 192x64x128 s6 kfill": tile(192, 64, 128, 6, 4),
                  "wgmma fp8 128x128x128 s6 kfill": tile(128, 128, 128, 6, 4),
                  "wgmma fp8 swap 256x64x128 s4 kfill": tile(256, 64, 128, 4, 4),
                  # 128 rows, long K: wider tiles in slices of K (see WGMMA_CANDIDATES)
                  "wgmma fp8 128x256x64 s4 fast accum kfill": tile(128, 256, 64, 4, 4),
                  "wgmma fp8 128x128x128 s6 fast accum kfill": tile(128, 128, 128, 6, 4),
                  "wgmma fp8 128x128x128 s4 rem64 kfill": tile(128, 128, 128, 4, 4),
                  "wgmma fp8 128x256x128 s3 rem32 fast accum": tile(128, 256, 128, 3, 4),
                  # 96 wide (64 + 32 columns), as bf16's WGMMA_96_TILE: 1024 rows where 128x128 tiles leave SMs idle
                  "wgmma fp8 128x64x128 s6 rem32": tile(128, 64, 128, 6, 4),
                  "wgmma fp8 128x64x128 s6 rem32 fast accum": tile(128, 64, 128, 6, 4),
                  # 128 rows of many columns (bound by B's bytes): whole 128x64 tiles, and swapped tiles (A's 128
                  # rows as the MMAs' N, one or two consumers of 64 columns of B), whole and in slices of K
                  "wgmma fp8 128x64x128 s8 fast accum": tile(128, 64, 128, 8, 4),
                  # ... 64-row tiles (one consumer), 72-144 columns wide, deep rings: twice the programs of
                  # 128-row ones where 128 rows of many columns leave SMs idle (cuBLAS's 64x72-80 tiles there)
                  "wgmma fp8 64x64x128 s12 rem8": tile(64, 64, 128, 12, 4),
                  "wgmma fp8 64x64x128 s12 rem16": tile(64, 64, 128, 12, 4),
                  "wgmma fp8 64x128x128 s8": tile(64, 128, 128, 8, 4),
                  "wgmma fp8 64x128x128 s8 rem16": tile(64, 128, 128, 8, 4),
                  "wgmma fp8 64x64x128 s12 rem8 fast accum": tile(64, 64, 128, 12, 4),
                  "wgmma fp8 64x64x128 s12 rem16 fast accum": tile(64, 64, 128, 12, 4),
                  "wgmma fp8 64x128x128 s8 fast accum": tile(64, 128, 128, 8, 4),
                  "wgmma fp8 64x128x128 s8 rem16 fast accum": tile(64, 128, 128, 8, 4),
                  # ... two consumers taking turns on each 64-row tile's blocks of K: precise accumulation's waits
                  # overlap the other consumer's MMAs
                  "wgmma fp8 64x64x128 s10 rem16 turns": tile(64, 64, 128, 10, 4),
                  "wgmma fp8 64x64x128 s10 rem8 turns": tile(64, 64, 128, 10, 4),
                  "wgmma fp8 64x128x128 s6 turns": tile(64, 128, 128, 6, 4),
                  "wgmma fp8 64x128x128 s6 rem16 turns": tile(64, 128, 128, 6, 4),
                  "wgmma fp8 64x64x128 s10 rem16 turns fast accum": tile(64, 64, 128, 10, 4),
                  "wgmma fp8 64x128x128 s6 rem16 turns fast accum": tile(64, 128, 128, 6, 4),
                  # ... 160 and 192 wide: 128 tiles at 1024 rows of 1280-1536 columns
                  "wgmma fp8 64x128x128 s6 rem32 turns": tile(64, 128, 128, 6, 4),
                  "wgmma fp8 64x128x128 s6 rem64 turns": tile(64, 128, 128, 6, 4),
                  "wgmma fp8 64x128x128 s6 rem32 turns fast accum": tile(64, 128, 128, 6, 4),
                  "wgmma fp8 64x128x128 s6 rem64 turns fast accum": tile(64, 128, 128, 6, 4),
                  "wgmma fp8 64x128x128 s8 rem32 fast accum": tile(64, 128, 128, 8, 4),
                  "wgmma fp8 64x128x128 s8 rem64 fast accum": tile(64, 128, 128, 8, 4),
                  # widths that are sums of powers of two, one wide MMA: 224 (128 + 96; 1024x3584 in 128 tiles,
                  # where 128x256 ones are 112), 112 (64 + 48; 256 tiles there, as cuBLAS's 112-wide ones), 192 rows
                  "wgmma fp8 128x128x128 s4 rem96 fast accum": tile(128, 128, 128, 4, 4),
                  "wgmma fp8 128x64x128 s6 rem48 fast accum": tile(128, 64, 128, 6, 4),
                  "wgmma fp8 128x64x128 s6 rem48": tile(128, 64, 128, 6, 4),
                  "wgmma fp8 192x64x128 s5 rem48 fast accum": tile(192, 64, 128, 5, 4),
                  "wgmma fp8 192x64x128 s5 rem48": tile(192, 64, 128, 5, 4),
                  "wgmma fp8 swap 128x64x128 s6": tile(128, 64, 128, 6, 4),
                  "wgmma fp8 swap 128x64x128 s6 k2": tile(128, 64, 128, 6, 4),
                  "wgmma fp8 swap 128x64x128 s6 kfill": tile(128, 64, 128, 6, 4),
                  "wgmma fp8 swap 128x64x128 s6 fast accum": tile(128, 64, 128, 6, 4),
                  "wgmma fp8 swap 128x64x128 s6 fast accum k2": tile(128, 64, 128, 6, 4),
                  "wgmma fp8 swap 128x128x128 s6 kfill": tile(128, 128, 128, 6, 4),
                  "wgmma fp8 swap 128x128x128 s6 fast accum": tile(128, 128, 128, 6, 4),
                  "wgmma fp8 swap 128x64x128 s6 rem16": tile(128, 64, 128, 6, 4),
                  # 1024 rows of 72-96 128x128 tiles: three consumers of 64x64 (one wave of 120 at 1024x1280)
                  "wgmma fp8 192x64x128 s6 fast accum": tile(192, 64, 128, 6, 4),
                  # precise accumulation promoted two blocks at a time (wgmma.run(promote="pairs")): the first
                  # block's sum added while the second's MMAs run, within each consumer
                  "wgmma fp8 128x128x128 s6 pairs": tile(128, 128, 128, 6, 4),
                  "wgmma fp8 128x64x128 s8 pairs": tile(128, 64, 128, 8, 4),
                  "wgmma fp8 64x128x128 s8 pairs": tile(64, 128, 128, 8, 4),
                  "wgmma fp8 64x64x128 s12 pairs": tile(64, 64, 128, 12, 4),
                  "wgmma fp8 128x128x128 s6 pairs kfill": tile(128, 128, 128, 6, 4),
                  # ... beside a second MMA of 16 more columns (144-wide tiles: three 64x144 sums per consumer)
                  "wgmma fp8 128x128x128 s4 rem16 pairs": tile(128, 128, 128, 4, 4)}


ROUNDS = 11  # paired rounds per configuration (benchmarks.harness.paired_graph_us), medians


def shapes(small=False):
    """The default sweep's hidden sizes with M from 128 up, plus the paper's 8192 x 4608 x 36864; at M <= 512 also
    the GEMMs a rank runs in the 2-GPU fused ops (K halved: all-reduce, reduce-scatter; N halved: all-scatter).
    small: M <= 1024 only."""
    hs, ms = (4096, 8192, 16384), (128, 256, 512, 1024) + (() if small else (4096, 16384))
    full = [(m, h, h) for h in hs for m in ms] + ([] if small else [(8192, 4608, 36864)])
    return full + [s for h in hs for m in (128, 256, 512) for s in ((m, h, h // 2), (m, h // 2, h))]


def rank_shapes(world=2):
    """The GEMMs one rank runs in the default sweep's fused ops where M >= 1024 (where the 128-row tiles run): N / world
    (all-scatter, and one all-gather shard: M / world rows too), K / world (all-reduce, reduce-scatter), and M / world
    rows by K / world (one phase of the phased reduce-scatter). Their tile counts decide how full the last wave is."""
    full = [(m, h, h) for h in (4096, 8192, 16384) for m in (1024, 4096, 16384)] + [(8192, 4608, 36864)]
    out = []
    for m, n, k in full:
        for s in ((m, n // world, k), (m, n, k // world), (m // world, n // world, k), (m // world, n, k // world)):
            if s not in out:
                out.append(s)
    return out


def run(ctx, args, run_stamp):
    variant = OPS["gemm_all_scatter"].variants["bulk_sync"]
    pdl = bool(iris.pdl_launch())  # programmatic dependent launch, as the fused ops launch (IRIS_PDL=0: off)
    import pandas as pd

    os.makedirs(args.out, exist_ok=True)
    rows = []
    if args.fp8:
        return run_fp8(ctx, args, run_stamp)
    run_stamp = dict(run_stamp, b_layout=args.weights)
    k_major = args.weights == "k-major"  # B as an N x K weight transposed
    for m, n, k, tag in per_shape(ctx, args):
        g = torch.Generator(device=ctx.get_device()).manual_seed(m + n + k)
        a = torch.randn(m, k, device=ctx.get_device(), dtype=torch.bfloat16, generator=g)
        b = torch.randn(*((n, k) if k_major else (k, n)), device=ctx.get_device(), dtype=torch.bfloat16, generator=g)
        b = b.t() if k_major else b
        c = torch.empty(m, n, device=ctx.get_device(), dtype=torch.bfloat16)
        ref = a.double() @ b.double()
        torch.matmul(a, b, out=c)
        for name, cfg in {**CANDIDATES, **(SMALL_M_CANDIDATES if m <= 1024 else {})}.items():
            if args.configs and name not in args.configs:
                continue
            rows64(name)
            if cfg is not None and "swap" not in name and (cfg.block_m <= 64 and m > 4096 or
                                                           cfg.block_m < 64 and m >= 128):
                continue  # 64-row tiles are for small M, narrower ones for decode (M < 128)
            if name.endswith("no vec") and store_vec(c, c.stride(0), n) == 8 // 1 and n % 16 == 0:
                continue  # Triton aligns the stores itself: nothing to compare
            bb = b
            if name.endswith("padded B"):
                row_bytes = (k if k_major else n) * b.element_size()
                if row_bytes % 128 == 0 or row_bytes % 16:
                    continue  # aligned already, or rows TMA cannot describe at all (the pointer path)
                bb = pad_weight(b)
            odd_rows = (n * b.element_size()) % 16 and (k * a.element_size()) % 16 == 0  # only B's: TMA on a copy
            if name.endswith("B as given") and not (_problem.pads_b(m, n, k, b.element_size(), b.stride(0)) or (
                    odd_rows and local_gemm.copies_pay(m, n, k, b.element_size(), True, False))):
                continue  # the default does not copy B here: the same run as "default"
            if name in WGMMA_CANDIDATES or name.startswith("matmul"):
                rows += direct_row(ctx, a, bb, c, ref, name, cfg, m, n, k, tag, run_stamp, args.hot, b)
                continue
            if cfg is not None and cfg.split_k is None and not cfg.split_tail:  # whole tiles: not the default's
                cfg = dataclasses.replace(cfg, split_k=1, split_tail=False)  # split (the default may split a tail)
            cfg = per_sm(name, cfg, ctx.get_cu_count())
            _problem.HOST_DESCRIPTORS = "device-built" not in name
            _problem.AUTO_PAD_B = not name.endswith("B as given")

            def problem():  # per call, as the fused ops build it (inside what a graph captures: B's copy, if any)
                return Problem(ctx=ctx, op="gemm_all_scatter", variant=variant, a=a, b=bb, c=c, m=m, n=n, k=k,
                               config=cfg)
            try:
                p = problem()
            except ValueError as e:  # e.g. a split tail where there is no full wave
                print(f"{m:>6d}x{n}x{k} {name:18s} skipped: {str(e)[:80]}", flush=True)
                _problem.HOST_DESCRIPTORS, _problem.AUTO_PAD_B = True, True
                continue
            units, programs = p.num_tiles * p.cfg.split_k, p.cfg.gemm_sms
            if p.cfg.split_k > 1 and not p.cfg.split_tail and wave_fill(units, programs) <= wave_fill(p.num_tiles,
                                                                                                      programs):
                continue  # the slices leave the waves no fuller than whole tiles do: nothing for split-K to fill
            flags, epoch = p.no_sync()

            vec = 1 if name.endswith("no vec") else store_vec(c, c.stride(0), n)

            def call():
                q = problem()
                return gemm_kernel[q.grid(q.cfg.gemm_sms)](*q.gemm_args(), c, c.stride(0), c.stride(1), 0, flags,
                                                           epoch, 0, *q.rank_args(), SIGNAL="none", C_VEC=vec,
                                                           **q.meta())
            c.fill_(float("nan"))
            try:
                compiled = call()
            except triton.runtime.errors.OutOfResources as e:  # a candidate too large for this GPU: noted, skipped
                print(f"{m:>6d}x{n}x{k} {name:18s} skipped: {str(e)[:80]}", flush=True)
                _problem.HOST_DESCRIPTORS, _problem.AUTO_PAD_B = True, True
                continue
            err = ((c.double() - ref).norm() / ref.norm()).item()
            # torch again, in turns; ROUNDS pairs (a GEMM of ~10 us moved up to 15% between runs at 5 rounds)
            t, t_torch = paired_graph_us(call, lambda: torch.matmul(a, b, out=c), rounds=ROUNDS, hot=args.hot)
            rows.append(dict(m=m, n=n, k=k, shape_class=tag["class"], source=tag["source"], config=name, c_vec=vec,
                             host_descriptors=_problem.HOST_DESCRIPTORS, pdl=pdl,
                             block_m=p.cfg.block_m, block_n=p.cfg.block_n,
                             block_k=p.cfg.block_k, num_stages=p.cfg.num_stages, num_warps=p.cfg.num_warps,
                             split_k=p.cfg.split_k, split_tail=p.cfg.split_tail,
                             tma=p.tma, pad_b=p.pad_b, programs=p.grid(p.cfg.gemm_sms)[0],
                             shared_kb=compiled.metadata.shared / 1024 if compiled is not None else None,
                             regs=getattr(compiled, "n_regs", None), time_us=t, torch_us=t_torch, vs_torch=t_torch / t,
                             tflops=2 * m * n * k / t / 1e6, rel_error=err, correct=err < 1e-2, dtype="bfloat16",
                             **run_stamp))
            _problem.HOST_DESCRIPTORS, _problem.AUTO_PAD_B = True, True
            print(f"{m:>6d}x{n}x{k} {name:18s} {t:9.1f} µs  torch {t_torch:9.1f}  {t_torch / t:5.2f}x  err {err:.1e}",
                  flush=True)
        df = pd.DataFrame(rows)  # after every shape: a run cut short keeps what it measured
        df.to_csv(os.path.join(args.out, "gemm.csv"), index=False)
    d = df[df.config == "default"].set_index(["m", "n", "k"])
    best = df.loc[df.groupby(["m", "n", "k"]).vs_torch.idxmax()].set_index(["m", "n", "k"])
    print(d[["shape_class", "vs_torch"]].join(best[["config", "vs_torch"]], rsuffix="_best").to_string())
    if (df.config == "default").any():
        print(class_table(df[df.config == "default"]).to_string())
    if (df.config == "matmul").any():
        print("fused_ops.matmul (the Gluon kernel where config.wgmma_config picks it):")
        print(class_table(df[df.config == "matmul"]).to_string())
    if (df.config == "default, padded B").any():
        pad = df[df.config == "default, padded B"].set_index(["m", "n", "k"])
        both = df[df.config == "default"].set_index(["m", "n", "k"])
        both.loc[pad.index] = pad
        print("... with B through fused_ops.pad_weight where its rows are not 128-byte aligned:")
        print(class_table(both.reset_index()).to_string())
    print(f"wrote {args.out}/gemm.csv ({len(df)} rows, all correct: {bool(df.correct.all())})")


def ran_wide(call, **settings):
    """Whether call() ran the Gluon kernel's tiles as one MMA BLOCK_N + REM wide (fused_ops/wide_mma), with wgmma's
    `settings` (e.g. WIDE_MMA=True) in effect meanwhile."""
    seen, real = [], wgmma.kernel_args
    saved = {name: getattr(wgmma, name) for name in settings}

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.append(out[1]["WIDE"])
        return out
    wgmma.kernel_args = spy
    for name, value in settings.items():
        setattr(wgmma, name, value)
    try:
        call()
    finally:
        wgmma.kernel_args = real
        for name, value in saved.items():
            setattr(wgmma, name, value)
    return any(seen)


def direct_row(ctx, a, b, c, ref, name, cfg, m, n, k, tag, run_stamp, hot, torch_b):
    """[the CSV row] of fused_ops.matmul ("matmul": its own pick of kernel) or of a candidate forced through the Gluon
    kernel, or [] where that kernel does not take the operands. hot: seconds of harness.heat before its timing.
    torch_b: torch.matmul's B (b itself, or for "padded B" the weight as the user has it)."""

    swap = "swap" in name  # a swap-AB candidate (wgmma.run(swap=True))
    # matmul's own choice, or with its copies into aligned rows off ("as given") or always made ("always copied")
    # ... or with the Gluon kernel's edge boxes loaded past the edge (zero-filled), not moved inside ("edges past")
    # ... or with bf16 decode rows on the tile loop's 16-row tiles, not the Gluon kernel's swapped ones ("decode tile
    # loop") ... or with B's rows off 32 bytes read as given, not copied (local_gemm.sector_copies; "B rows as given")
    ptr, dec = local_gemm.PTR_FLOPS, _config.WGMMA_DECODE_TILE
    # (ALIGN_OPERANDS, PTR_FLOPS, KEEP_INSIDE, WGMMA_DECODE_TILE, COPY_16BIT_B, WIDE_MMA) for each
    toggles = {"matmul": (True, ptr, True, dec, True, True),
               "matmul, as given": (False, ptr, True, dec, True, True),
               "matmul, always copied": (True, 1.0, True, dec, True, True),
               "matmul, edges past": (True, ptr, False, dec, True, True),
               "matmul, decode tile loop": (True, ptr, True, None, True, True),
               "matmul, padded B": (True, ptr, True, dec, True, True),
               "matmul, B rows as given": (True, ptr, True, dec, False, True),
               "matmul, two MMAs": (True, ptr, True, dec, True, False),
               **dict.fromkeys(ROWS64_TOGGLES, (True, ptr, True, dec, True, True))}
    settings = ((local_gemm, "ALIGN_OPERANDS"), (local_gemm, "PTR_FLOPS"), (wgmma, "KEEP_INSIDE"),
                (_config, "WGMMA_DECODE_TILE"), (local_gemm, "COPY_16BIT_B"), (wgmma, "WIDE_MMA"))

    def with_toggles(fn, which=None):
        saved = [getattr(mod, attr) for mod, attr in settings]
        for (mod, attr), value in zip(settings, toggles[which or name]):
            setattr(mod, attr, value)
        try:
            return fn()
        finally:
            for (mod, attr), value in zip(settings, saved):
                setattr(mod, attr, value)

    if name == "matmul, decode tile loop" and m > _config.DECODE_ROWS:
        return []  # the same run as "matmul"
    if name in toggles:
        a2, b2 = with_toggles(lambda: local_gemm.aligned_operands(a, b))
        copied = a2 is not a or b2 is not b
        own = ("matmul", "matmul, edges past", "matmul, decode tile loop", "matmul, padded B",
               "matmul, B rows as given", "matmul, two MMAs") + ROWS64_TOGGLES
        if name not in own and copied == any(
                x is not y for x, y in zip(local_gemm.aligned_operands(a, b), (a, b))):
            return []  # the same run as "matmul"
        plan, _ = local_gemm.tile_loop_plan(a2, b2, None, lambda dev, m, n, k: local_gemm.defaults(
            dev, m, n, k, a.dtype), "matmul")
        kernel, cfg = with_toggles(lambda: local_gemm.pick_kernel(a2, b2, c, plan, None, False, None, "matmul"))
        if name == "matmul, edges past" and kernel == "tile_loop":
            return []  # the toggle is the Gluon kernel's
        rows_copied = kernel == "wgmma" and local_gemm.sector_copies(m, n, k, a2, b2)[1]  # (matmul's own rule)
        if name == "matmul, B rows as given" and not rows_copied:
            return []  # the same run as "matmul"
        wide = ran_wide(lambda: with_toggles(lambda: local_gemm.matmul(a, b, out=c), "matmul"))
        if name == "matmul, two MMAs" and not wide:
            return []  # the same run as "matmul"
        rows_copied = rows_copied and toggles[name][0] and toggles[name][4]  # ALIGN_OPERANDS and COPY_16BIT_B
        kernel += (" swap" if cfg.swap_ab else "") + (f" rem{local_gemm.rem(cfg)}" if local_gemm.rem(cfg) else "")
        kernel += ", copied" if copied else ", B rows copied" if rows_copied else ""
        kernel += " wide" if wide and name != "matmul, two MMAs" else ""
    elif not wgmma.supports(a, b, c):
        return []
    else:
        kernel, cfg = "wgmma swap" if swap else "wgmma", gluon_candidate(name, cfg, a, c, ctx.get_cu_count())
        if (name.endswith("kfill") or named_slices(name)) and cfg.split_k == 1:
            return []  # tiles enough for every SM, or K too short to slice: the whole-tile candidate's run
        try:
            wgmma.kernel_args(a, b, c, cfg.block_n, cfg.block_k, cfg.num_stages, **gluon_kwargs(name, cfg))
        except ValueError as e:  # a width with no form on these operands (rem96 tiles on row-major B)
            print(f"{m}x{n}x{k} {name}: {e}")
            return []

    def call():
        if name in toggles:
            return with_toggles(lambda: local_gemm.matmul(a, b, out=c))
        return wgmma.run(a, b, c, cfg.block_n, cfg.block_k, cfg.num_stages, cfg.gemm_sms, **gluon_kwargs(name, cfg))
    c.fill_(float("nan"))
    call()
    err = ((c.double() - ref).norm() / ref.norm()).item()
    t, t_torch = paired_graph_us(call, lambda: torch.matmul(a, torch_b, out=c), rounds=ROUNDS, hot=hot)
    print(f"{m:>6d}x{n}x{k} {name:18s} {t:9.1f} µs  torch {t_torch:9.1f}  {t_torch / t:5.2f}x  err {err:.1e}"
          f"  ({kernel})", flush=True)
    return [dict(m=m, n=n, k=k, shape_class=tag["class"], source=tag["source"], config=name, kernel=kernel,
                 block_m=cfg.block_m, block_n=cfg.block_n, block_k=cfg.block_k, num_stages=cfg.num_stages,
                 num_warps=cfg.num_warps, split_k=cfg.split_k, split_tail=cfg.split_tail, time_us=t, torch_us=t_torch,
                 vs_torch=t_torch / t, tflops=2 * m * n * k / t / 1e6, rel_error=err, correct=err < 1e-2,
                 dtype="bfloat16", **run_stamp)]


def shape_list(args):
    """[(m, n, k, tag)] of the run: --shapes MxNxK..., or a named set (models: the public set's sample, models-all:
    all of it; benchmarks/shapes.py), or the older sets; --part I/N of them."""
    part = getattr(args, "part", None)  # (benchmarks/torch_kernels.py's arguments have none)
    if args.shapes and args.shapes[0] in ("models", "models-all"):
        every = shape_set.model_shapes()
        return shape_set.part(every if args.shapes[0] == "models-all" else shape_set.sample(every), part)
    if args.shapes:
        out = [tuple(map(int, s.lower().split("x"))) for s in args.shapes]
    else:
        out = rank_shapes() if args.rank_shapes else shapes(args.small)
    return shape_set.part([(m, n, k, {"class": shape_set.shape_class(m, n, k), "source": "cli"}) for m, n, k in out],
                          part)


def per_shape(ctx, args):
    """shape_list's shapes, each inside ctx.scratch(): the heap workspaces a shape's calls create (split-K partials)
    are released before the next (a run of every candidate over the sample once exhausted the 4 GiB heap)."""
    for shape in shape_list(args):
        with ctx.scratch():
            yield shape


def class_table(df):
    """Per shape class: shapes, geometric mean and minimum of vs_torch, and the targets of issue 31 (geomean >= 0.95;
    every shape >= 0.90 at M >= 128, >= 0.85 below; FP8 rows: >= 0.85 each)."""
    import pandas as pd

    rows = []
    for cls, g in df.groupby("shape_class", sort=False):
        floor = g.m.map(lambda m: 0.85 if m < 128 else 0.90)
        if "dtype" in g and (g.dtype == "float8_e4m3fn").all():
            floor = floor * 0 + 0.85
        rows.append(dict(shape_class=cls, shapes=len(g), geomean=round(shape_set.geomean(g.vs_torch), 3),
                         min=round(g.vs_torch.min(), 3),
                         worst=f"{g.loc[g.vs_torch.idxmin(), ['m', 'n', 'k']].tolist()}",
                         below_floor=int((g.vs_torch < floor).sum())))
    t = pd.DataFrame(rows)
    total = dict(shape_class="all", shapes=len(df), geomean=round(shape_set.geomean(df.vs_torch), 3),
                 min=round(df.vs_torch.min(), 3), worst="", below_floor=int(t.below_floor.sum()))
    return pd.concat([t, pd.DataFrame([total])], ignore_index=True)


def quantize(x, rowwise, dim):
    """x as e4m3 with its fp32 scale(s): per tensor, or per row (dim=1) / column (dim=0) of x."""
    amax = x.abs().amax(dim=dim, keepdim=True) if rowwise else x.abs().amax()
    scale = (amax.float() / 448.0).clamp(min=1e-12)
    return (x / scale).to(torch.float8_e4m3fn), scale


FP8_DEFAULTS = ("default", "default, fast accum", "default, tile loop", "default, fast accum, tile loop")
FP8_BEFORE = ("default, no 64-row tiles", "default, fast accum, no 64-row tiles",  # rows64()
              "default, narrow 64-row tiles", "default, fast accum, narrow 64-row tiles",
              "default, per-block promotion", "default, no pairs cost",  # promotion()
              "default, no A copy", "default, fast accum, no A copy",
              "default, two MMAs", "default, fast accum, two MMAs",  # (wgmma.WIDE_MMA off; where the pick is wide)
              "default, fast accum, no 224-wide tiles")  # (config.WGMMA_FP8_FAST_224_TILES off)
PAIRS_TILES, PAIRS_ROWS = _config.FP8_PAIRS_TILES, _config.FP8_PAIRS_ROWS
FAST_224_TILES = _config.WGMMA_FP8_FAST_224_TILES


def promotion(name):
    """The defaults' precise FP8 sums promoted every block (no config.FP8_PAIRS_TILES, as at 7265838) for a candidate
    named "..., per-block promotion"; the picks before config.FP8_PAIRS_COST (tiles costed as if every block were
    promoted, as at 3ed686d) for "..., no pairs cost"; A's rows as given (no local_gemm.COPY_A, as at e619b5f)
    for "..., no A copy"; with fast accumulation no 224-wide tiles (as at b2341a6) for "..., no 224-wide tiles";
    the defaults for every other."""
    _config.FP8_PAIRS_TILES = () if name.endswith(", per-block promotion") else PAIRS_TILES
    _config.FP8_PAIRS_ROWS = (0, 0) if name.endswith(", no pairs cost") else PAIRS_ROWS
    local_gemm.COPY_A = not name.endswith(", no A copy")
    wgmma.WIDE_MMA = not name.endswith(", two MMAs")
    _config.WGMMA_FP8_FAST_224_TILES = () if name.endswith(", no 224-wide tiles") else FAST_224_TILES


def run_fp8(ctx, args, run_stamp):
    """fused_ops.fp8.scaled_mm against torch._scaled_mm on the same e4m3 operands and scales (per-tensor, row-wise),
    bf16 out, graph-timed in turns; both checked against float64 on the dequantized operands."""
    import pandas as pd

    from fused_ops import fp8

    rows = []
    named = [name for name in FP8_DEFAULTS if name in (args.configs or ())]  # the defaults named, else all four
    configs = {**{name: None for name in named or FP8_DEFAULTS},
               **{name: None for name in FP8_BEFORE if name in (args.configs or ())},
               **{name: cfg for name, cfg in FP8_CANDIDATES.items() if args.configs and name in args.configs}}
    for m, n, k, tag in per_shape(ctx, args):
        if n % 16 or k % 16:
            continue  # torch._scaled_mm needs multiples of 16
        dev = ctx.get_device()
        g = torch.Generator(device=dev).manual_seed(m + n + k)
        a32 = torch.randn(m, k, device=dev, generator=g)
        w32 = torch.randn(n, k, device=dev, generator=g)
        for scaling in ("tensor", "row"):
            a, sa = quantize(a32, scaling == "row", 1)
            w, sb = quantize(w32, scaling == "row", 1)
            b, sb = w.t(), (sb.t() if scaling == "row" else sb)  # column-major K x N, scales 1 x N
            sa, sb = sa.contiguous(), sb.contiguous()
            ref = (a.double() * sa.double()) @ (b.double() * sb.double())
            c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
            c_torch = torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)
            err_torch = ((c_torch.double() - ref).norm() / ref.norm()).item()
            for name, cfg in configs.items():
                rows64(name)
                promotion(name)
                if scaling == "row" and name not in ("default", "default, tile loop") + FP8_BEFORE:
                    continue  # the alternatives on per-tensor scales only (the defaults before on both)
                if scaling == "row" and name.endswith(", no 224-wide tiles"):
                    continue  # (row-wise scales take none)
                if name != "default" and m < 128 and cfg is not None and cfg.block_m > 64:
                    continue
                if cfg is not None and cfg.block_m < 64 and m > 64:
                    continue  # decode tiles are for decode rows
                if cfg is not None and cfg.split_k is None and not cfg.split_tail:
                    cfg = dataclasses.replace(cfg, split_k=1, split_tail=False)
                cfg = per_sm(name, cfg, ctx.get_cu_count())
                fast = "fast accum" in name
                kernel = "tile_loop" if "tile loop" in name else "wgmma" if name.startswith("wgmma") else None
                try:
                    if kernel == "wgmma":  # the candidate's tile as is (block_m 192 is no tile-loop Config)
                        if not wgmma.supports(a, b, c):
                            continue
                        kernel_ran = "wgmma swap" if "swap" in name else kernel
                        used = gluon_candidate(name, cfg, a, c, ctx.get_cu_count())
                        if name.endswith("kfill") and used.split_k == 1:
                            continue
                    else:
                        used, _ = fp8.plan(a, b, cfg, fast)
                        kernel_ran, used = fp8.pick_kernel(a, b, c, used, cfg, fast, kernel, scaling == "row")
                        kernel_ran += " swap" if used.swap_ab else ""
                    kernel_ran += f" rem{local_gemm.rem(used)}" if local_gemm.rem(used) else ""
                    if kernel != "wgmma":  # the defaults: whether they run one MMA BLOCK_N + REM wide
                        two = name.endswith(", two MMAs")
                        wide = ran_wide(lambda: fp8.scaled_mm(a, b, sa, sb, out=c, config=cfg, use_fast_accum=fast,
                                                              kernel=kernel), WIDE_MMA=True)
                        if two and not wide:
                            continue  # the same run as the default's
                        kernel_ran += " wide" if wide and not two else ""
                except ValueError as e:
                    print(f"{m}x{n}x{k} {name}: {e}")
                    continue

                def call():
                    if kernel == "wgmma":
                        return wgmma.run(a, b, c, used.block_n, used.block_k, used.num_stages, used.gemm_sms, sa, sb,
                                         **gluon_kwargs(name, used, fp8=True))
                    return fp8.scaled_mm(a, b, sa, sb, out=c, config=cfg, use_fast_accum=fast, kernel=kernel)
                c.fill_(float("nan"))
                try:
                    call()
                except triton.runtime.errors.OutOfResources as e:
                    print(f"{m:>6d}x{n}x{k} fp8 {name} skipped: {str(e)[:80]}", flush=True)
                    continue
                err = ((c.double() - ref).norm() / ref.norm()).item()
                t, t_torch = paired_graph_us(call, lambda: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16,
                                                                            use_fast_accum=fast), hot=args.hot)
                rows.append(dict(m=m, n=n, k=k, shape_class=tag["class"], source=tag["source"], config=name,
                                 scaling=scaling, fast_accum=fast, kernel=kernel_ran, block_m=used.block_m,
                                 block_n=used.block_n, block_k=used.block_k,
                                 num_stages=used.num_stages, num_warps=used.num_warps, split_k=used.split_k,
                                 split_tail=used.split_tail, time_us=t, torch_us=t_torch, vs_torch=t_torch / t,
                                 tflops=2 * m * n * k / t / 1e6, rel_error=err, torch_rel_error=err_torch,
                                 correct=err < max(2 * err_torch, 3e-2 if fast else 1e-2), dtype="float8_e4m3fn",
                                 **run_stamp))
                print(f"{m:>6d}x{n}x{k} fp8 {scaling:6s} {name:38s} {t:9.1f} µs  torch {t_torch:9.1f}  "
                      f"{t_torch / t:5.2f}x  err {err:.1e} (torch {err_torch:.1e})", flush=True)
        df = pd.DataFrame(rows)
        df.to_csv(os.path.join(args.out, "gemm_fp8.csv"), index=False)
    d = df[df.config == "default"]
    print(d.pivot_table(index=["m", "n", "k"], columns="scaling", values="vs_torch").round(3).to_string())
    for scaling, g in d.groupby("scaling"):
        print(f"FP8 {scaling}-wise scales:")
        print(class_table(g).to_string())
    print(f"wrote {args.out}/gemm_fp8.csv ({len(df)} rows, all correct: {bool(df.correct.all())})")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="results")
    p.add_argument("--small", action="store_true", help="M <= 1024 only (where tiles are few)")
    p.add_argument("--shapes", nargs="+", help="MxNxK ... instead, or a named set: models (a per-class sample of the "
                                               "public set, benchmarks/shapes.py), models-all")
    p.add_argument("--part", default=None, help="I/N: every N-th shape from the I-th (a set too long for one run, "
                                                "e.g. models-all in three parts: 1/3, 2/3, 3/3)")
    p.add_argument("--fp8", action="store_true", help="FP8 e4m3 (fused_ops.fp8.scaled_mm) against torch._scaled_mm")
    p.add_argument("--rank-shapes", action="store_true", help="the GEMMs a rank runs in the 2-GPU default sweep, "
                                                              "M >= 1024 (rank_shapes)")
    p.add_argument("--hot", type=float, default=0.0,
                   help="seconds of heavy GEMMs before each configuration's timing (both sides then run at the clock "
                        "the GPU's power cap leaves after heavy work, as in a whole-set run; 0: as it comes)")
    p.add_argument("--configs", nargs="+", help="only these candidate names (e.g. default '64x128x64 s8 w4'), or "
                                                "shell-style patterns of them ('16x64x256 s4 w4*')")
    p.add_argument("--weights", choices=("row-major", "k-major"), default="row-major",
                   help="bf16 B's layout: K x N row-major, or K-major (an N x K weight transposed, as F.linear and "
                        "the torch ops pass nn.Linear's); fused_ops.matmul and the Gluon candidates only")
    args = p.parse_args()
    if args.weights == "k-major" and (args.fp8 or not args.configs or any(
            not (c.startswith("matmul") or c in WGMMA_CANDIDATES) for c in args.configs)):
        raise SystemExit("--weights k-major times bf16 fused_ops.matmul and the Gluon candidates only: name them with "
                         "--configs (e.g. matmul 'wgmma 64x64x128 s6'); FP8's B is K-major already")
    known = set(CANDIDATES) | set(SMALL_M_CANDIDATES) | set(FP8_CANDIDATES) | set(FP8_DEFAULTS) | set(FP8_BEFORE)
    patterns = [c for c in args.configs or () if any(ch in c for ch in "*?[")]
    unknown = {c for c in args.configs or () if c not in known and c not in patterns}
    unknown |= {c for c in patterns if not fnmatch.filter(known, c)}
    if args.configs:
        args.configs = [c for c in args.configs if c not in patterns] + sorted(
            {name for c in patterns for name in fnmatch.filter(known, c)})
    if unknown:
        raise SystemExit(f"unknown configs {sorted(unknown)}; known: {sorted(known)}")
    try:
        shape_set.part([], args.part)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    if iris.BACKEND != "cuda":
        raise SystemExit("gemm.py times CUDA graphs on one GPU: run it with IRIS_BACKEND=cuda")
    iris.spawn(run, 1, args, stamp(1, "benchmarks/gemm.py"), heap_size=4 << 30)


if __name__ == "__main__":
    main()

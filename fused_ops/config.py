"""Launch configuration of a catalog call: tiles, the GEMM/communication SM split, pipelining. Defaults are chosen
per device; any field can be overridden (`Config(block_n=128)` keeps the other defaults)."""

from dataclasses import dataclass, fields, replace

import torch

from .registry import OPS


@dataclass(frozen=True)
class Config:
    block_m: int = None
    block_n: int = None
    block_k: int = None
    group_m: int = None
    gemm_sms: int = None   # programs of the GEMM (persistent grid)
    comm_sms: int = None   # programs of the communication kernel / role
    num_stages: int = None
    num_warps: int = None
    tma: bool = None       # device-side TMA descriptors for A and B (None: when the strides allow it, on CUDA)
    split_k: int = None    # slices of K per output tile (split-K: more programs when tiles are few); variants with
                           # split_k support only (fused_ops.list_variants shows them; others reject it)
    split_tail: bool = None  # split only the tiles of the last, partial wave (the full waves run whole tiles), so
                             # their slices fill the SMs that wave would leave idle
    swap_ab: bool = None   # the Gluon kernel only (fused_ops.matmul, fp8.scaled_mm): its MMAs run on C's transpose,
                           # B's block_n (64-192) columns as their rows and A's block_m (16-256) rows as their N
    rem_rows: int = None   # ... with swap_ab: a second MMA over rem_rows (8, 16, 32 or 64) more rows of A,
                           # so that 129-160 rows run as one tile rather than two of 128 (wgmma.run(rem=...))
    rem_cols: int = None   # ... without swap_ab: a second MMA over rem_cols (8, 16, 32 or 64) more columns of B, so
                           # tiles are block_n + rem_cols wide (128 + 32: 160), between powers of two

    def describe(self):
        """One line for logs and CSVs: tiles, pipeline, programs, split."""
        text = (f"{self.block_m}x{self.block_n}x{self.block_k} s{self.num_stages} w{self.num_warps}, "
                f"{self.gemm_sms} GEMM programs")
        if self.split_k > 1:
            text += f", split_k {self.split_k}" + (" (last wave)" if self.split_tail else "")
        return (text + (", swap AB" if self.swap_ab else "") + (f" + {self.rem_rows} rows" if self.rem_rows else "")
                + (f" + {self.rem_cols} columns" if self.rem_cols else ""))

    def merged(self, defaults):
        return replace(defaults, **{f.name: getattr(self, f.name) for f in fields(self)
                                    if getattr(self, f.name) is not None})


# Hopper tiles for 16-bit inputs, largest first: (block_m, block_n, block_k, num_stages, num_warps, fill).
# benchmarks/gemm.py (results/archive/gemm.csv) measured each against torch.matmul; a tile pays off only when there are
# enough of them, so the default is the largest whose tile count reaches `fill` x the SMs: 3/4 for the 128-row tiles;
# the 4-stage 64x128 tile beat the 64x64 one from 0.4 on (128x4096x2048 0.81 -> 0.95x, 256x2048x4096 0.76 -> 0.81x;
# results/archive/gemm_small_9341c38.csv, where 4 stages also beat the 3 used before at 25 of 27 shapes). With the
# operands' descriptors built on the host, the 128x128 tile gains from 6 stages and 8 warps (512x4096x4096 0.90 ->
# 0.95x, 256x8192x8192 0.89 -> 0.98x, 256x8192x16384 0.86 -> 0.98x; -1 to -4% at three shapes;
# results/archive/gemm_04aeb7e.csv).
HOPPER_TILES = ((128, 256, 64, 3, 8, 0.75), (128, 128, 64, 6, 8, 0.75), (64, 128, 128, 4, 4, 0.4),
                (64, 64, 128, 4, 4, 0))
# FP8 (e4m3, fused_ops/fp8.py): the same tiles over twice the K per block, so a stage holds the same bytes and the
# same number of stages fits in shared memory.
# Decode (M <= 16 rows): the GEMM streams B once; 16-row tiles (Triton's mma.sync path: wgmma needs 64 rows) waste
# less of each program's shared memory and bandwidth on rows that are not there. At M = 1 and 16 (7 shapes of the
# public set) 16x64x256 tiles reached 0.79-0.99x torch.matmul against 0.48-0.94x for the 64-row default; where they
# leave half the SMs idle (<= 66 tiles), 16x64x128 tiles in two slices of K did better (1x4000x4096 0.86 -> 0.87x,
# 16x3584x2368 0.79 -> 0.91x; results/current/gemm/gemm_explore.csv).
DECODE_ROWS = 16
DECODE_TILE = (16, 64, 256, 4, 4)
DECODE_FEW_TILE = (16, 64, 128, 6, 4)
# ... where the GEMM runs alone (fused_ops.matmul: no program waits on another, so its programs need not all be
# resident). Where the tiles outnumber the SMs, one persistent program per SM streams B at about 0.85x torch.matmul's
# rate: each tile starts its pipeline cold, and where they are one wave and a bit (144 on 132 SMs) the last few run
# alone. Three programs per SM, each 3 stages of 16x64x128 (60 KB), overlap one another's starts and ends, and the
# GPU hands a tile to whichever SM frees first (1x9216x7168 0.81 -> 1.06x torch.matmul, 1x12288x1536 0.71 -> 0.92x,
# 1x16384x512 0.70 -> 0.91x); four of 2 stages where the tiles outnumber three per SM but not four (1x32064x4096
# 0.90 -> 0.99x); up to DECODE_MAX_SPLIT slices of K of DECODE_MIN_SLICE_BLOCKS blocks or more while every slice has a
# program (1x9216x16384 in 2: 0.76 -> 1.00x). Where the tiles fit in one wave, one program per SM: in slices of K
# filling that wave (DECODE_FEW_TILE, up to DECODE_FEW_MAX_SPLIT slices of DECODE_FEW_MIN_BLOCKS blocks or more:
# 1x1280x8192 in 6: 0.85 -> 1.10x, 1x2304x16384 in 3: 0.85 -> 0.98x); whole, DECODE_TILE's deep pipeline where K is
# long (a program alone on its SM keeps more of B in flight: 16x5120x2560 0.72 -> 0.86x, 1x5120x2560 0.87 -> 0.98x
# against 3 stages of 128, the all_721 runs at df868fe and ec3b7d6) and
# 128-deep blocks where K is DECODE_SHORT_BLOCKS of them or fewer (1x3584x448 0.77 -> 0.95x). On an H200, each choice
# against the others in one run: results/current/gemm/decode_61a385a/ and the runs it names.
# Between a third of the SMs and all of them (45-132 tiles on 132 SMs), slices of every tile put one or two on each SM:
# the split with the least work on the busiest SM, (slices per SM) x (blocks per slice + DECODE_SLICE_BLOCKS), plus
# DECODE_SPLIT_BLOCKS for the partial sums where there are slices (decode_split). Two slices share an SM only while
# they are short (DECODE_SHARED_SLICE_BLOCKS): where the whole tiles keep enough of B in flight, splitting them gains
# nothing. Slices of DECODE_SHORT_BLOCKS or fewer, and slices sharing an SM, run DECODE_ALONE_TILES[0]'s 3-stage
# programs; longer ones alone on their SM, DECODE_FEW_TILE's 6 stages. Each choice against the others in one run:
# results/current/gemm/decode_d500d6a/.
# (block_m, block_n, block_k, num_stages, num_warps, programs per SM), the first whose programs take every tile
DECODE_ALONE_TILES = ((16, 64, 128, 3, 4, 3), (16, 64, 128, 2, 4, 4))
DECODE_MAX_SPLIT = 2
DECODE_MIN_SLICE_BLOCKS = 12
DECODE_FEW_MAX_SPLIT = 16
DECODE_FEW_MIN_BLOCKS = 5
DECODE_SHORT_BLOCKS = 8
DECODE_SLICE_BLOCKS = 1
DECODE_SPLIT_BLOCKS = 4
DECODE_SHARED_SLICE_BLOCKS = 10
HOPPER_FP8_TILES = tuple((bm, bn, 2 * bk, st, w, fill) for bm, bn, bk, st, w, fill in HOPPER_TILES)
# FP8 with precise accumulation (scaled_mm's default, use_fast_accum=False, as torch._scaled_mm's): Triton promotes the
# tensor cores' partial sums into the fp32 accumulator once per dot (gemm_k_blocks' MAX_IMPRECISE = BLOCK_K), which
# needs a second accumulator and a wait on the MMAs just issued. A 128x256 tile's two fp32 accumulators need 256
# registers a thread at 8 warps: it spills (ptxas: 255 registers, 124 B of spill stores), and ran 1.35-1.55x slower
# than with fast accumulation at M >= 1024. A 128x128 tile over 256-deep K blocks (155 registers, one promotion and one
# wait per 256 products of K; its error matched torch's to 1%) beat it at 26 of the 33 shapes where the 128-row tiles
# were the default (e.g. 4096x4544x4544 0.63 -> 0.75x, 128x12288x1536 0.77 -> 0.92x torch._scaled_mm; geomean of the
# 46 FP8 shapes, best tile per shape: 0.79), and 16-row tiles beat the 64-row ones at decode (16x5120x6912 0.44 ->
# 0.60x, 1x19008x8192 0.78 -> 0.90x; results/current/gemm/fp8_explore_4ef4cd5/). Two or three 64x128 programs per SM
# (one's MMAs running while another waits) did not make up for their smaller tiles (geomean 0.58).
FP8_PRECISE_TILE = (128, 128, 256, 3, 8)
FP8_DECODE_TILE = (16, 64, 256, 4, 4)
# At decode a 16-row FP8 GEMM streams B once; what limits it is how much of the GPU streams it. Wider (16x128) tiles in
# up to FP8_DECODE_MAX_SPLIT slices of K, each of FP8_DECODE_MIN_BLOCKS blocks or more, where tiles x slices fill more
# of one wave of programs than the 64-wide tiles do (fp8_decode_split): 16x5120x6912 0.61 -> 0.87x torch._scaled_mm
# (128-wide tiles in 3 slices: 120 programs, against 80), 4x14336x4096 0.92 -> 0.99x, 1x4000x4096 0.79 -> 0.85x; more
# programs than one wave lost (16x6912x5120 in 3 slices: 162 programs, 0.54x; results/current/gemm/
# fp8_decode_a678c62/, 1x H100).
FP8_DECODE_WIDE_TILE = (16, 128, 256, 4, 4)
# Where even the 128-wide tiles need more than one wave (N > 128 x the programs: vocabulary projections), 256-wide
# ones in one wave, though it leaves SMs idle: 1x19008x8192 0.91 -> 1.10x torch._scaled_mm (75 programs against 2.25
# waves of 64-wide tiles; splitting those into 2-3 slices of K did not help: 0.88-0.90x; results/current/gemm/
# fp8_decode_70c9395/, 1x H100).
FP8_DECODE_WIDEST_TILE = (16, 256, 256, 3, 4)
# Where even those need more than one wave (N > 256 x the SMs: vocabulary projections) and the GEMM runs alone
# (scaled_mm), three programs of 3 stages per SM, as 16-bit decode rows run (DECODE_ALONE_TILES): 1x38016x3584 and
# 1x100544x2880 0.79-0.83 -> 0.98-0.99x torch._scaled_mm against one 64-wide program per SM in one run
# (results/current/gemm/fp8_all/fp8x_decode_*).
FP8_DECODE_ALONE_TILE = (16, 64, 256, 3, 4, 3)
# Few 64x64 tiles (fewer than half the SMs, K short enough to leave them whole): each program's own chain of blocks
# sets the time, and with precise accumulation every block ends in a wait on its MMAs. 512-deep blocks halve the
# waits: 128x640x3584 0.80 -> 0.90x torch._scaled_mm, 128x768x4096 0.81 -> 0.92x, 128x1792x5120 0.86 -> 0.91x; with
# 80 tiles they lost (128x2560x2880 0.95 -> 0.93x); their error 1.7e-3, 1.02x torch's (results/current/gemm/
# few_tiles_h100/, 1x H100).
FP8_FEW_TILE = (64, 64, 512, 3, 4)
FP8_DECODE_MAX_SPLIT = 4
FP8_DECODE_MIN_BLOCKS = 4
# The warp-specialized Gluon kernel on Hopper (fused_ops/wgmma.py: one load warp running ahead across tiles, two to
# four consumer warpgroups of 64 rows) beat the tile loop wherever its 128x128 tiles reached WGMMA_MIN_FILL x the
# SMs (bf16: where the defaults chose 128-row tiles, whose split last waves it beat too; FP8 precise accumulation:
# most of all, since its warpgroups take turns while one promotes its partial sum); with fewer tiles the tile loop's
# split-K and 64/16-row tiles won (results/current/gemm/README.md). Its tiles: (block_m, block_n, block_k, stages,
# cost per output element); wgmma_config takes the one with the fewest waves times tile area times cost (ties: the
# larger tile). 192-row tiles (three consumers) fill one wave where 128-row ones need two (1024x2560x2880 0.67 ->
# 0.85x torch.matmul); FP8 gains from the third warpgroup beyond that (its cost 0.9). The 128x256 tiles keep 3
# stages beside C's staging tiles. bf16 costs: smaller tiles read more operand bytes per product, and the largest
# GEMMs run power-capped. Where waves times area were within a few percent, the 128x128 and 192x128 tiles ran 4-25%
# slower than 128x256 ones on an H100 (16384x16384x8192: 128x256 0.99x torch.matmul, 192x128 0.95x, 128x128 0.82x;
# 4096x32064x4096 1.03, 0.90, 0.85) and 1-3% slower on an H200 (by their own times; results/current/gemm/
# final_8dc2c3c/*/gemm_large.*): 1.05 and 1.1, so that they are picked where they save real waves.
# A width that is no power of two (160) is block_n + rem_cols (128 + 32: wgmma.run(rem=...), a second MMA of N = 32),
# its cost the narrow second MMA's. 1024x2560x2880 fills one wave with 128 such tiles where 192x128 ones left 12 SMs
# idle (0.86 -> 0.92x torch.matmul on an H200, 0.87 -> 0.89x on an H100), and at 128 rows, two waves of them beat
# 128x256 and 128x128 tiles on both GPUs (128x38016x3584: 0.84 -> 0.91x, 0.90 -> 0.96x). Where they need more
# than one wave and more than one row of tiles, they beat 192x128 tiles on an H200 (1024x5120x8192 0.84 -> 0.88x)
# and lost to them on an H100 (129.5 -> 136.0 us), so bf16 takes them only in one wave or one row of tiles
# (results/current/gemm/remcols_e9ef942/moved_*). 256x160 tiles (four consumers, 128 + 32 columns; 32-deep blocks
# so that 5 stages fit beside the staging tiles) fill one wave with 128 tiles where 192x128 ones need two: 4096x1280
# and 1024x5120 at any K, 4096x1152x3584, 1024x4736x3584, 1024x4608x16384 (0.77-0.88 -> 0.82-0.92x torch.matmul
# on an H200 and an H100, each against the old tile in one run: results/current/gemm/four_78f73a0/).
# 16-bit tiles 96 wide (64 + 32 columns) where 128x128 ones leave many SMs idle and these fill most of one wave (in
# WGMMA_TILES at cost 1.4, and where the 128x128 tiles are too few, wgmma_few_tiles):
# 1024x1280, 1024x1440 and 1024x1536 (112-128 tiles against 80-96; 0.79-0.94 -> 0.86-1.00x torch.matmul on an H200,
# against the tile loop's 128x128 tiles in one run), and 512x2816, 768x1792, 2048x640 (0.79-0.85 -> 0.86-0.88x, the
# best of the tile loop's and the Gluon kernel's other tiles; results/current/gemm/wide_tiles_c924e34/x1024b_*,
# mid_rows_*). 80-wide ones (64 + 16) filled more SMs and lost (0.46-0.93x).
WGMMA_96_TILE = (128, 96, 64, 6)
WGMMA_96_FILL = 0.8
# 128x192 tiles (128 + 64 columns) fill one wave where 128x256 ones leave a quarter of the SMs idle: 1024x2880 (120
# tiles against 96) and 1024x3072 (128) at any K, 0.78-0.83 -> 0.93-1.01x torch.matmul; 256x144 ones (128 + 16) fill
# it where 256x160 ones leave a column mostly empty: 4096x1152x3584 0.83 -> 0.87x, 1024x4736x3584 0.90 -> 0.94x (on an
# H200, each against the tile it replaced in one run: results/current/gemm/wide_tiles_c924e34/x1024_*, four144_*).
WGMMA_TILES = ((128, 256, 64, 3, 1.0), (192, 128, 64, 4, 1.05), (128, 128, 64, 6, 1.1),
               (128, 160, 64, 4, 1.2), (256, 160, 32, 5, 1.1), (128, 192, 64, 4, 1.1), (256, 144, 32, 5, 1.1),
               WGMMA_96_TILE + (1.4,))
# 64-wide tiles cost more per element than 128-wide ones (the same operand bytes feed half the MMAs, so they lean on
# L2 and memory bandwidth: the H200 and the H100 disagree). They won where N is 64 (16384x64x4096 0.85 -> 0.98x on an
# H200) and lost wherever else they were tried (results/current/gemm/wgmma_explore/gemm_*_narrow_*) but at
# 1024x2112x7168, where two whole waves of them beat one partial wave of 192x128 tiles on an H200 (0.83 against
# 0.74x) and lost on an H100 (0.58 against 0.76x; wgmma_explore/gemm_bf16_narrow_h100_5ccafd1.*): 1.6, so that only
# N of 64 or less picks them. A candidate only where their last wave is at least WGMMA_NARROW_FILL full.
WGMMA_NARROW_TILE = (128, 64, 64, 8, 1.6)
WGMMA_NARROW_FILL = 0.9
WGMMA_FP8_NARROW_TILE = (128, 64, 128, 8, 1.4)  # FP8 precise accumulation
WGMMA_FP8_TILES = ((192, 128, 128, 4, 0.9), (128, 128, 128, 6, 1.0),   # precise: the sum and a block's partial
                   # ... 144 and 160 wide (rem_cols 16, 32): 1024x2112x7168 0.79 -> 0.89x torch._scaled_mm (120
                   # tiles, one wave, where 192x128 ones left 30 SMs idle), 1024x2560x2880 0.90 -> 0.93x,
                   # 4096x1280x2880 0.87 -> 0.92x (H200, results/current/gemm/remcols_e9ef942/)
                   (128, 144, 128, 4, 1.1), (128, 160, 128, 4, 1.05))
WGMMA_FP8_FAST_TILE = (128, 256, 128, 3)   # fast accumulation: one accumulator, 64x256 per warpgroup
# ... and 256x160 (four consumers, 128 + 32 columns) where they fill one wave or one row of tiles, per-tensor scales
# only (row-wise ones spill in its epilogue): 128 tiles at 4096x1280, 4096x1152, 1024x5120 and 1024x4736 where 128x256
# ones need two waves, 0.62-0.70 -> 0.83-0.92x torch._scaled_mm(use_fast_accum=True) on an H200, each against the
# 128x256 default in one run (results/current/gemm/wide_tiles_c924e34/four_fp8_4e3ca71.csv).
WGMMA_FP8_FAST_FOUR_TILE = (256, 160, 128, 3, 1.1)
# ... and the precise tiles beside them, at the 16-bit tiles' costs (one accumulator, as 16-bit), with the same rules
# where 128x128 tiles are few: at the 91 public GEMMs whose pick this moved, 0.878 -> 0.966x geomean
# torch._scaled_mm(use_fast_accum=True), 35 -> 4 below 0.85x, each against the previous pick in one run (the best
# candidate per shape: 0.969x; results/current/gemm/fp8_all/fp8x_fast_*).
# FP8 tiles counted only where they fill one wave: 128x192 (128 + 64 columns), where 128x128 ones need two waves and
# 128x256 ones leave a quarter of the SMs idle: 1024x2880 and 1024x3072 at K of 720-4096 0.73-0.78 -> 0.97-1.01x
# torch._scaled_mm, fast accumulation 0.77-0.82 -> 0.82-0.98x (results/current/gemm/fp8_all/fp8y_1024_*); in
# two waves they lost (1024x3584: 0.61-0.67 against 0.86-0.89x; 128x50272x2880 fast: 0.90 against 1.02x).
WGMMA_FP8_WAVE_TILES = ((128, 192, 128, 3, 1.1),)
# ... and with precise accumulation 192x64 tiles (three consumers of 64x64), where 72-96 128x128 ones leave SMs idle
# and these fill one wave: 1024x1152x3584, 1024x1280 at K of 2880-8192 0.74-0.87 -> 0.81-0.93x torch._scaled_mm
# cool and 0.70-0.78 -> 0.76-0.90x hot, against the 128x128 tiles in one run each, two runs per GPU (one loss:
# 1024x1280x2880 0.86 -> 0.84x once, on an H100; results/current/gemm/fifth_c112662/xfp8few_*, flips6_*). With fast
# accumulation they won on the H200 and lost 10% at 1024x1280x2880 on the H100; in two waves they lost (0.52-0.55x).
WGMMA_FP8_PRECISE_WAVE_TILES = ((192, 64, 128, 6, 1.3),)
# ... and with fast accumulation, 96-wide tiles (64 + 32 columns) at bf16's cost (WGMMA_96_TILE), where 128x128 ones
# leave SMs idle: at 1024 rows of 1152-1536 columns (72-96 128x128 tiles, 96-128 of these) 0.75-0.87 -> 0.81-0.93x
# torch._scaled_mm(use_fast_accum=True) on an H100 in two runs, 1024x1280x4096 even (0.83 -> 0.81-0.83x), and on an
# H200 6-11% faster by their own times at the five public ones (1024x1440x2880 11.2 -> 10.4 us, 0.80 -> 0.88x); with
# precise accumulation they lost (0.69-0.86 against 0.75-0.85x; results/current/gemm/fp8_all/fp8x96_*). Beyond
# one row of tiles only: at 128 rows (128x12288x1536) the 128x128 tiles, 0.84-0.85x, were not timed against them.
WGMMA_FP8_FAST_96_TILE = (128, 96, 128, 6, 1.4)
WGMMA_FP8_FAST_TILES = (WGMMA_FP8_FAST_TILE + (1.0,), (192, 128, 128, 4, 1.05), (128, 128, 128, 6, 1.1),
                        (128, 144, 128, 4, 1.2), (128, 160, 128, 4, 1.2))
# 16-bit tiles counted only where they fill one wave: 128x288 (256 + 32 columns, 32-deep blocks: 5 stages fit beside
# the staging tiles; two consumers' 64x288 MMAs read less shared memory per product than four consumers' 64x144
# ones). Against the previous picks in one run on an H200: 128x38016 (vocabulary projections, 132 tiles where
# 160-wide ones take two waves) 0.90-0.91 -> 0.97-0.98x torch.matmul, 1024x4608 (128 tiles) and 4096x1152x3584
# (256x144 before) 0.87-0.96 -> 0.95-1.07x; in two waves (128x76032) they lost to 192-wide tiles by 1-3%
# (results/current/gemm/x128wide_85e3013/flips128_*). 320-wide ones fit 2 stages and lost.
WGMMA_WAVE_TILES = ((128, 288, 32, 5, 1.05),)
WGMMA_MIN_FILL = 0.7
# FP8 beyond 128 rows, and at 65-128 rows with precise accumulation (where the tile loop's 128x128 tiles keep two fp32
# accumulators), from half the SMs: 1024x1152 and 1024x1280 (72-80 tiles) 0.63-0.77 -> 0.74-0.80x torch._scaled_mm,
# 128x9216x16384 and 128x9472x3584 0.67-0.76 -> 0.80-0.87x (results/current/gemm/fp8_all/fp8y_*); with 40
# tiles (1024x640) the tile loop's 64x128 tiles won (0.84-0.85 against 0.60-0.82x).
WGMMA_FP8_MIN_FILL = 0.5
# Swap-AB tiles (wgmma.run(swap=True)): C's transpose, B's columns as the MMAs' 64-row blocks, A's rows as their N.
# A tile can then span 256 rows of A with full-width MMAs (non-swapped 256-row tiles cannot: four consumers' 64-wide
# MMAs read the same bytes for half the products) by 64 columns of B with one consumer. (rows of A, columns of B,
# block_k, stages, cost per output element), chosen beside WGMMA_TILES. They win where 64-column tiles fill whole
# waves that no other tile fills, and where B's rows are not 128-byte aligned: a 256-row tile passes over B half as
# often as a 128-row one, so non-swapped tiles cost UNALIGNED_B_COST more there (but 96-wide ones beyond one row of
# tiles: at 1024x1440x2880 they beat the swapped 256x64 tile on both GPUs, 0.77-0.80 -> 0.83-0.85x torch.matmul cool
# and hot; results/current/gemm/fifth_c112662/); elsewhere they tie or lose. The
# costs are the ones that served the public sample best (results/current/gemm/README.md, "Swap-AB tiles").
WGMMA_SWAP_TILES = ((256, 128, 64, 3, 1.1), (256, 64, 64, 4, 1.3))
UNALIGNED_B_COST = 1.3
# FP8 decode rows (M <= DECODE_ROWS): swap-AB tiles of 16 rows by 64 columns, whose MMAs' N is the 16 rows (the tile
# loop's 16-row tiles run mma.sync, with no warp specialization), where they fit in one wave; with more tiles the
# tile loop's 16-row tiles, split along K to fill one wave, won. 256-deep K blocks, with either accumulation (half the
# promotions; the error stayed at torch's; with fast accumulation 16x64x128 8-stage tiles read 0.80-0.85x
# torch._scaled_mm where these read 0.89-0.99x in one run: results/current/gemm/fp8_all/fp8y_decode_*).
WGMMA_FP8_DECODE_TILE = (16, 64, 256, 4)
# ... in slices of K (one per SM, a second kernel adding them) where they leave 4-fold SMs (few_split), and in
# THIRD_SLICES where they leave 3-fold and K has blocks for 3 slices: 36-40 tiles at K of 8-16k, 0.71-0.93 ->
# 1.06-1.29x torch._scaled_mm with either accumulation, against whole tiles in one run; 2 slices lost (56-63 tiles:
# 0.84 against 0.88-0.92x; 40 tiles at K = 2880 with fast accumulation: 0.81-0.82 against 0.88x;
# results/current/gemm/fp8_all/fp8x_decode_*, fp8dec_*). The FP8 split tile of 65-128 rows too (128x2304x16384:
# 0.75 -> 1.06x, fp8y_128_*).
THIRD_SLICES = 3
# bf16 decode rows too, where the swapped 16x64 tiles fit in one wave: 128-deep K blocks, 6 stages, in as many slices of
# K as the SMs hold with DECODE_MIN_SLICE_BLOCKS blocks or more each (decode_slices). The tile loop's 16-row tiles issue
# more instructions per byte of B than TMA and warpgroup MMAs do, so they slow with the SM clock, where torch.matmul's
# decode kernels, bound by memory, do not: right after heavy GEMMs (the power cap's 1455-1845 MHz) 16x3584x4736 ran 9.5
# -> 10.8 us against torch's 9.4 -> 9.5 (results/current/gemm/decode_swap/heat_*.log). These tiles held: at the 11 of 13
# probed decode GEMMs they take, 0.83-1.08x -> 0.89-1.12x torch.matmul cool and 0.83-1.04x -> 0.91-1.14x hot, against
# the tile loop in one run (decode_swap/decode_heat_*.csv). Not where K has fewer than DECODE_SWAP_MIN_BLOCKS blocks (a
# warp-specialized pipeline barely fills; the tile loop's several programs per SM overlap their starts) or the tiles are
# fewer than DECODE_SWAP_MIN_TILES (the tile loop's many short slices fill more SMs; those 30 had lost up to 12%:
# decode_swap/decodeswap_h200_e9da769.csv.gz). At the public set's 236 decode GEMMs, timed against the tile loop's picks
# in one run, the 112 it moves went 0.981 -> 1.005x geomean on an H200, 4 -> 0 below 0.85x, and 0.969 -> 0.968x on an
# H100 (decode_swap/decodeswap_h*_6f25ac6.csv.gz).
WGMMA_DECODE_TILE = (16, 64, 128, 6)
DECODE_SWAP_MIN_BLOCKS = 6
DECODE_SWAP_MIN_TILES = 24
# 17-32 rows, either dtype: 32-row swapped tiles where they take at most two waves. The tile loop pads those rows to
# 64-row tiles (its 16-row ones serve decode rows only); at 64 rows the two ran even (docs/performance.md).
SWAP_ROWS = 32
WGMMA_ROWS_TILE = (32, 64, 128, 6)
WGMMA_FP8_ROWS_TILE = (32, 64, 256, 4)
# Few tiles (the 128x128 tiles fill less than WGMMA_MIN_FILL of the SMs, where the tile loop's split-K and 64-row
# tiles ran): the Gluon kernel's split-K (wgmma.run(split_k=...): each tile's K in slices, one unit of work per SM,
# the fp32 partials added by a second kernel) at 33-128 rows, where its tiles leave at least FEW_TILES-fold SMs to
# the slices: bf16 swapped tiles of 128 rows of A by 64 columns of B (64 rows where there are at most 64, or where
# the 128-row tiles number less than a WGMMA_KDOM_TILES-th of the SMs: K-dominant), FP8 128x64 tiles at 65-128 rows
# and long K (its swapped tiles lose with precise accumulation). Each slice keeps MIN_SLICE_BLOCKS blocks of K or more
# (few_split); the swapped tiles of decode and 17-32 rows split the same way where they are that few. They beat the
# tile loop's splits on both GPUs where their tiles were that few, and tied or lost with more tiles or at 129-256
# rows (results/current/gemm/README.md, "Split-K in the Gluon kernel").
WGMMA_SPLIT_TILE = (128, 64, 64, 6)         # bf16, swapped: rows of A, columns of B, block_k, stages
# ... and where those tiles leave 3-fold SMs (34-44 of them), in THIRD_SLICES, each THIRDS_MIN_BLOCKS blocks of K or
# more: 128x2304x3584 (36 tiles, 19 blocks a slice) 0.94-0.97 -> 1.08x torch.matmul on an H200, 0.80 -> 0.93x on an
# H100; 128x2304x16384 and 128x2560x8192 0.96-1.03 -> 1.02-1.07x. At 15 blocks a slice (128x2560x2880) the tile loop's
# whole 64x64 tiles won on both GPUs (1.00 against 0.90x, 0.97 against 0.85x). With more tiles than that (bf16),
# swapped 128x128 tiles (WGMMA_WIDE_SPLIT_TILE) in THIRD_SLICES where they leave 3-fold SMs and each slice is
# WIDE_THIRDS_MIN_K deep or more: 128x4608x16384 0.89-0.91 -> 1.07-1.10x on an H200, 1.04 -> 1.07x on an H100; at
# 2389-2731 deep slices (128x4608x7168, 128x5120x6912-8192) they ran 0.86-0.91x against 0.89-0.91x (H200;
# results/current/gemm/x128wide_85e3013/, rows128_7900906/). FP8's 128x128 tiles in thirds of 128x4608x16384 won on
# an H200 (0.76 -> 0.88x torch._scaled_mm) and lost on an H100 (0.87 -> 0.82x; fast accumulation 0.92 -> 0.82x): the
# partials add a tenth to the bytes of a GEMM bound by them.
THIRDS_MIN_BLOCKS = 16
WGMMA_WIDE_SPLIT_TILE = (128, 128, 64, 6)   # bf16, swapped
WIDE_THIRDS_MIN_K = 4096
# Between those and a full wave, whole 128x64 tiles (WGMMA_NARROW_TILE; FP8's too) where they are WGMMA_ROWS128_FILL
# of the SMs and a row of A holds WGMMA_ROWS128_MIN_BYTES or more (bf16 K of 6144, FP8 12288). FP8 at
# 128x4608x16384 gained on both GPUs (H100 +7% precise, +1% fast accumulation; H200 +4% and +2% cool, even hot), at
# 128x5120x8192 the GPUs disagreed (H100 +4-8% precise; H200 -3%) (results/current/gemm/fifth_c112662/).
# bf16 at 128x4608x7168 and 128x5120x6912-8192 (72-80 tiles): the tile loop's
# 64x128 tiles read 0.93x torch.matmul on an H100 and 0.88-0.89x on an H200, these 0.97x and 0.94-0.95x, cool and
# right after heavy GEMMs alike. With 64 tiles (128x4096x7168) the two GPUs disagreed (H100 0.88 -> 0.94x, H200
# 0.95 -> 0.92x cool and 0.94 -> 0.81x hot against the tile loop's 2 slices of K); with 56 (128x3584) they lost
# (0.70-0.75 against 0.78-0.96x), and with 112-144 (128x7168x9216, 128x9216x7168) too
# (results/current/gemm/x128wide_85e3013/x128hot_*, flips128b_*).
WGMMA_ROWS128_FILL = (0.5, 0.65)
WGMMA_ROWS128_MIN_BYTES = 12288
WGMMA_SPLIT_KDOM_TILE = (64, 64, 64, 8)
WGMMA_KDOM_TILES = 16
WGMMA_FP8_SPLIT_TILE = (128, 64, 128, 8)    # FP8 precise, not swapped
WGMMA_FP8_SPLIT_MIN_BLOCKS = 64  # ... where K has this many blocks: with fewer the tile loop's 64x64x512 tiles won
# 129-160 rows (bf16): swapped 128x64 tiles 16 or 32 rows of A wider (wgmma.run(rem=...): a second MMA of N = 16 or
# 32), 144 or 160 rows computed where two 128-row tiles computed 256, in slices of K that fill the SMs, where their
# tiles (one per 64 columns of B) are at most half the SMs. On 1x H200 (results/current/gemm/rem_3524dab/):
# 129x4096x4096 0.84 -> 0.92x torch.matmul, 140x1024x8192 0.60 -> 0.94x, 129x2880x2880 0.76 -> 0.82x, 144 and 160
# rows of 4096x4096 1.08 -> 1.15x and 1.27 -> 1.32x; with 224 tiles (129x14336x4096) they lost (0.84 against 0.88x).
WGMMA_REM_TILE = (128, 64, 64, 6)  # swapped: rows of A, columns of B, block_k, stages
WGMMA_REM_ROWS = (16, 32)
# FP8 (precise accumulation): the same swapped tiles only where they number at most a FEW_TILES-th of the SMs
# (140x1024x8192: 0.79 -> 0.98x torch._scaled_mm); with more (129x4096x4096, 64 tiles; 129x2880x2880; 160x4096x4096)
# they lost to the tile loop by 5-10% (H200, results/current/gemm/remcols_e9ef942/fp8_rows_f534825.*).
WGMMA_FP8_REM_TILE = (128, 64, 128, 6)
# Rows past a multiple of 64 at 129-255 rows, where whole 128x64 Gluon tiles fill one wave to at least
# WGMMA_NARROW_FILL: its edge boxes move back inside A (wgmma.inside), where the tile loop's 64-row tiles load past
# A's last row, which TMA serves far slower (results/current/gemm/README.md, "Rows past the edge").
EDGE_ROWS_MAX = 256


def decode_slices(tiles, sms, k, block_k):
    """split_k of bf16 decode rows' swapped tiles (WGMMA_DECODE_TILE): as many slices of K as the SMs hold, each
    DECODE_MIN_SLICE_BLOCKS blocks or more (33 tiles of 56 blocks: 4; 56 of 37: 2; 56 of 19: 1)."""
    return max(1, min(sms // tiles, -(-k // block_k) // DECODE_MIN_SLICE_BLOCKS))


def few_split(tiles, sms, k, block_k, thirds=False, third_blocks=None):
    """split_k of the Gluon kernel's tiles where they leave FEW_TILES-fold SMs or more: one unit of work per SM, each
    slice MIN_SLICE_BLOCKS blocks of K or more; thirds: also THIRD_SLICES where they leave that many-fold SMs and K
    has third_blocks (MIN_SLICE_BLOCKS) blocks for each; else 1."""
    if thirds and tiles * FEW_TILES > sms >= tiles * THIRD_SLICES:
        return THIRD_SLICES if -(-k // block_k) >= THIRD_SLICES * (third_blocks or MIN_SLICE_BLOCKS) else 1
    if tiles * FEW_TILES > sms:
        return 1
    return max(1, min(sms // tiles, -(-k // block_k) // MIN_SLICE_BLOCKS))


def wgmma_few_tiles(cfg, m, n, k, sms, fp8):
    """The Gluon kernel's config where its 128x128 tiles are too few for the SMs (see WGMMA_SPLIT_TILE,
    WGMMA_REM_TILE and EDGE_ROWS_MAX), or None (the tile loop). Host only, free."""
    def tiles(tile):
        return -(-m // tile[0]) * -(-n // tile[1])
    if (64 if fp8 else SWAP_ROWS) < m <= 128:
        tile = WGMMA_FP8_SPLIT_TILE if fp8 else WGMMA_SPLIT_TILE
        if fp8 and -(-k // tile[2]) < WGMMA_FP8_SPLIT_MIN_BLOCKS:
            return None
        if not fp8 and (m <= 64 or tiles(tile) * WGMMA_KDOM_TILES <= sms):
            tile = WGMMA_SPLIT_KDOM_TILE
        split = few_split(tiles(tile), sms, k, tile[2], True, MIN_SLICE_BLOCKS if fp8 else THIRDS_MIN_BLOCKS)
        if split > 1:
            return replace(gluon_tile(cfg, *tile, swap=not fp8), split_k=split)
        if m <= 64:
            return None
        wide = tiles(WGMMA_WIDE_SPLIT_TILE)  # bf16, more tiles: 128 columns of B each, in thirds of a long K
        if not fp8 and wide * FEW_TILES > sms >= wide * THIRD_SLICES and k >= THIRD_SLICES * WIDE_THIRDS_MIN_K:
            return replace(gluon_tile(cfg, *WGMMA_WIDE_SPLIT_TILE, swap=True), split_k=THIRD_SLICES)
        low, high = WGMMA_ROWS128_FILL  # ... or whole 128x64 tiles from half the SMs
        narrow = WGMMA_FP8_NARROW_TILE if fp8 else WGMMA_NARROW_TILE
        if k * (1 if fp8 else 2) >= WGMMA_ROWS128_MIN_BYTES and low * sms <= tiles(narrow) <= high * sms:
            return gluon_tile(cfg, *narrow[:4], swap=False)
        return None
    rem = next((r for r in WGMMA_REM_ROWS if m <= WGMMA_REM_TILE[0] + r), None)
    tile = WGMMA_FP8_REM_TILE if fp8 else WGMMA_REM_TILE
    if m > tile[0] and rem is not None and (not fp8 or -(-n // tile[1]) * FEW_TILES <= sms):
        few = -(-n // tile[1])
        split = min(sms // few, -(-k // tile[2]) // MIN_SLICE_BLOCKS)
        if split >= 2:
            return replace(gluon_tile(cfg, *tile, swap=True), split_k=split, rem_rows=rem)
    narrow = WGMMA_FP8_NARROW_TILE if fp8 else WGMMA_NARROW_TILE
    if 128 < m < EDGE_ROWS_MAX and m % 64 and WGMMA_NARROW_FILL * sms <= tiles(narrow) <= sms:
        return gluon_tile(cfg, *narrow[:4], swap=False)
    if not fp8 and WGMMA_96_FILL * sms <= tiles(WGMMA_96_TILE) <= sms:
        return gluon_tile(cfg, *WGMMA_96_TILE, swap=False)
    return None


# A persistent grid runs its tiles in waves of one per program, and a last wave that is partly empty costs a whole one.
# A 128x128 tile (6 stages, 8 warps) takes 0.48-0.55 of a 128x256 tile's time (median 0.51 over the 40 GEMMs a rank
# runs in the 2-GPU default sweep, results/current/gemm/wave_a8219b8/), so it is the better pick where its waves times
# this cost come to fewer than the 128x256 tile's waves: at the three such GEMMs, 1.11-1.19x (4096x2304x36864 0.74 ->
# 0.88x torch.matmul), and no other GEMM of the 40 switches.
HALF_TILE_COST = 0.52
# ... at long K. Each tile also pays a fixed cost (filling the pipeline, the epilogue), about TILE_OVERHEAD_BLOCKS
# blocks of K: at K of 360-4544 the 128x128 tile took 0.55-0.79 of a 128x256 tile's time (the public shape set,
# results/current/gemm/gemm_explore.csv), and choosing it by the long-K figure cost up to 0.73 -> 0.88x torch.matmul
# (16384x2880x2048). half_tile_cost folds that in.
TILE_OVERHEAD_BLOCKS = 9


# The 64x128 tile (4 warps) takes about 0.6-0.7 of a 128x128 tile's time (128x12288x1536: 2 waves of it 17.3 us, 1
# wave of 128x128 tiles 14.4 us; 1024x896x5120: 20.6 vs 29.0 us, both in 1 wave; results/current/gemm/edge_eb7d296/).
# Where it needs more waves than the 128x128 tile by more than that (192 tiles over 132 SMs where 96 128x128 tiles
# fit in one wave: 0.81 -> 0.99x torch.matmul, results/current/gemm/final_e9cb8e8/), the larger tile is the pick,
# though its one wave leaves SMs idle.
QUARTER_TILE_COST = 0.65


def half_tile_cost(k, block_k):
    """A 128x128 tile's time in 128x256 tiles at this K (HALF_TILE_COST at long K, more where K is short)."""
    kb = -(-k // block_k)
    return (HALF_TILE_COST * kb + TILE_OVERHEAD_BLOCKS) / (kb + TILE_OVERHEAD_BLOCKS)
# Or, for variants whose GEMM loop splits tiles (registry split_k), keep the large tile and split only the last wave's
# tiles along K (Config.split_tail), one slice per program: that wave then costs 1/split_k of a tile, plus the fixup
# (each slice stores an fp32 partial tile, the last one reads them all back), about what PARTIAL_BLOCKS blocks of K
# cost per partial. Picked only where the model says it saves TAIL_MARGIN of the time: the 1-GPU measurements of the
# 40 per-rank GEMMs (results/current/gemm/wave_38b2d51/) scatter by about that much from config to config. There it took
# 4096x2304x36864 from 0.75 (128x256 tiles) and 0.88 (128x128) to 1.00x torch.matmul; at short K its fixup costs more
# than it saves (16384x8192x4096, 8 slices of 8 blocks: 1.00 -> 0.97x), which the model now declines.
PARTIAL_BLOCKS = 4
TAIL_MARGIN = 0.97
MAX_TAIL_SPLIT = 8
MIN_SLICE_BLOCKS = 8


def tail_split(tiles, programs, k, block_k):
    """split_k for the tiles of the last, partial wave: as many slices as the programs that wave leaves idle can take
    (1 where there is no partial wave after a full one)."""
    waves, tail = divmod(tiles, programs)
    if waves == 0 or tail == 0:
        return 1
    return max(1, min(programs // tail, MAX_TAIL_SPLIT, -(-k // block_k) // MIN_SLICE_BLOCKS))


# Where even the smallest tile leaves most programs idle (tiles <= programs / FEW_TILES: K >> M x N, e.g. 128 x 128 x
# 65536 ran 0.10x torch.matmul on 4 whole tiles, results/current/gemm/), every tile is split along K (plain split-K)
# into as many slices as the programs take (at most MAX_SPLIT), each of at least MIN_SLICE_BLOCKS blocks: such a GEMM
# streams A and B once and needs every SM's loads in flight. With the slices summed in order by the last one in, 16
# slices beat 33 (128x128x65536 0.47 -> 0.59x, 64x256x131072 0.78 -> 0.87x); with more than gemm.SERIAL_SLICES
# slices they add up by atomics and all the programs take part: 33 slices of 4 tiles, 0.59 -> 0.74x and 0.87 -> 1.03x
# (median of 3 runs, results/current/gemm/final_e9cb8e8/). At 64 tiles (about half the SMs) whole 64x128 tiles won
# (results/archive/gemm_small_21da4a4.csv), hence the margin. The smallest 16-bit tile (64x64, the pick where the
# others are fewer still) splits where its tiles leave half the programs idle (SMALLEST_FEW_TILES): 34-66 of them
# over a long K ran 0.55-0.97x torch.matmul whole and 0.76-1.12x in 2 or 3 slices (128x1536x8192 0.55 -> 0.76x,
# 128x1152x7168 0.61 -> 0.96x, 128x2048x8192 0.76 -> 0.99x, 192x1024x4096 0.83 -> 0.99x; with more slices than one
# wave, 0.5-0.6x; results/current/gemm/split2_9129768/).
FEW_TILES = 4
SMALLEST_FEW_TILES = 2
MAX_SPLIT = 64


def few_tiles_split(tiles, programs, k, block_k, m=None, few=FEW_TILES):
    """split_k of plain split-K where the tiles are few (at most programs / `few`; decode rows, m <= DECODE_ROWS: 2
    where they leave half the programs idle), else 1."""
    if m is not None and m <= DECODE_ROWS and tiles * few > programs:
        return 2 if tiles * 2 <= programs and -(-k // block_k) >= 4 else 1
    if tiles * few > programs:
        return 1
    return max(1, min(programs // tiles, MAX_SPLIT, -(-k // block_k) // MIN_SLICE_BLOCKS))


TILE_FIELDS = ("block_m", "block_n", "block_k", "gemm_sms")  # what a split of K is computed for


def resolve(cfg, user, m, n_local, k):
    """The merged config made coherent. A caller's split_k without split_tail is plain split-K, as it always was; with
    split_k unset, split_tail (the caller's or the default's) gets the split_k of these tiles' last wave (the
    default's may be for other tiles or programs), a default's plain split-K (split_k > 1, few tiles) stands, or
    where the caller changed the tiles or programs becomes the split_k of these tiles, and split_tail=False means
    whole tiles."""
    if user is not None and user.split_k is not None:
        return cfg if user.split_tail is not None else replace(cfg, split_tail=False)
    tiles = -(-m // (cfg.block_m + (cfg.rem_rows or 0))) * -(-n_local // (cfg.block_n + (cfg.rem_cols or 0)))
    if cfg.split_tail:
        return replace(cfg, split_k=tail_split(tiles, cfg.gemm_sms, k, cfg.block_k))
    if cfg.split_k == 1 or (user is not None and user.split_tail is not None):
        return replace(cfg, split_k=1)
    if user is None or all(getattr(user, name) is None for name in TILE_FIELDS):
        return cfg  # the defaults' own split of their own tiles (e.g. fp8_decode_split's)
    return replace(cfg, split_k=few_tiles_split(tiles, cfg.gemm_sms, k, cfg.block_k, m))


def decode_alone(m, n, k, sms):
    """(Config fields, split_k) of 16-bit decode rows (m <= DECODE_ROWS) for a GEMM that runs alone. More tiles than
    SMs: DECODE_ALONE_TILES, several programs per SM. Fewer: in slices of K (fewer than a third of the SMs: filling
    one wave; else decode_split's), short ones or those sharing an SM in DECODE_ALONE_TILES[0]'s programs, longer
    ones in one DECODE_FEW_TILE program per SM; or whole, DECODE_TILE (DECODE_ALONE_TILES[0]'s where K is short).
    Host only, free."""
    tiles, blocks = -(-m // DECODE_FEW_TILE[0]) * -(-n // DECODE_FEW_TILE[1]), -(-k // DECODE_FEW_TILE[2])
    shallow = DECODE_ALONE_TILES[0]
    if tiles > sms:
        bm, bn, bk, stages, warps, per = next((t for t in DECODE_ALONE_TILES if tiles <= t[5] * sms), shallow)
        split = max(1, min(DECODE_MAX_SPLIT, per * sms // tiles, blocks // DECODE_MIN_SLICE_BLOCKS))
        return dict(block_m=bm, block_n=bn, block_k=bk, num_stages=stages, num_warps=warps, gemm_sms=per * sms), split
    mid = tiles * 3 > sms
    split = (decode_split(tiles, blocks, sms) if mid else
             max(1, min(DECODE_FEW_MAX_SPLIT, sms // tiles, blocks // DECODE_FEW_MIN_BLOCKS)))
    if split == 1:
        per, tile = 1, shallow[:5] if blocks <= DECODE_SHORT_BLOCKS else DECODE_TILE
    elif mid and (tiles * split > sms or -(-blocks // split) <= DECODE_SHORT_BLOCKS):
        per, tile = shallow[5], shallow[:5]
    else:
        per, tile = 1, DECODE_FEW_TILE
    bm, bn, bk, stages, warps = tile
    return dict(block_m=bm, block_n=bn, block_k=bk, num_stages=stages, num_warps=warps, gemm_sms=per * sms), split


def decode_split(tiles, blocks, sms):
    """Slices of K for sms/3 to sms decode tiles: the least (slices on the busiest SM) x (blocks per slice +
    DECODE_SLICE_BLOCKS), plus DECODE_SPLIT_BLOCKS where split; slices of DECODE_FEW_MIN_BLOCKS blocks or more, at
    most two on an SM, and two only where DECODE_SHARED_SLICE_BLOCKS or shorter. Host only, free."""
    best, split = blocks + DECODE_SLICE_BLOCKS, 1
    for s in range(2, min(DECODE_FEW_MAX_SPLIT, blocks // DECODE_FEW_MIN_BLOCKS) + 1):
        busiest, length = -(-tiles * s // sms), -(-blocks // s)
        if busiest > 2:
            break
        cost = busiest * (length + DECODE_SLICE_BLOCKS) + DECODE_SPLIT_BLOCKS
        if (busiest == 1 or length <= DECODE_SHARED_SLICE_BLOCKS) and cost < best:
            best, split = cost, s
    return split


# The 64-row tiles where they are the pick: 64x128 or 64x64, whole or (variants that split tiles) in up to
# ROW_TILE_MAX_SPLIT slices of K that keep to one program each, for the fewest waves x tile area x cost x (blocks of
# K per slice + TILE_OVERHEAD_BLOCKS). 64x64 tiles cost ROW_TILE_NARROW_COST per element: at 128 rows they beat the
# 64x128 tiles wherever both fit in one wave (128x3584x1792 0.83 -> 1.01x torch.matmul, 128x4096x2048 1.03 -> 1.22x,
# 128x4000x4096 0.85 -> 0.96x on an H200), and slices of 64x128 tiles beat both where they are few and K long
# (128x2304x16384 in 3: 0.64 -> 0.99x, 128x3584x9472 in 2: 0.79 -> 1.01x). Over 26 GEMMs of 128 rows, each candidate
# timed in one run per GPU, the choice at cost 1.15 reached 0.948x (H200) and 0.970x (H100) geomean among these tiles,
# against 0.945x and 0.962x at 1.2 (results/current/gemm/rows128_7900906/). FP8 takes the same choice of whole tiles
# (128x3456-4096 at K of 4736-7168: 64x64 tiles 1.00-1.13x torch._scaled_mm against 0.77-0.88x for 64x128;
# results/current/gemm/fp8_all/fp8y_128_*).
ROW_TILE_NARROW_COST = 1.15
ROW_TILE_MAX_SPLIT = 4


def row_tile(m, n, k, programs, split, table=HOPPER_TILES):
    """((block_m, block_n, block_k, num_stages, num_warps), split_k) of the 64-row tiles (ROW_TILE_NARROW_COST) of
    `table` (FP8: HOPPER_FP8_TILES). Host only, free."""
    options = []
    for tile, cost in ((table[2], 1.0), (table[3], ROW_TILE_NARROW_COST)):
        bm, bn, bk = tile[:3]
        tiles, blocks = -(-m // bm) * -(-n // bn), -(-k // bk)
        for s in range(1, (ROW_TILE_MAX_SPLIT if split else 1) + 1):
            if s > 1 and (tiles * s > programs or blocks // s < MIN_SLICE_BLOCKS):
                break
            waves = -(-tiles * s // programs)
            options.append((waves * bm * bn * cost * (blocks / s + TILE_OVERHEAD_BLOCKS), s, tile[:5]))
    _, s, tile = min(options)
    return tile, s


def default_config(ctx, m, n_local, k, dtype, comm_programs=False, split=False, alone=False):
    """Per-device defaults. CPU: small tiles keep the interpreter quick. Hopper: the 128x256x64, 3-stage, 8-warp
    persistent configuration (0.93-1.07x torch.matmul at M >= 1024); smaller tiles where that leaves SMs idle (M <=
    512: 0.85-1.10x), or where its last wave would leave many idle (HALF_TILE_COST). Whole tiles: split-K
    (Config(split_k=2)) was the default where rows are few and K long until whole 64x128x128 tiles beat it at all
    three shapes where it applied, once the GEMM's descriptors came from the host and it stopped letting the next
    kernel in at its start (128x8192x8192 0.86 -> 1.00x, 256x4096x8192 0.91 -> 1.03x, 128x8192x16384 1.04 -> 1.12x;
    results/archive/gemm_small_21da4a4.csv). comm_programs: the variant gives comm_sms of the SMs to communication
    programs, so its GEMM gets the rest. split: its GEMM loop can split tiles, so the last wave may be split instead
    (PARTIAL_BLOCKS). alone: the GEMM runs alone, none of its programs waits on another (fused_ops.matmul), so decode
    rows may run more programs than SMs (decode_alone)."""
    sms = ctx.get_cu_count() // ctx.ranks_per_device  # ranks sharing a GPU share its SMs: spinning grids must fit
    if ctx.backend == "cpu":
        return Config(block_m=32, block_n=32, block_k=32, group_m=4, gemm_sms=sms, comm_sms=2, num_stages=1,
                      num_warps=4, tma=False, split_k=1, split_tail=False)
    comm = min(16, max(1, sms // 4))
    gemm = sms - comm if comm_programs else sms
    if dtype == torch.float32:
        small = m <= 512
        return Config(block_m=64 if small else 128, block_n=128, block_k=32, group_m=8, gemm_sms=gemm, comm_sms=comm,
                      num_stages=4 if small else 3, num_warps=4 if small else 8, tma=None, split_k=1,
                      split_tail=False)
    table = HOPPER_FP8_TILES if dtype == torch.float8_e4m3fn else HOPPER_TILES
    if m <= DECODE_ROWS and table is HOPPER_TILES and alone:
        fields, s = decode_alone(m, n_local, k, sms)
        return Config(**fields, group_m=8, comm_sms=comm, tma=None, split_k=s if split else 1, split_tail=False)
    if m <= DECODE_ROWS and table is HOPPER_TILES:
        bm, bn, bk, stages, warps = DECODE_TILE
        if split and few_tiles_split(-(-m // bm) * -(-n_local // bn), gemm, k, DECODE_FEW_TILE[2], m) > 1:
            bm, bn, bk, stages, warps = DECODE_FEW_TILE  # too few tiles for the SMs: slices of K
            return Config(block_m=bm, block_n=bn, block_k=bk, group_m=8, gemm_sms=gemm, comm_sms=comm,
                          num_stages=stages, num_warps=warps, tma=None,
                          split_k=few_tiles_split(-(-m // bm) * -(-n_local // bn), gemm, k, bk, m), split_tail=False)
        return Config(block_m=bm, block_n=bn, block_k=bk, group_m=8, gemm_sms=gemm, comm_sms=comm, num_stages=stages,
                      num_warps=warps, tma=None, split_k=1, split_tail=False)
    tiles = lambda bm, bn: -(-m // bm) * -(-n_local // bn)  # noqa: E731
    for bm, bn, bk, stages, warps, fill in table:
        if tiles(bm, bn) >= fill * sms:
            break
    waves = lambda bm, bn: -(-tiles(bm, bn) // gemm)  # noqa: E731
    if (bm, bn) == table[2][:2] and waves(bm, bn) * QUARTER_TILE_COST > waves(*table[1][:2]):
        bm, bn, bk, stages, warps, fill = table[1]  # the 64-row tile would take more waves than it saves
    if (bm, bn) not in (table[0][:2], table[1][:2]):
        few = SMALLEST_FEW_TILES if table is HOPPER_TILES and (bm, bn) == table[-1][:2] else FEW_TILES
        s = few_tiles_split(tiles(bm, bn), gemm, k, bk, few=few) if split else 1
        if table is HOPPER_TILES and s <= ROW_TILE_MAX_SPLIT:  # (more slices: K >> M x N, plain split-K as it was)
            (bm, bn, bk, stages, warps), s = row_tile(m, n_local, k, gemm, split)
        elif s == 1:  # FP8: whole tiles (its slices lost: results/current/gemm/fp8_all/fp8y_128_*)
            (bm, bn, bk, stages, warps), _ = row_tile(m, n_local, k, gemm, False, table)
        return Config(block_m=bm, block_n=bn, block_k=bk, group_m=8, gemm_sms=gemm, comm_sms=comm, num_stages=stages,
                      num_warps=warps, tma=None, split_k=s, split_tail=False)
    # the large tile (where it fills the SMs) or the half one, each in whole waves (cost in large-tile waves) or with
    # its last wave split (1/s of a wave plus the fixup), where the split saves TAIL_MARGIN of the best whole cost
    costs = {}
    for name, (tbm, tbn, tbk, *_), factor in (("whole", table[0], 1.0), ("half", table[1], half_tile_cost(k, bk))):
        costs[name] = waves(tbm, tbn) * factor
        s = tail_split(tiles(tbm, tbn), gemm, k, tbk) if split else 1
        if s > 1:
            costs[name + " tail"] = factor * (tiles(tbm, tbn) // gemm + 1 / s + (s + 1) * PARTIAL_BLOCKS / -(-k // tbk))
    whole = min(c for n, c in costs.items() if not n.endswith("tail"))
    tails = {n: c for n, c in costs.items() if n.endswith("tail") and c < TAIL_MARGIN * whole}
    options = tails or {n: c for n, c in costs.items() if not n.endswith("tail")}
    pick = min(options, key=lambda name: (options[name], name.startswith("half")))
    bm, bn, bk, stages, warps, _ = table[1] if pick.startswith("half") else table[0]
    tail = pick.endswith("tail")
    return Config(block_m=bm, block_n=bn, block_k=bk, group_m=8, gemm_sms=gemm, comm_sms=comm, num_stages=stages,
                  num_warps=warps, tma=None,
                  split_k=tail_split(tiles(bm, bn), gemm, k, bk) if tail else 1, split_tail=tail)


def fp8_decode_split(m, n, k, programs):
    """(tile, split_k) of FP8 decode rows (m <= DECODE_ROWS): of the 128- and 64-wide 16-row tiles in 1 to
    FP8_DECODE_MAX_SPLIT slices of K (FP8_DECODE_MIN_BLOCKS blocks each or more), the one whose tiles x slices fill most
    of one wave of `programs` (ties: the wider tile, then fewer slices). Where neither fits one wave,
    FP8_DECODE_WIDEST_TILE whole if its tiles do. Where the 64-wide tiles are few (a long K over a narrow N: plain
    split-K into many slices) or no tile fits one wave, FP8_DECODE_TILE as few_tiles_split slices it. Host only,
    free."""
    best = None
    narrow = -(-m // FP8_DECODE_TILE[0]) * -(-n // FP8_DECODE_TILE[1])
    for tile in (FP8_DECODE_WIDE_TILE, FP8_DECODE_TILE) if narrow * FEW_TILES > programs else ():
        tiles, blocks = -(-m // tile[0]) * -(-n // tile[1]), -(-k // tile[2])
        for split in range(1, FP8_DECODE_MAX_SPLIT + 1):
            if tiles * split > programs or (split > 1 and blocks < FP8_DECODE_MIN_BLOCKS * split):
                break
            if best is None or tiles * split > best[0]:
                best = (tiles * split, tile, split)
    widest = -(-m // FP8_DECODE_WIDEST_TILE[0]) * -(-n // FP8_DECODE_WIDEST_TILE[1])
    if best is None and narrow * FEW_TILES > programs and widest <= programs:
        return FP8_DECODE_WIDEST_TILE, 1
    if best is None:
        return FP8_DECODE_TILE, few_tiles_split(narrow, programs, k, FP8_DECODE_TILE[2], m)
    return best[1], best[2]


def fp8_defaults(cfg, m, n, k, fast=False, alone=False):
    """FP8 defaults (default_config's, for scaled_mm) made for FP8 on GPUs: at decode (m <= DECODE_ROWS), 16-row tiles
    and slices of K filling one wave (fp8_decode_split; where the GEMM runs alone and no tile fits one wave,
    FP8_DECODE_ALONE_TILE's programs, several per SM); with precise accumulation, where they chose a 128-row tile,
    FP8_PRECISE_TILE in whole tiles, and where they chose 64x64 tiles for fewer than half the SMs, FP8_FEW_TILE
    (whole, where its blocks are too few to slice); plain split-K (few tiles) and the other 64-row tiles as they
    were. Host only, free."""
    tiles, programs = -(-m // 64) * -(-n // 64), cfg.gemm_sms
    if (not fast and (cfg.block_m, cfg.block_n) == (64, 64) and m > DECODE_ROWS and 2 * tiles <= cfg.gemm_sms
            and few_tiles_split(tiles, cfg.gemm_sms, k, FP8_FEW_TILE[2]) == 1):
        (bm, bn, bk, stages, warps), split = FP8_FEW_TILE, 1
    elif cfg.split_k > 1 and not cfg.split_tail:
        return cfg
    elif m <= DECODE_ROWS:
        (bm, bn, bk, stages, warps), split = fp8_decode_split(m, n, k, cfg.gemm_sms)
        if alone and (bm, bn, split) == FP8_DECODE_TILE[:2] + (1,) and -(-n // FP8_DECODE_WIDEST_TILE[1]) > programs:
            (bm, bn, bk, stages, warps), programs = FP8_DECODE_ALONE_TILE[:5], FP8_DECODE_ALONE_TILE[5] * programs
    elif cfg.block_m == 128 and not fast:
        (bm, bn, bk, stages, warps), split = FP8_PRECISE_TILE, 1
    else:
        return cfg
    return replace(cfg, block_m=bm, block_n=bn, block_k=bk, num_stages=stages, num_warps=warps, split_k=split,
                   split_tail=False, gemm_sms=programs)


def fp8_catalog_defaults(cfg, m, n, k, split):
    """fp8_defaults for a catalog op's FP8 GEMM (fused_ops/problem.py; always precise: its epilogue scales and
    promotes every block of K), on GPUs: the 128-row tiles' two fp32 accumulators spilled there as in scaled_mm's
    tile loop. Decode rows keep default_config's tiles where the variant cannot split them (split False): the
    one-wave rule counts on slices of K. Host only, free."""
    if m <= DECODE_ROWS and not split:
        return cfg
    return fp8_defaults(cfg, m, n, k)


def swapped_rows_tile(m, fp8):
    """The swapped tile (rows of A, columns of B, block_k, stages) for few rows: decode rows and 17-32 rows of either
    dtype (either accumulation); None elsewhere."""
    if m <= DECODE_ROWS:
        return WGMMA_FP8_DECODE_TILE if fp8 else WGMMA_DECODE_TILE
    if m <= SWAP_ROWS:
        return WGMMA_FP8_ROWS_TILE if fp8 else WGMMA_ROWS_TILE
    return None


def wgmma_config(cfg, m, n, sms, dtype, fast=False, force=False, b_aligned=True, k=None, row_scales=False):
    """The Gluon kernel's config for an m x n output where `cfg` holds the tile loop's defaults: FP8 (either
    accumulation) where 128x128 tiles reach WGMMA_MIN_FILL x `sms`; 16-bit where the defaults chose 128-row tiles
    (whole, or the last wave split: the Gluon kernel's tile choice beat the split tails) and 128x128 tiles reach it;
    decode rows (m <= DECODE_ROWS) where swap-AB 16x64 tiles fit in one wave, and 17-32 rows where 32x64 ones fit
    in two (swapped_rows_tile). The tile: the fewest waves times area times cost
    (WGMMA_TILES and 16-bit WGMMA_SWAP_TILES; FP8: WGMMA_FP8_TILES, with fast accumulation WGMMA_FP8_FAST_TILES; the
    dtype's narrow tile where its waves are nearly full). b_aligned: B's rows are 128-byte aligned (else non-swapped
    tiles cost UNALIGNED_B_COST more). k (where given): where the 128x128 tiles are fewer, split-K or edge-row tiles
    (wgmma_few_tiles). None elsewhere: gemm.py's tile loop runs those. force: the dtype's pick wherever
    (kernel="wgmma"). row_scales: FP8 with row-wise scales (no WGMMA_FP8_FAST_FOUR_TILE). Host only, free."""
    fp8 = dtype == torch.float8_e4m3fn
    few_rows = swapped_rows_tile(m, fp8)
    if few_rows is not None and (force or -(-n // few_rows[1]) <= (1 if m <= DECODE_ROWS else 2) * sms):
        tile = gluon_tile(cfg, *few_rows, swap=True)  # where they are few and K long (k given): in slices of K
        tiles = -(-n // few_rows[1])
        if k is None:
            split = 1
        elif m <= DECODE_ROWS and not fp8:
            if not force and (-(-k // few_rows[2]) < DECODE_SWAP_MIN_BLOCKS or tiles < DECODE_SWAP_MIN_TILES):
                return None  # short K or few tiles: the tile loop's programs
            split = decode_slices(tiles, sms, k, few_rows[2])
        else:
            split = few_split(tiles, sms, k, few_rows[2], m <= DECODE_ROWS)
        return replace(tile, split_k=split) if split > 1 else tile
    if fp8 and fast:
        tiles = WGMMA_FP8_FAST_TILES + (() if row_scales else (WGMMA_FP8_FAST_FOUR_TILE,))
        tiles += (WGMMA_FP8_FAST_96_TILE,) if m > WGMMA_FP8_FAST_96_TILE[0] else ()
    else:
        tiles = WGMMA_FP8_TILES if fp8 else WGMMA_TILES
    narrow = WGMMA_FP8_NARROW_TILE if fp8 else WGMMA_NARROW_TILE
    waves = -(-m // narrow[0]) * -(-n // narrow[1]) / sms
    if waves % 1 == 0 or waves % 1 >= WGMMA_NARROW_FILL:
        tiles = tiles + (narrow,)
    if not force:
        if m <= DECODE_ROWS:
            return None
        squares = -(-m // 128) * -(-n // 128)
        if squares < WGMMA_MIN_FILL * sms:
            few = None if k is None else wgmma_few_tiles(cfg, m, n, k, sms, fp8)
            if few is not None or not (fp8 and (m > 128 or not fast) and squares >= WGMMA_FP8_MIN_FILL * sms):
                return few
        if not fp8 and cfg.block_m != 128:
            return None
    if not fp8 or fast:  # 16-bit and FP8 fast widths between powers of two: in one wave, or in one row of tiles
        tiles = tuple(t for t in tiles if t[1] & (t[1] - 1) == 0 or m <= t[0] or -(-m // t[0]) * -(-n // t[1]) <= sms)
    precise = () if fast or row_scales else WGMMA_FP8_PRECISE_WAVE_TILES  # (row-wise scales: not timed on them)
    waves = WGMMA_FP8_WAVE_TILES + precise if fp8 else WGMMA_WAVE_TILES
    tiles += tuple(t for t in waves if -(-m // t[0]) * -(-n // t[1]) <= sms)
    tiles = [t + (False,) for t in tiles]
    if not b_aligned:  # (but 96-wide tiles beyond one row of them: not dearer there)
        tiles = [t[:4] + (t[4] * (1 if t[:4] == WGMMA_96_TILE and m > t[0] else UNALIGNED_B_COST), False)
                 for t in tiles]
    if not fp8:
        tiles += [t + (True,) for t in WGMMA_SWAP_TILES]

    def cost(tile):
        bm, bn, _, _, w, _ = tile
        return -(-(-(-m // bm) * -(-n // bn)) // sms) * bm * bn * w, -bm * bn
    bm, bn, bk, stages, _, swap = min(tiles, key=cost)
    return gluon_tile(cfg, bm, bn, bk, stages, swap)


def gluon_tile(cfg, block_m, block_n, block_k, stages, swap):
    """cfg running one Gluon tile: whole tiles, 4 warps per consumer warpgroup; a width that is no power of two as
    the largest power of two below it plus rem_cols (160: 128 + 32)."""
    width = 1 << (block_n.bit_length() - 1)
    return replace(cfg, block_m=block_m, block_n=width, block_k=block_k, num_stages=stages, num_warps=4, split_k=1,
                   split_tail=False, swap_ab=swap, rem_rows=0, rem_cols=block_n - width)


def candidates(ctx, dtype):
    """Launch configurations worth timing against the defaults (fused_ops.tune(configs="search")): on Hopper, each
    16-bit tile whole, and the largest with its last wave split; on the CPU, two tile sizes."""
    if ctx.backend == "cpu":
        return [Config(block_m=16, block_n=16, block_k=16, split_k=1, split_tail=False),
                Config(block_m=32, block_n=32, block_k=32, split_k=1, split_tail=False)]
    if dtype == torch.float32:
        return []
    whole = [Config(block_m=bm, block_n=bn, block_k=bk, num_stages=st, num_warps=w, split_k=1, split_tail=False)
             for bm, bn, bk, st, w, _ in HOPPER_TILES]
    return whole + [replace(whole[0], split_k=None, split_tail=True)]


def check(cfg, ctx, variant):
    for name in ("block_m", "block_n", "block_k"):
        v = getattr(cfg, name)
        if not isinstance(v, int) or v < 16 or v & (v - 1):
            raise ValueError(f"config.{name}={v!r}: expected a power of two >= 16")
    for name in ("group_m", "gemm_sms", "comm_sms", "num_stages", "num_warps", "split_k"):
        v = getattr(cfg, name)
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"config.{name}={v!r}: expected a positive integer")
    if not isinstance(cfg.split_tail, bool):
        raise ValueError(f"config.split_tail={cfg.split_tail!r}: expected True or False")
    if (cfg.swap_ab or cfg.rem_rows or cfg.rem_cols) and variant is not None:
        what = ("swap_ab=True" if cfg.swap_ab else f"rem_rows={cfg.rem_rows}" if cfg.rem_rows
                else f"rem_cols={cfg.rem_cols}")
        raise ValueError(f"config.{what}: the Gluon kernel's tiles (fused_ops.matmul, fp8.scaled_mm); "
                         f"{variant.op}/{variant.name} runs the tile loop")
    if cfg.split_k > cfg.gemm_sms:
        raise ValueError(f"config.split_k={cfg.split_k} exceeds gemm_sms={cfg.gemm_sms}: a tile's slices run side by "
                         f"side, one program each")
    if variant is None:  # a plain GEMM (fused_ops.fp8.scaled_mm): its loop splits tiles, no communication programs
        return
    if (cfg.split_k > 1 or cfg.split_tail) and not variant.split_k and variant.pattern != "baseline":  # torch's
        able = [v.name for v in OPS[variant.op].variants.values() if v.split_k]
        what = "config.split_tail" if cfg.split_tail else f"config.split_k={cfg.split_k}"
        raise ValueError(f"{what}: {variant.op}/{variant.name} runs whole tiles only; split-K variants of "
                         f"{variant.op}: {', '.join(able) or 'none'}")
    if ctx.backend == "cuda" and variant.pattern in ("producer-consumer", "workgroup-specialized"):
        sms = ctx.get_cu_count() // ctx.ranks_per_device
        if cfg.gemm_sms + cfg.comm_sms > sms:
            raise ValueError(f"config: gemm_sms ({cfg.gemm_sms}) + comm_sms ({cfg.comm_sms}) exceeds the {sms} SMs "
                             f"this rank may use; {variant.name} spins on flags and needs every program resident")

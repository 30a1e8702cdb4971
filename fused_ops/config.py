"""Launch configuration of a catalog call: tiles, the GEMM/communication SM split, pipelining. Defaults are chosen
per device; any field can be overridden (`Config(block_n=128)` keeps the other defaults)."""

from dataclasses import dataclass, fields, replace

import torch

from iris import settings

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
    turns: bool = None     # ... block_m 64, not swapped: two consumer warpgroups take turns on each tile's blocks of K
                           # (even num_stages), so FP8's precise sums add while the other's MMAs run

    def describe(self):
        """One line for logs and CSVs: tiles, pipeline, programs, split."""
        text = (f"{self.block_m}x{self.block_n}x{self.block_k} s{self.num_stages} w{self.num_warps}, "
                f"{self.gemm_sms} GEMM programs")
        if self.split_k > 1:
            text += f", split_k {self.split_k}" + (" (last wave)" if self.split_tail else "")
        return (text + (", swap AB" if self.swap_ab else "") + (f" + {self.rem_rows} rows" if self.rem_rows else "")
                + (f" + {self.rem_cols} columns" if self.rem_cols else "") + (", K in turns" if self.turns else ""))

    def merged(self, defaults):
        return replace(defaults, **{f.name: getattr(self, f.name) for f in fields(self)
                                    if getattr(self, f.name) is not None})


# Hopper tiles for 16-bit inputs, largest first: (block_m, block_n, block_k, num_stages, num_warps, fill). A large tile
# pays off only where there are enough to occupy the SMs, so the default is the largest whose tile count reaches `fill`
# x the SMs: 3/4 for the 128-row tiles, 0.4 for the 4-stage 64x128 tile over the 64x64 one (results/archive/gemm.csv,
# gemm_small_9341c38.csv.gz). With the operands' descriptors built on the host, 6 stages and 8 warps keep more of the
# 128x128 tile's loads in flight (results/archive/gemm_04aeb7e.csv.gz).
HOPPER_TILES = ((128, 256, 64, 3, 8, 0.75), (128, 128, 64, 6, 8, 0.75), (64, 128, 128, 4, 4, 0.4),
                (64, 64, 128, 4, 4, 0))
# FP8 (e4m3, fused_ops/fp8.py): the same tiles over twice the K per block, so a stage holds the same bytes and the
# same number of stages fits in shared memory.
# Decode (M <= 16 rows): the GEMM streams B once; 16-row tiles (Triton's mma.sync path: wgmma needs 64 rows) waste
# less of each program's shared memory and bandwidth on rows that are not there. Where they leave half the SMs idle
# (<= 66 tiles), 16x64x128 tiles in two slices of K put more SMs to work (results/current/gemm/gemm_explore.csv.gz).
DECODE_ROWS = 16
DECODE_TILE = (16, 64, 256, 4, 4)
DECODE_FEW_TILE = (16, 64, 128, 6, 4)
# ... where the GEMM runs alone (fused_ops.matmul: no program waits on another, so not all need be resident). Where
# the tiles outnumber the SMs, one program per SM starts each tile's pipeline cold and a partial last wave runs nearly
# alone, so three programs per SM (3 stages of 16x64x128, 60 KB) overlap one another's starts and ends, the GPU handing
# a tile to whichever SM frees first (four of 2 stages beyond three tiles per SM; up to DECODE_MAX_SPLIT slices of
# DECODE_MIN_SLICE_BLOCKS blocks while every slice has a program). In one wave, one program per SM: slices of K filling
# it (DECODE_FEW_TILE, DECODE_FEW_MAX_SPLIT, DECODE_FEW_MIN_BLOCKS), or whole tiles, DECODE_TILE's deep pipeline at long
# K (alone on its SM, a program keeps more of B in flight) and 128-deep blocks at DECODE_SHORT_BLOCKS or fewer
# (results/current/gemm/decode_61a385a/ and the runs it names).
# At a third of a wave to a full one, decode_split slices every tile for the least work on the busiest SM
# (DECODE_SLICE_BLOCKS per slice, DECODE_SPLIT_BLOCKS for the partial sums); two slices share an SM only while short
# (DECODE_SHARED_SLICE_BLOCKS), since where whole tiles keep enough of B in flight splitting gains nothing. Short or
# shared slices run DECODE_ALONE_TILES[0]'s programs, longer ones DECODE_FEW_TILE's 6 stages alone on their SM
# (results/current/gemm/decode_d500d6a/).
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
# FP8 with precise accumulation (scaled_mm's default, as torch._scaled_mm's): Triton promotes the tensor cores'
# partial sums into the fp32 accumulator once per dot (gemm_k_blocks' MAX_IMPRECISE = BLOCK_K), needing a second
# accumulator and a wait on the MMAs just issued. 128x256 tiles' two fp32 accumulators spill at 8 warps (ptxas:
# 255 registers); 128x128 tiles over 256-deep K blocks fit (155) and wait once per 256 of K, error at torch's; 16-row
# tiles beat 64-row ones at decode, and 2-3 64x128 programs per SM (one's MMAs running while another waits) lost
# (results/current/gemm/fp8_explore_4ef4cd5/).
FP8_PRECISE_TILE = (128, 128, 256, 3, 8)
FP8_DECODE_TILE = (16, 64, 256, 4, 4)
# At decode a 16-row FP8 GEMM streams B once; what limits it is how much of the GPU streams it. Wider (16x128) tiles in
# up to FP8_DECODE_MAX_SPLIT slices of K, each of FP8_DECODE_MIN_BLOCKS blocks or more, where tiles x slices fill more
# of one wave of programs than the 64-wide tiles do (fp8_decode_split; 16x5120x6912: 120 programs in 3 slices, against
# 80). More programs than one wave lost (results/current/gemm/fp8_decode_a678c62/, 1x H100).
FP8_DECODE_WIDE_TILE = (16, 128, 256, 4, 4)
# Where even the 128-wide tiles need more than one wave (N > 128 x the programs: vocabulary projections), 256-wide
# ones in one wave, though it leaves SMs idle: it beat two and a bit waves of 64-wide tiles, whole or in slices of K
# (results/current/gemm/fp8_decode_70c9395/, 1x H100).
FP8_DECODE_WIDEST_TILE = (16, 256, 256, 3, 4)
# Where even those need more than one wave (N > 256 x the SMs) and the GEMM runs alone (scaled_mm), three 3-stage
# programs per SM, as in DECODE_ALONE_TILES, overlap the tile starts and ends that one program per SM runs cold
# (results/current/gemm/fp8_all/fp8x_decode_*).
FP8_DECODE_ALONE_TILE = (16, 64, 256, 3, 4, 3)
# Few 64x64 tiles (fewer than half the SMs, K short enough to leave them whole): each program's own chain of blocks
# sets the time, and with precise accumulation every block ends in a wait on its MMAs; 512-deep blocks halve the waits,
# their error near torch's. With 80 tiles they lost (results/current/gemm/few_tiles_h100/).
FP8_FEW_TILE = (64, 64, 512, 3, 4)
FP8_DECODE_MAX_SPLIT = 4
FP8_DECODE_MIN_BLOCKS = 4
# The warp-specialized Gluon kernel on Hopper (fused_ops/wgmma.py: a load warp running ahead across tiles, two to four
# consumer warpgroups of 64 rows) beat the tile loop wherever its 128x128 tiles reached WGMMA_MIN_FILL x the SMs (bf16:
# where the defaults chose 128-row tiles; FP8 precise accumulation most, its warpgroups taking turns while one promotes
# its partial sum); with fewer tiles the tile loop's split-K and 64/16-row tiles won (results/current/gemm/README.md).
# Its tiles: (block_m, block_n, block_k, stages, cost per output element); wgmma_config takes the fewest waves x tile
# area x cost (ties: the larger tile). 192-row tiles (three consumers) fill one wave where 128-row ones need two; FP8
# gains from the third warpgroup beyond that (0.9). 128x256 tiles keep 3 stages beside C's staging tiles. Smaller bf16
# tiles read more operand bytes per product and the largest GEMMs run power-capped, so 128x128 and 192x128 tiles lost at
# similar waves x area: their costs pick them only where they save real waves
# (results/current/gemm/final_8dc2c3c/*/gemm_large.*).
# Widths that are no power of two are block_n + rem_cols (160: 128 + 32, a second MMA of N = 32; wgmma.run(rem=...)),
# costed for that narrow MMA. 128x160 tiles fill one wave where 192x128 ones leave SMs idle, and beat 128x256 and
# 128x128 in one row of tiles (128x38016); elsewhere the GPUs disagreed, so bf16 takes them only in one wave or one row
# (results/current/gemm/remcols_e9ef942/moved_*). 256x160 tiles (four consumers; 32-deep blocks so 5 stages fit beside
# the staging tiles) fill one wave where 192x128 ones need two (results/current/gemm/four_78f73a0/).
# 96-wide 16-bit tiles (64 + 32) fill most of a wave where 128x128 ones leave many SMs idle (1024x1280: 112 tiles
# against 80), in WGMMA_TILES at cost 1.4 and in wgmma_few_tiles (results/current/gemm/wide_tiles_c924e34/x1024b_*,
# mid_rows_*). 80-wide ones (64 + 16) filled more SMs and lost.
WGMMA_96_TILE = (128, 96, 64, 6)
WGMMA_96_FILL = 0.8
# 128x192 tiles (128 + 64 columns) fill one wave where 128x256 ones leave a quarter of the SMs idle (1024x2880: 120
# tiles against 96); 256x144 ones (128 + 16) fill it where 256x160 ones leave a column mostly empty (4096x1152x3584)
# (H200: results/current/gemm/wide_tiles_c924e34/x1024_*, four144_*).
WGMMA_TILES = ((128, 256, 64, 3, 1.0), (192, 128, 64, 4, 1.05), (128, 128, 64, 6, 1.1),
               (128, 160, 64, 4, 1.2), (256, 160, 32, 5, 1.1), (128, 192, 64, 4, 1.1), (256, 144, 32, 5, 1.1),
               WGMMA_96_TILE + (1.4,))
# 64-wide tiles cost more per element than 128-wide ones: the same operand bytes feed half the MMAs, leaning on L2 and
# memory bandwidth, where the H200 and the H100 differ. They won where N is 64 and lost or split the GPUs elsewhere
# (results/current/gemm/wgmma_explore/gemm_*_narrow_*, gemm_bf16_narrow_h100_5ccafd1.*): 1.6, so that only N of 64 or
# less picks them. A candidate only where their last wave is at least WGMMA_NARROW_FILL full.
WGMMA_NARROW_TILE = (128, 64, 64, 8, 1.6)
WGMMA_NARROW_FILL = 0.9
WGMMA_FP8_NARROW_TILE = (128, 64, 128, 8, 1.4)  # FP8 precise accumulation
WGMMA_FP8_TILES = ((192, 128, 128, 4, 0.9), (128, 128, 128, 6, 1.0),   # precise: the sum and a block's partial
                   # ... 144 and 160 wide (rem_cols 16, 32): one wave of 120 tiles at 1024x2112x7168, where
                   # 192x128 ones leave 30 SMs idle (H200, results/current/gemm/remcols_e9ef942/)
                   (128, 144, 128, 4, 1.1), (128, 160, 128, 4, 1.05))
WGMMA_FP8_FAST_TILE = (128, 256, 128, 3)   # fast accumulation: one accumulator, 64x256 per warpgroup
# ... and 256x160 (four consumers, 128 + 32 columns) where they fill one wave or one row of tiles, per-tensor scales
# only (row-wise ones spill in its epilogue): 128 tiles where 128x256 ones need two waves (4096x1280)
# (H200: results/current/gemm/wide_tiles_c924e34/four_fp8_4e3ca71.csv).
WGMMA_FP8_FAST_FOUR_TILE = (256, 160, 128, 3, 1.1)
# ... and the precise tiles beside them, at the 16-bit tiles' costs (one accumulator, as 16-bit), with the same rules
# where 128x128 tiles are few; the picks this moved gained (results/current/gemm/fp8_all/fp8x_fast_*).
# FP8 tiles counted only where they fill one wave: 128x192 (128 + 64 columns), where 128x128 ones need two waves and
# 128x256 ones leave a quarter of the SMs idle, with either accumulation; in two waves they lost
# (results/current/gemm/fp8_all/fp8y_1024_*).
WGMMA_FP8_WAVE_TILES = ((128, 192, 128, 3, 1.1),)
# ... and with precise accumulation 192x64 tiles (three consumers of 64x64) where they fill one wave and 72-96 128x128
# ones leave SMs idle: they won on both GPUs, cool and hot, bar once on an H100; with fast accumulation the GPUs
# disagreed, and in two waves they lost (results/current/gemm/fifth_c112662/xfp8few_*, flips6_*).
WGMMA_FP8_PRECISE_WAVE_TILES = ((192, 64, 128, 6, 1.3),)
# ... and with fast accumulation, 96-wide tiles (64 + 32 columns) at bf16's cost (WGMMA_96_TILE) where 128x128 ones
# leave SMs idle (1024 rows of 1152-1536 columns): they won on both GPUs and lost with precise accumulation; beyond
# one row of tiles only, where they were timed (results/current/gemm/fp8_all/fp8x96_*).
WGMMA_FP8_FAST_96_TILE = (128, 96, 128, 6, 1.4)
# FP8's tiles of widths between powers of two run one MMA that wide a k step (fused_ops/wide_mma; FP8's operands are
# K-major), not two. So with fast accumulation they count in any number of waves, as powers of two do (in two waves
# 128x144 tiles beat 256x160 ones, whose four consumers keep two MMAs, at 4096x1152x3584 and 1024x4608 of K 7168 and
# 16384); and with precise accumulation 128x192 tiles (128 + 64, 3 stages) from K of FP8_WIDE_192_MIN_K and
# FP8_WIDE_192_MIN_WAVES waves of them: there they beat 192x128 and 128x128 ones over the public set's GEMMs, the
# largest most; in fewer waves, and at K of 720, they lost
# (results/current/gemm/gluon_limits/widex_fp8_h100_7f76f16.csv.gz, fp8_all/fp8_all_h100_06b2657.csv.gz).
WGMMA_FP8_PRECISE_WIDE_TILE = (128, 192, 128, 3, 0.85)  # (beyond 128 rows: untimed at 128)
FP8_WIDE_192_MIN_K = 2048
FP8_WIDE_192_MIN_WAVES = 12
WIDE_MMA_ROWS = 192  # tiles of up to three consumers (wide_mma.MAX_CONSUMERS) run the wide MMA
# ... and with per-tensor scales 224-wide tiles (128 + 96 columns, one wide MMA; 3584 = 16 x 224): one wave of 128
# tiles at 1024x3584 where 128x256 ones leave 20 SMs idle, two at 1024x7168 where 128x256 ones fill 1.7: they won
# there, by about the work a tile they save. In up to FP8_FAST_224_WAVES waves they won wherever they were picked;
# beyond, where they replace many waves of 128x128 tiles, they gained from K of FP8_FAST_224_MIN_K and lost at shorter
# K (4096x3584 of K 448-1792). Cost 1.05 (results/current/gemm/gluon_limits/remx_*,
# flips224_*; at 1.04 they would also take 16384x640, 4096x2560 and 16384x8000: untimed bar 16384x640x2880, fastx_*)
WGMMA_FP8_FAST_224_TILES = ((128, 224, 128, 4, 1.05),)
FP8_FAST_224_WAVES = 2
FP8_FAST_224_MIN_K = 2048
WGMMA_FP8_FAST_TILES = (WGMMA_FP8_FAST_TILE + (1.0,), (192, 128, 128, 4, 1.05), (128, 128, 128, 6, 1.1),
                        (128, 144, 128, 4, 1.2), (128, 160, 128, 4, 1.2))
# 16-bit tiles counted only where they fill one wave: 128x288 (256 + 32 columns, 32-deep blocks: 5 stages fit beside
# the staging tiles; two consumers' 64x288 MMAs read less shared memory per product than four consumers' 64x144 ones),
# e.g. 128x38016 (132 tiles where 160-wide ones take two waves); in two waves they lost to 192-wide tiles, and 320-wide
# ones fit 2 stages and lost (results/current/gemm/x128wide_85e3013/flips128_*).
WGMMA_WAVE_TILES = ((128, 288, 32, 5, 1.05),)
WGMMA_MIN_FILL = 0.7
# FP8 beyond 128 rows, and at 65-128 rows with precise accumulation (where the tile loop's 128x128 tiles keep two fp32
# accumulators), from half the SMs; with 40 tiles the tile loop's 64x128 tiles won
# (results/current/gemm/fp8_all/fp8y_*).
WGMMA_FP8_MIN_FILL = 0.5
# Swap-AB tiles (wgmma.run(swap=True)): C's transpose, B's columns as the MMAs' 64-row blocks, A's rows as their N, so
# one consumer's tile spans 256 rows of A by 64 columns of B with full-width MMAs (non-swapped 256-row tiles cannot:
# four consumers' 64-wide MMAs read the same bytes for half the products). (rows of A, columns of B, block_k, stages,
# cost per output element), chosen beside WGMMA_TILES. They win where 64-column tiles fill waves no other tile fills,
# and where B's rows are not 128-byte aligned: a 256-row tile passes over B half as often, so non-swapped tiles cost
# UNALIGNED_B_COST more there (not 96-wide ones beyond one row of tiles, which won on both GPUs:
# results/current/gemm/fifth_c112662/). Elsewhere they tie or lose; the costs served the public sample best
# (results/current/gemm/ROUNDS.md, "Swap-AB tiles").
WGMMA_SWAP_TILES = ((256, 128, 64, 3, 1.1), (256, 64, 64, 4, 1.3))
UNALIGNED_B_COST = 1.3
# 16-bit A whose rows are 16- but not 32-byte aligned (K % 16 == 8: K = 360, 1000, 3000) spans five 32-byte sectors a
# box row (local_gemm.sector_copies), and a tile BLOCK_N wide reads A N / BLOCK_N times: non-swapped tiles narrower than
# 256 columns cost UNALIGNED_A_COST more there (16384x2880x360 on an H100: 128x256 tiles beat the 192x128 pick, cool
# and hot; results/current/gemm/rows_e619b5f/arow_*). Only where B's rows are aligned: beside UNALIGNED_B_COST it
# moved K-major 1024x2880x360 onto swapped tiles, which lost there.
UNALIGNED_A_COST = 1.1
# FP8 decode rows (M <= DECODE_ROWS): swap-AB tiles of 16 rows by 64 columns, whose MMAs' N is the 16 rows (the tile
# loop's 16-row tiles run mma.sync, with no warp specialization), where they fit in one wave; with more tiles the
# tile loop's 16-row tiles, split along K to fill one wave, won. 256-deep K blocks with either accumulation: half the
# promotions, the error at torch's; they beat 8-stage 16x64x128 tiles (results/current/gemm/fp8_all/fp8y_decode_*).
WGMMA_FP8_DECODE_TILE = (16, 64, 256, 4)
# ... in slices of K (one per SM, a second kernel adding them) where they leave 4-fold SMs (few_split), and in
# THIRD_SLICES where they leave 3-fold and K has blocks for 3 slices, with either accumulation; 2 slices lost
# (results/current/gemm/fp8_all/fp8x_decode_*, fp8dec_*); the FP8 split tile of 65-128 rows too (fp8y_128_*).
THIRD_SLICES = 3
# bf16 decode rows too, where the swapped 16x64 tiles fit in one wave: in as many slices of K as the SMs hold with
# DECODE_MIN_SLICE_BLOCKS blocks each (decode_slices). The tile loop's 16-row tiles issue more instructions per byte of
# B, so they slow when the power cap lowers the clock after heavy GEMMs; memory-bound torch.matmul does not, and these
# tiles held up (results/current/gemm/decode_swap/heat_*.log, decode_heat_*.csv; over the public decode GEMMs, a gain on
# an H200, a tie on an H100: decodeswap_h*_6f25ac6.csv.gz). Not below DECODE_SWAP_MIN_BLOCKS blocks of K or
# DECODE_SWAP_MIN_TILES tiles, where the tile loop's programs overlap their starts and its short slices fill more SMs
# (decode_swap/decodeswap_h200_e9da769.csv.gz).
WGMMA_DECODE_TILE = (16, 64, 128, 6)
DECODE_SWAP_MIN_BLOCKS = 6
DECODE_SWAP_MIN_TILES = 24
# 17-32 rows, either dtype: 32-row swapped tiles where they take at most two waves. The tile loop pads those rows to
# 64-row tiles (its 16-row ones serve decode rows only); at 64 rows the two ran even (docs/performance.md).
SWAP_ROWS = 32
WGMMA_ROWS_TILE = (32, 64, 128, 6)
WGMMA_FP8_ROWS_TILE = (32, 64, 256, 4)
# Few tiles (128x128 tiles below WGMMA_MIN_FILL of the SMs): the Gluon kernel's split-K (wgmma.run(split_k=...)), so
# that every SM gets a slice, at 33-128 rows where its tiles leave FEW_TILES-fold SMs or more: bf16 swapped tiles of 128
# rows of A by 64 columns of B (64 rows where m <= 64 or 128-row tiles are under a WGMMA_KDOM_TILES-th of the SMs:
# K-dominant), FP8 128x64 tiles at 65-128 rows and long K (its swapped tiles lose with precise accumulation), decode and
# 17-32 rows alike, in slices of MIN_SLICE_BLOCKS or more (few_split). They beat the tile loop's splits on both GPUs;
# with more tiles or at 129-256 rows they tied or lost (results/current/gemm/ROUNDS.md, "Split-K in the Gluon kernel").
WGMMA_SPLIT_TILE = (128, 64, 64, 6)         # bf16, swapped: rows of A, columns of B, block_k, stages
# ... and where those tiles leave 3-fold SMs (34-44 of them), in THIRD_SLICES of THIRDS_MIN_BLOCKS blocks of K or more
# (128x2304x3584: 19 blocks a slice; at 15 the tile loop's whole 64x64 tiles won). With more tiles (bf16), swapped
# 128x128 tiles (WGMMA_WIDE_SPLIT_TILE) in THIRD_SLICES where they leave 3-fold SMs and slices are WIDE_THIRDS_MIN_K
# deep or more; shallower ones lost (results/current/gemm/x128wide_85e3013/, rows128_7900906/). FP8's 128x128 tiles in
# thirds won on an H200 and lost on an H100: the partials add a tenth to the bytes of a GEMM bound by them.
THIRDS_MIN_BLOCKS = 16
WGMMA_WIDE_SPLIT_TILE = (128, 128, 64, 5)   # bf16, swapped (5 stages beside the slices' fp32 staging tiles)
WIDE_THIRDS_MIN_K = 4096
# Between those and a full wave, whole 128x64 tiles (WGMMA_NARROW_TILE; FP8's too) where they are WGMMA_ROWS128_FILL of
# the SMs and a row of A holds WGMMA_ROWS128_MIN_BYTES or more (bf16 K of 6144, FP8 12288): TMA loads and warpgroup
# MMAs issue fewer instructions per byte than the tile loop's 64x128 tiles; with shorter K they tied or lost. bf16
# won at 72-80 tiles on both GPUs; at 64 the GPUs disagreed, and 56 or 112-144 lost
# (results/current/gemm/x128wide_85e3013/x128hot_*, flips128b_*). FP8 won at 128x4608x16384; the GPUs disagreed at
# 128x5120x8192, which stays on the tile loop (results/current/gemm/fifth_c112662/).
WGMMA_ROWS128_FILL = (0.5, 0.65)
WGMMA_ROWS128_MIN_BYTES = 12288
WGMMA_SPLIT_KDOM_TILE = (64, 64, 64, 8)
WGMMA_KDOM_TILES = 16
WGMMA_FP8_SPLIT_TILE = (128, 64, 128, 8)    # FP8 precise, not swapped
WGMMA_FP8_SPLIT_MIN_BLOCKS = 64  # ... where K has this many blocks: with fewer the tile loop's 64x64x512 tiles won
# 129-160 rows (bf16): swapped 128x64 tiles 16 or 32 rows of A wider (wgmma.run(rem=...): a second MMA of N = 16 or 32),
# 144 or 160 rows computed where two 128-row tiles computed 256, in slices of K that fill the SMs, where their tiles
# (one per 64 columns of B) are at most half the SMs; with 224 tiles they lost (1x H200,
# results/current/gemm/rem_3524dab/).
WGMMA_REM_TILE = (128, 64, 64, 6)  # swapped: rows of A, columns of B, block_k, stages
WGMMA_REM_ROWS = (16, 32)
# FP8 (precise accumulation): the same swapped tiles only where they number at most a FEW_TILES-th of the SMs; with
# more they lost to the tile loop (H200, results/current/gemm/remcols_e9ef942/fp8_rows_f534825.*).
WGMMA_FP8_REM_TILE = (128, 64, 128, 6)
# 64-row tiles (one consumer warpgroup, deep rings) where they fill most of one wave: twice the programs of 128-row
# tiles, each streaming its own columns of B, as cuBLAS's 64-row tiles there. bf16 64x64 at 65-128 rows, K of 4096 or
# more, from 70% of the SMs, in 128-deep blocks of K (two TMA boxes a stage: half the ring's barrier waits and
# arrivals; 64-deep ones lost hot at K of 4096, with 96 tiles, and on an H200; two waves lost); FP8 with fast
# accumulation and per-tensor scales, 144 wide (128 + 16) from 90% of the SMs (114 tiles lost), else 80 wide (64 + 16)
# from 85% at K of 6144 or more (shorter K lost; at 6912-7168 the GPUs disagree: an H100 gained cool, an H200 lost).
# With precise accumulation they lost: a lone consumer waits on its MMAs every block
# (results/current/gemm/rows64_fa9ce15/, wide64_91d3d11/, deepk_7a3b36f/).
# 160 and 192 wide (128 + 32, 128 + 64) up to 1024 rows, where 112-128 of them fill the SMs (1024 rows of 1280-1536
# columns; bf16 192 wide only): each GEMM they moved gained on an H200 and an H100, cool and hot
# (results/current/gemm/wide64_91d3d11/); bf16 320 wide (256 + 64; 288-wide ones, 256 + 32, lost) from 95%
# of the SMs: 128 tiles at 1024 rows of 2304-2560 columns (112 at 1024x2112 lost; 116-120 at 128 rows tied;
# results/current/gemm/wide320_8e2ed2a/), and in one or two such waves up to 4096 rows (4096 rows of 640-1280 columns,
# 1024x5120) where N is a multiple of 320 (at 4096x1152 and 2048x2304, whose last column of tiles is mostly empty,
# they lost to one wave of 128x288 tiles; results/current/gemm/tall320_05bafa9/). Each entry: (rows, width, block_k,
# stages, K from, fill of each wave from, M up to[, waves up to, N then a multiple of the width; else one wave]); the
# first that applies wins.
WGMMA_ROW64_TILES = ((64, 64, 128, 6, 4096, 0.7, 128), (64, 192, 64, 6, 2880, 0.8, 1024),
                     (64, 320, 64, 4, 2880, 0.95, 1024), (64, 320, 64, 4, 640, 0.95, 4096, 2))
# ... and on K-major B (nn.Linear's weight.t()), ahead of those, bf16 64x288 tiles (256 + 32) in one wave at 1024
# rows where N is a multiple of 288, from K of 3584: at 1024x2304 they beat the 64x320 pick, cool and hot, in two
# runs on an H200 (results/current/gemm/x288_7265838/). On row-major B they lose (B's box of 32 columns is 64-byte
# rows there); at 2048x2304 one wave of 128x288 tiles stays ahead.
# Not below ROW64_KMAJOR_MIN_ROWS: at 128 rows (128x19008, 132 tiles) they were not timed against the 128x160 pick.
WGMMA_ROW64_KMAJOR_TILES = ((64, 288, 64, 4, 3584, 0.95, 1024, 1),)
ROW64_KMAJOR_MIN_ROWS = 1024
WGMMA_FP8_FAST_ROW64_TILES = ((64, 144, 128, 8, 2048, 0.9, 1024), (64, 80, 128, 12, 6144, 0.85, 1024),
                              (64, 160, 128, 7, 2880, 0.85, 1024), (64, 192, 128, 6, 2880, 0.85, 1024))
# ... and with precise accumulation (per-tensor scales) the same tiles with two consumers taking turns on each tile's
# blocks of K (Config.turns: one adds its block's sum while the other's MMAs run; a lone consumer lost there), 80 wide
# from K of 3072 (at 2560 a tie), 144 wide from 90% of the SMs (results/current/gemm/rows64_fa9ce15/turns_*)
WGMMA_FP8_PRECISE_ROW64_TILES = ((64, 144, 128, 6, 2048, 0.9, 1024), (64, 80, 128, 10, 3072, 0.85, 1024),
                                 (64, 160, 128, 6, 2880, 0.85, 1024), (64, 192, 128, 4, 2880, 0.85, 1024))
# FP8 precise accumulation on whole 128x128 Gluon tiles: each consumer issues two blocks' MMAs at a time and adds the
# first's sum into fp32 while the second's run (wgmma.run(promote="pairs")), where promoting each block waits on its
# MMAs before the next issue. It gained at the 111 public GEMMs this moved, against per-block promotion in the same run,
# either scaling, least at 128 rows (one row of tiles); error unchanged (results/current/gemm/pairs_e897a8d/). Other
# tiles promote each block: 64-row ones take turns instead, and a third sum per consumer does not fit taller tiles'
# registers, nor tiles more than 16 columns wider (wgmma.PAIRS_MAX_REM; 144-wide ones in pairs lost to per-block
# promotion: results/current/gemm/pairs144_9384d0e/).
FP8_PAIRS_TILES = ((128, 128),)
# ... which makes them cheaper per element than their tile cost says (FP8_PAIRS_COST, in wgmma_config's cost in place
# of the tile's own) from 129 to 1024 rows beyond one wave of them, where 192-row tiles leave a sixth of their rows
# empty and 128x144-160 ones a wave part-filled. At 128 rows (one row of tiles) the wider tiles won; at 4096-16384
# rows, where 192-row tiles fill theirs, 128x128 ones in pairs lost to them; in one wave the one-wave tiles' rules
# (timed against per-block promotion) stand. Timed on an H100: results/current/gemm/pairscost_cd377b8/.
FP8_PAIRS_COST = 0.94
FP8_PAIRS_ROWS = (129, 1024)
# FP8's 64-row tiles where B's rows (K of them, K-major) are not 128-byte aligned: up to this width (1024x1280x2880,
# 128 tiles of 160, gained against its picks before, cool and hot on both GPUs, either accumulation; 192 wide at
# 1024x1440x2880 the GPUs disagreed; results/current/gemm/unaligned64_3374160/, wide64_91d3d11/explore_wide64_fp8_*).
# bf16's: none.
ROW64_FP8_UNALIGNED_WIDTH = 160
# Rows past a multiple of 64 at 129-255 rows, where whole 128x64 Gluon tiles fill one wave to at least
# WGMMA_NARROW_FILL: its edge boxes move back inside A (wgmma.inside), where the tile loop's 64-row tiles load past
# A's last row, which TMA serves far slower (results/current/gemm/ROUNDS.md, "Rows past the edge").
EDGE_ROWS_MAX = 256
# Not bf16 where the tile loop's edge boxes sit inside A too (FUSED_OPS_EDGE_INSIDE, the default): its 64-row tiles
# beat the Gluon kernel's 128x64 and 128x96 tiles (200x4096x4096: x1.10; 129x5120x5120: x1.20; 255x4096x4096 read
# x0.98) and its swapped 129-160-row tiles in two slices of K (129 and 160 rows of 4096, 129x2880x2880: x1.04-1.12);
# the swapped tiles stay where they make EDGE_REM_MIN_SPLIT slices or more (1x H100,
# results/current/gemm/fewrowspick_bb67783/). FP8's were not timed against the tile loop's new boxes and stay.
# (The setting is read here, host-side; gemm.EDGE_INSIDE is the tile loop's constexpr of it.)
EDGE_INSIDE = settings.value("FUSED_OPS_EDGE_INSIDE")
EDGE_REM_MIN_SPLIT = 3


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


def row64_tile(m, n, k, sms, fp8, fast, row_scales, b_aligned, b_k_major=False):
    """(rows, width, block_k, stages) of the Gluon kernel's 64-row tiles where they fill most of one wave, or of the
    waves an entry allows (see WGMMA_ROW64_TILES; B's rows not 128-byte aligned: FP8 ones up to
    ROW64_FP8_UNALIGNED_WIDTH wide only; bf16 B K-major from ROW64_KMAJOR_MIN_ROWS: WGMMA_ROW64_KMAJOR_TILES first),
    else None."""
    if fp8 and row_scales or m <= 64 or not (b_aligned or fp8):
        return None
    tiles = ((WGMMA_FP8_FAST_ROW64_TILES if fast else WGMMA_FP8_PRECISE_ROW64_TILES) if fp8
             else (WGMMA_ROW64_KMAJOR_TILES if b_k_major and m >= ROW64_KMAJOR_MIN_ROWS else ()) + WGMMA_ROW64_TILES)
    for tile in tiles:
        count = tile_count(m, n, tile)
        waves = -(-count // sms)
        several = len(tile) > 7  # up to tile[7] waves, of whole columns of tiles
        waves_ok = waves <= tile[7] and n % tile[1] == 0 if several else waves == 1
        if (m <= tile[6] and k >= tile[4] and waves_ok and count >= tile[5] * waves * sms
                and (b_aligned or tile[1] <= ROW64_FP8_UNALIGNED_WIDTH)):
            return tile[:4]
    return None


def tile_count(m, n, tile):
    """Tiles of an m x n output for a tile of tile[0] rows by tile[1] columns."""
    return -(-m // tile[0]) * -(-n // tile[1])


def wgmma_few_tiles(cfg, m, n, k, sms, fp8):
    """The Gluon kernel's config where its 128x128 tiles are too few for the SMs (see WGMMA_SPLIT_TILE,
    WGMMA_REM_TILE and EDGE_ROWS_MAX), or None (the tile loop). Host only, free."""
    def tiles(tile):
        return tile_count(m, n, tile)
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
    edge_rows = 128 < m < EDGE_ROWS_MAX and m % 64
    edge_loop = edge_rows and not fp8 and EDGE_INSIDE  # the tile loop's edge boxes inside A
    if m > tile[0] and rem is not None and (not fp8 or -(-n // tile[1]) * FEW_TILES <= sms):
        few = -(-n // tile[1])
        split = min(sms // few, -(-k // tile[2]) // MIN_SLICE_BLOCKS)
        if split >= (EDGE_REM_MIN_SPLIT if edge_loop else 2):
            return replace(gluon_tile(cfg, *tile, swap=True), split_k=split, rem_rows=rem)
    if edge_loop:
        return None
    narrow = WGMMA_FP8_NARROW_TILE if fp8 else WGMMA_NARROW_TILE
    if edge_rows and WGMMA_NARROW_FILL * sms <= tiles(narrow) <= sms:
        return gluon_tile(cfg, *narrow[:4], swap=False)
    if not fp8 and WGMMA_96_FILL * sms <= tiles(WGMMA_96_TILE) <= sms:
        return gluon_tile(cfg, *WGMMA_96_TILE, swap=False)
    return None


# A persistent grid runs its tiles in waves of one per program, and a partly empty last wave costs a whole one. A
# 128x128 tile takes about HALF_TILE_COST of a 128x256 tile's time, so it is the pick where its
# waves times this cost are fewer than the 128x256 tile's waves (4096x2304x36864; results/current/gemm/wave_a8219b8/).
HALF_TILE_COST = 0.52
# ... at long K. Each tile also pays a fixed cost (filling the pipeline, the epilogue) of about TILE_OVERHEAD_BLOCKS
# blocks of K, so at short K the 128x128 tile saves less (results/current/gemm/gemm_explore.csv.gz); half_tile_cost
# folds that in.
TILE_OVERHEAD_BLOCKS = 9


# The 64x128 tile takes about QUARTER_TILE_COST of a 128x128 tile's time (results/current/gemm/edge_eb7d296/).
# Where it needs more waves than the 128x128 tile by more than that (192 tiles on 132 SMs where 96 128x128 ones fit in
# one wave), the larger tile is the pick, though its one wave leaves SMs idle (results/current/gemm/final_e9cb8e8/).
QUARTER_TILE_COST = 0.65


def half_tile_cost(k, block_k):
    """A 128x128 tile's time in 128x256 tiles at this K (HALF_TILE_COST at long K, more where K is short)."""
    kb = -(-k // block_k)
    return (HALF_TILE_COST * kb + TILE_OVERHEAD_BLOCKS) / (kb + TILE_OVERHEAD_BLOCKS)
# Or, for variants whose GEMM loop splits tiles (registry split_k), keep the large tile and split only the last wave's
# tiles along K (Config.split_tail), one slice per program: that wave then costs 1/split_k of a tile plus the fixup
# (each slice stores an fp32 partial tile, the last reads them all back), about PARTIAL_BLOCKS blocks of K a partial.
# Picked only where the model saves TAIL_MARGIN of the time, about the scatter of measurements between configs
# (results/current/gemm/wave_38b2d51/); at short K (16384x8192x4096) the fixup costs more than it saves.
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


# Where even the smallest tile leaves most programs idle (tiles <= programs / FEW_TILES: K >> M x N, e.g.
# 128x128x65536, results/current/gemm/), plain split-K: every tile in as many slices of K as the programs take (at
# most MAX_SPLIT, MIN_SLICE_BLOCKS blocks each), since such a GEMM streams A and B once and needs every SM's loads in
# flight; past gemm.SERIAL_SLICES slices they add up by atomics rather than in order, so all programs take part
# (results/current/gemm/final_e9cb8e8/). At 64 tiles whole 64x128 tiles won, hence the margin
# (results/archive/gemm_small_21da4a4.csv.gz). The 64x64 tile splits where it leaves half the programs idle
# (SMALLEST_FEW_TILES): over a long K 2-3 slices beat whole tiles (results/current/gemm/split2_9129768/).
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
# ROW_TILE_MAX_SPLIT slices of K that keep to one program each, for the fewest waves x tile area x cost x (blocks of K
# per slice + TILE_OVERHEAD_BLOCKS). At 128 rows 64x64 tiles beat 64x128 ones wherever both fit in one wave (twice the
# tiles keep twice the SMs busy), and slices of 64x128 tiles beat both where few with a long K. On both GPUs
# ROW_TILE_NARROW_COST chose best of the costs timed (results/current/gemm/rows128_7900906/); FP8 takes the same choice
# of whole tiles (results/current/gemm/fp8_all/fp8y_128_*).
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
    persistent configuration (M >= 1024); smaller tiles where that leaves SMs idle (M <= 512), or where its last
    wave would leave many idle (HALF_TILE_COST). Whole tiles: split-K (Config(split_k=2)) was the default where rows
    are few and K long until whole 64x128x128 tiles beat it at all three shapes where it applied, once the GEMM's
    descriptors came from the host and it stopped letting the next kernel in at its start
    (results/archive/gemm_small_21da4a4.csv.gz). comm_programs: the variant gives comm_sms of the SMs to communication
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


def wgmma_config(cfg, m, n, sms, dtype, fast=False, force=False, b_aligned=True, k=None, row_scales=False,
                 b_k_major=False):
    """The Gluon kernel's config for an m x n output where `cfg` holds the tile loop's defaults: FP8 (either
    accumulation) where 128x128 tiles reach WGMMA_MIN_FILL x `sms`; 16-bit where the defaults chose 128-row tiles
    (whole, or the last wave split: the Gluon kernel's tile choice beat the split tails) and 128x128 tiles reach it;
    decode rows (m <= DECODE_ROWS) where swap-AB 16x64 tiles fit in one wave, and 17-32 rows where 32x64 ones fit
    in two (swapped_rows_tile). The tile: the fewest waves times area times cost
    (WGMMA_TILES and 16-bit WGMMA_SWAP_TILES; FP8: WGMMA_FP8_TILES, with fast accumulation WGMMA_FP8_FAST_TILES; the
    dtype's narrow tile where its waves are nearly full). b_aligned: B's rows are 128-byte aligned (else non-swapped
    tiles cost UNALIGNED_B_COST more). k (where given): A's rows (16-bit, B's rows aligned: tiles narrower than 256
    cost UNALIGNED_A_COST more where A's are off 32 bytes), and where the 128x128 tiles are fewer, split-K or
    edge-row tiles (wgmma_few_tiles). None elsewhere: gemm.py's tile loop runs those. force: the dtype's pick wherever
    (kernel="wgmma"). row_scales: FP8 with row-wise scales (no WGMMA_FP8_FAST_FOUR_TILE nor _224_TILES). b_k_major: B is
    K-major (WGMMA_ROW64_KMAJOR_TILES). Host only, free."""
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
    rows64 = None if k is None else row64_tile(m, n, k, sms, fp8, fast, row_scales, b_aligned, b_k_major)
    if rows64 is not None:  # precise FP8: two consumers taking turns on the tile's blocks of K
        return replace(gluon_tile(cfg, *rows64, swap=False), turns=fp8 and not fast)
    if fp8 and fast:
        wide224 = tuple(t for t in WGMMA_FP8_FAST_224_TILES if tile_count(m, n, t) <= FP8_FAST_224_WAVES * sms
                        or k is not None and k >= FP8_FAST_224_MIN_K)
        tiles = WGMMA_FP8_FAST_TILES + (() if row_scales else (WGMMA_FP8_FAST_FOUR_TILE,) + wide224)
        tiles += (WGMMA_FP8_FAST_96_TILE,) if m > WGMMA_FP8_FAST_96_TILE[0] else ()
    else:
        tiles = WGMMA_FP8_TILES if fp8 else WGMMA_TILES
    narrow = WGMMA_FP8_NARROW_TILE if fp8 else WGMMA_NARROW_TILE
    waves = tile_count(m, n, narrow) / sms
    if waves % 1 == 0 or waves % 1 >= WGMMA_NARROW_FILL:
        tiles = tiles + (narrow,)
    squares = -(-m // 128) * -(-n // 128)
    if not force:
        if m <= DECODE_ROWS:
            return None
        if squares < WGMMA_MIN_FILL * sms:
            few = None if k is None else wgmma_few_tiles(cfg, m, n, k, sms, fp8)
            if few is not None or not (fp8 and (m > 128 or not fast) and squares >= WGMMA_FP8_MIN_FILL * sms):
                return few
        if not fp8 and cfg.block_m != 128:
            return None
    if not fp8 or fast:  # widths between powers of two: in one wave, or in one row of tiles (16-bit; FP8 on four
        # consumers, which keep two MMAs); FP8's others in any number of waves (one wide MMA)
        tiles = tuple(t for t in tiles if t[1] & (t[1] - 1) == 0 or m <= t[0] or tile_count(m, n, t) <= sms
                      or fp8 and t[0] <= WIDE_MMA_ROWS)
    precise = () if fast or row_scales else WGMMA_FP8_PRECISE_WAVE_TILES  # (row-wise scales: not timed on them)
    if (fp8 and not fast and not row_scales and m > 128 and k is not None and k >= FP8_WIDE_192_MIN_K
            and tile_count(m, n, WGMMA_FP8_PRECISE_WIDE_TILE) >= FP8_WIDE_192_MIN_WAVES * sms):
        tiles += (WGMMA_FP8_PRECISE_WIDE_TILE,)
    one_wave = WGMMA_FP8_WAVE_TILES + precise if fp8 else WGMMA_WAVE_TILES
    tiles += tuple(t for t in one_wave if tile_count(m, n, t) <= sms)
    in_pairs = fp8 and not fast and FP8_PAIRS_ROWS[0] <= m <= FP8_PAIRS_ROWS[1]  # (precise_promotion's tiles)
    if in_pairs and squares > sms:
        tiles = tuple(t[:4] + (FP8_PAIRS_COST,) if t[:2] in FP8_PAIRS_TILES else t for t in tiles)
    tiles = [t + (False,) for t in tiles]
    if not b_aligned:  # (but 96-wide tiles beyond one row of them: not dearer there)
        tiles = [t[:4] + (t[4] * (1 if t[:4] == WGMMA_96_TILE and m > t[0] else UNALIGNED_B_COST), False)
                 for t in tiles]
    if not fp8 and b_aligned and k is not None and (k * dtype.itemsize) % 32:  # A's rows off 32 bytes: wide tiles
        tiles = [t[:4] + (t[4] * (UNALIGNED_A_COST if t[1] < 256 else 1), False) for t in tiles]
    if not fp8:
        tiles += [t + (True,) for t in WGMMA_SWAP_TILES]

    def cost(tile):
        bm, bn, _, _, w, _ = tile
        return -(-tile_count(m, n, tile) // sms) * bm * bn * w, -bm * bn
    bm, bn, bk, stages, _, swap = min(tiles, key=cost)
    return gluon_tile(cfg, bm, bn, bk, stages, swap)


def gluon_tile(cfg, block_m, block_n, block_k, stages, swap):
    """cfg running one Gluon tile: whole tiles, 4 warps per consumer warpgroup; a width that is no power of two as
    the largest power of two below it plus rem_cols (160: 128 + 32)."""
    width = 1 << (block_n.bit_length() - 1)
    return replace(cfg, block_m=block_m, block_n=width, block_k=block_k, num_stages=stages, num_warps=4, split_k=1,
                   split_tail=False, swap_ab=swap, rem_rows=0, rem_cols=block_n - width, turns=False)


def precise_promotion(cfg):
    """wgmma.run's promote for FP8 precise accumulation on cfg's Gluon tile: "pairs" on FP8_PAIRS_TILES whole and
    not swapped, else True (every block). Host only, free."""
    pairs = ((cfg.block_m, cfg.block_n) in FP8_PAIRS_TILES and cfg.split_k == 1 and not cfg.swap_ab
             and not cfg.rem_cols and not cfg.turns)
    return "pairs" if pairs else True


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
    if (cfg.swap_ab or cfg.rem_rows or cfg.rem_cols or cfg.turns) and variant is not None:
        what = ("swap_ab=True" if cfg.swap_ab else f"rem_rows={cfg.rem_rows}" if cfg.rem_rows
                else f"rem_cols={cfg.rem_cols}" if cfg.rem_cols else "turns=True")
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

"""The GEMM at every shape (issue 31): the public shape set and its classes, the default model's choices per class
(decode tiles, plain split-K where tiles are few, the K-aware half-tile cost), the store-alignment hint, and FP8
scaled_mm: host refusals, and its edge tiles against float64 under the Triton interpreter (which runs FP8 dots)."""

import pytest
import torch

from benchmarks import shapes as S
from fused_ops import fp8, local_gemm
from fused_ops.config import (
    DECODE_FEW_TILE,
    DECODE_TILE,
    FP8_DECODE_TILE,
    FP8_DECODE_WIDE_TILE,
    FP8_DECODE_WIDEST_TILE,
    FP8_FEW_TILE,
    FP8_PRECISE_TILE,
    HOPPER_FP8_TILES,
    HOPPER_TILES,
    MAX_SPLIT,
    Config,
    default_config,
    fp8_catalog_defaults,
    fp8_decode_split,
    fp8_defaults,
    half_tile_cost,
    resolve,
    wgmma_config,
)
from fused_ops.gemm import SERIAL_SLICES, copy_rows_kernel, copy_vec, pad_weight, store_vec


class _GPU:
    backend = "cuda"
    ranks_per_device = 1

    def get_cu_count(self):
        return 132


def _tile(cfg):
    return cfg.block_m, cfg.block_n, cfg.block_k


def test_shape_set_layers_and_classes():
    # Llama-3 70B at TP 8: QKV (64/8 + 2) heads x 128, vocabulary ceil(128256 / 8)
    assert S.layer_gemms("llama3-70b", 8) == {"qkv": (1280, 8192), "attn_out": (8192, 1024), "mlp_up": (7168, 8192),
                                              "mlp_down": (8192, 3584), "vocab": (16032, 8192)}
    # Qwen2.5-7B's 4 KV heads are replicated at TP 8 (one per rank)
    assert S.layer_gemms("qwen2.5-7b", 8)["qkv"] == ((28 // 8 + 2) * 128, 3584)
    every = S.model_shapes()
    assert len({(m, n, k) for m, n, k, _ in every}) == len(every)  # deduplicated
    assert {t["source"].split()[0] for *_, t in every} >= set(S.MODELS) | {"odd"}
    assert {t["class"] for *_, t in every} == set(S.CLASSES)
    picked = S.sample(every)
    assert picked == S.sample(every)  # a fixed seed: the same sample on every machine
    assert {t["class"] for *_, t in picked} == set(S.CLASSES)
    assert all(2 * m * n * k <= 2e12 for m, n, k, _ in picked)
    assert [S.shape_class(*s) for s in ((1, 4096, 4096), (128, 128, 65536), (128, 768, 4096), (16384, 640, 3584),
                                        (128, 32320, 7168), (4096, 3000, 4096), (4096, 4096, 3000),
                                        (3000, 4096, 4096), (4096, 4096, 4096))] == list(S.CLASSES)
    assert len(S.global_shapes()) >= 8
    thirds = [S.part(every, f"{i}/3") for i in (1, 2, 3)]  # parts of a set too long for one run: all, once each
    assert sorted(s[:3] for p in thirds for s in p) == sorted(s[:3] for s in every)
    assert max(map(len, thirds)) - min(map(len, thirds)) <= 1 and S.part(every, None) is every
    for bad in ("0/3", "4/3", "3", "a/b"):
        with pytest.raises(ValueError, match=r"expected I/N with 1 <= I <= N"):
            S.part(every, bad)


def test_store_vec_is_the_alignment_every_offset_shares():
    c = torch.empty(8, 3000, dtype=torch.bfloat16)
    assert store_vec(c, c.stride(0), 3000) == 8  # 3000 = 8 x 375: 16-byte rows
    assert store_vec(c, c.stride(0), 3000, 4) == 4  # a column offset of 4 elements: 8-byte stores
    assert store_vec(c, 4097) == 1
    assert store_vec(c[:, 1:], 3000, 2999) == 1  # the base address itself is off by 2 bytes
    assert store_vec(torch.empty(4, 12, dtype=torch.float32), 12) == 4


def test_decode_rows_get_16_row_tiles():
    for n, k, want, split in ((4000, 4096, DECODE_FEW_TILE, 2), (19008, 8192, DECODE_TILE, 1),
                              (5120, 6912, DECODE_TILE, 1)):
        for m in (1, 16):
            cfg = default_config(_GPU(), m, n, k, torch.bfloat16, split=True)
            assert _tile(cfg) == want[:3] and (cfg.num_stages, cfg.num_warps) == want[3:], (m, n, k, cfg)
            assert resolve(cfg, None, m, n, k).split_k == split
    # a variant that cannot split tiles keeps whole ones
    assert default_config(_GPU(), 1, 4000, 4096, torch.bfloat16).split_k == 1
    assert default_config(_GPU(), 32, 4000, 4096, torch.bfloat16).block_m == 64  # decode tiles stop at 16 rows


def test_decode_rows_of_matmul_run_several_programs_per_sm():
    # fused_ops.matmul's defaults (nothing waits). More tiles than SMs: 3 programs of 3 stages per SM (4 of 2 where
    # the tiles need them), 2 slices of a long K while every slice has a program
    cases = {(1, 9216, 16384): (3, 3, 2), (16, 12288, 1536): (3, 3, 1), (1, 26624, 16384): (2, 4, 1),
             (1, 64128, 4096): (3, 3, 1)}
    for (m, n, k), (stages, per_sm, split) in cases.items():
        cfg = local_gemm.defaults(_GPU(), m, n, k, torch.bfloat16)
        assert _tile(cfg) == (16, 64, 128) and (cfg.num_stages, cfg.gemm_sms // 132, cfg.split_k) == (
            stages, per_sm, split), (m, n, k, cfg)
        assert resolve(cfg, None, m, n, k).split_k == split
    # one wave of tiles or less: one program per SM, in slices of K filling the wave (6 stages of 128), or whole
    # (256-deep blocks; 128-deep where K is short)
    cases = {(1, 2560, 8192): (DECODE_FEW_TILE, 3), (16, 1280, 8192): (DECODE_FEW_TILE, 6),
             (1, 640, 2880): (DECODE_FEW_TILE, 4), (1, 3584, 2368): (DECODE_FEW_TILE, 2),
             (1, 5120, 6912): (DECODE_TILE, 1), (16, 3584, 448): ((16, 64, 128, 3, 4), 1)}
    for (m, n, k), (tile, split) in cases.items():
        cfg = local_gemm.defaults(_GPU(), m, n, k, torch.bfloat16)
        assert (_tile(cfg) + (cfg.num_stages, cfg.num_warps), cfg.gemm_sms, cfg.split_k) == (tile, 132, split), (
            m, n, k, cfg)
        assert -(-n // 64) * split <= 132  # one wave
    # a third of the SMs to all of them: the least work on the busiest SM. Short slices, and slices two to an SM (only
    # short ones), in 3-stage programs, 3 per SM; long ones alone on their SM, 6 stages deep; else whole
    cases = {(1, 5120, 2560): (3, 3), (16, 5120, 3456): (3, 3), (1, 3072, 4096): (5, 3), (16, 4096, 1792): (2, 3),
             (1, 3584, 9472): (2, 6), (1, 4608, 7168): (1, 4)}
    for (m, n, k), (split, stages) in cases.items():
        cfg = local_gemm.defaults(_GPU(), m, n, k, torch.bfloat16)
        assert (cfg.split_k, cfg.num_stages, cfg.gemm_sms) == (split, stages, 396 if stages == 3 else 132), (
            m, n, k, cfg)
        assert resolve(cfg, None, m, n, k).split_k == split
        assert -(-n // 64) * split <= 2 * 132  # at most two slices on an SM
    # the fused ops' GEMMs keep one program per SM: theirs may wait on one another
    assert default_config(_GPU(), 1, 9216, 16384, torch.bfloat16, split=True).gemm_sms == 132


def test_64_row_tiles_by_waves_area_and_slices():
    # 64x64 tiles where they fit in one wave as the 64x128 ones do; slices of 64x128 tiles where few and K long
    cases = {(128, 3584, 448): (64, 64, 1), (128, 4096, 2048): (64, 64, 1), (128, 2304, 16384): (64, 128, 3),
             (128, 3584, 9472): (64, 128, 2), (128, 4608, 7168): (64, 128, 1), (128, 1792, 5120): (64, 64, 2)}
    for (m, n, k), want in cases.items():
        cfg = default_config(_GPU(), m, n, k, torch.bfloat16, split=True)
        assert (cfg.block_m, cfg.block_n, cfg.split_k) == want, (m, n, k, cfg)
        assert default_config(_GPU(), m, n, k, torch.bfloat16).split_k == 1  # a variant that cannot split
    # K >> M x N keeps plain split-K over many slices
    assert default_config(_GPU(), 128, 128, 65536, torch.bfloat16, split=True).split_k == 33


def test_gluon_tiles_between_powers_of_two_fill_one_wave():
    # (height, width) of the Gluon kernel's pick: 128x192 (1024x2880: 120 tiles), 128x288 (4096x1152, 1024x4608: 128;
    # 128x38016: 132), 256x144 (1024x4736: 132, where 288-wide ones need two waves), 128x96 where 128x128 tiles leave
    # SMs idle (1024x1440: 120 tiles), or 64x192 ones from K of 2880 where B's rows are aligned (1024x1280: 112 tiles),
    # or 64x320 ones where 128 of them fill 95% of the SMs (1024x2304: its last tile a fifth full; at 1024x2112, 112 of
    # them, the swapped 256x64 tiles stay) and in one or two waves up to 4096 rows where N is a multiple of 320
    # (4096x1280: 256 tiles)
    cases = {(1024, 2880): (128, 192), (1024, 3072): (128, 192), (4096, 1152): (128, 288), (1024, 4608): (128, 288),
             (128, 38016): (128, 288), (1024, 4736): (256, 144),
             (1024, 1280): (64, 192), (1024, 1440): (128, 96), (1024, 2304): (64, 320), (1024, 2112): (256, 64),
             (4096, 1280): (64, 320)}
    for (m, n), want in cases.items():
        cfg = wgmma_config(local_gemm.defaults(_GPU(), m, n, 4096, torch.bfloat16), m, n, 132, torch.bfloat16, k=4096,
                           b_aligned=n * 2 % 128 == 0)
        assert (cfg.block_m, cfg.block_n + cfg.rem_cols) == want, (m, n, cfg)


def test_plain_split_k_where_tiles_are_few():
    for m, n, k in ((128, 128, 65536), (64, 256, 131072)):
        cfg = default_config(_GPU(), m, n, k, torch.bfloat16, split=True)
        # 4 tiles of 64x64: 33 slices each, every SM streaming (more than SERIAL_SLICES: summed by atomics)
        assert (cfg.split_k, cfg.split_tail) == (33, False) and cfg.split_k > SERIAL_SLICES
        assert resolve(cfg, None, m, n, k).split_k == 33  # resolve keeps the default's plain split
        # a caller's tiles get their own split; split_tail=False from the caller means whole tiles
        wide = Config(block_n=128)  # 2 tiles: 66 slices would fit the programs, MAX_SPLIT caps them
        assert resolve(wide.merged(cfg), wide, m, n, k).split_k == MAX_SPLIT == 64
        user = Config(split_tail=False)
        assert resolve(user.merged(cfg), user, m, n, k).split_k == 1
    # half the SMs busy with 64x128 tiles: whole tiles (results/archive/gemm_small_21da4a4.csv.gz)
    assert default_config(_GPU(), 128, 8192, 8192, torch.bfloat16, split=True).split_k == 1


def test_the_smallest_tile_splits_where_it_leaves_half_the_programs_idle():
    # 64x64 tiles: 56 of them (128 x 1792) in 2 slices, 36 (128 x 1152) in 3: one wave of 112 and 108 programs
    for (m, n, k), want in {(128, 1792, 5120): 2, (128, 1152, 7168): 3, (192, 1024, 4096): 2}.items():
        cfg = default_config(_GPU(), m, n, k, torch.bfloat16, split=True)
        assert (cfg.block_m, cfg.block_n, cfg.split_k, cfg.split_tail) == (64, 64, want, False), (m, n, k, cfg)
        assert resolve(cfg, None, m, n, k).split_k == want
        assert default_config(_GPU(), m, n, k, torch.bfloat16).split_k == 1  # a variant that cannot split
    # 72 tiles: more than half the programs, whole; slices shorter than MIN_SLICE_BLOCKS blocks: whole
    assert default_config(_GPU(), 256, 1152, 2880, torch.bfloat16, split=True).split_k == 1
    assert default_config(_GPU(), 128, 2880, 1024, torch.bfloat16, split=True).split_k == 1
    # FP8 keeps its own few-tile rule (512-deep whole tiles with precise accumulation: fp8_defaults)
    assert default_config(_GPU(), 128, 1792, 5120, torch.float8_e4m3fn, split=True).split_k == 1


def test_64_row_tiles_only_where_they_take_no_more_waves():
    # 128 x 12288: 192 64x128 tiles (2 waves of 132) vs 96 128x128 tiles (1 wave): the larger tile (0.80 -> 0.96x)
    assert _tile(default_config(_GPU(), 128, 12288, 1536, torch.bfloat16)) == HOPPER_TILES[1][:3]
    # one wave either way: the 64-row tile stays (1024x896x5120: 0.81x vs 0.62x for 128x128)
    for m, n, k in ((1024, 896, 5120), (129, 4096, 4096), (128, 8192, 7392)):
        assert _tile(default_config(_GPU(), m, n, k, torch.bfloat16)) == HOPPER_TILES[2][:3], (m, n, k)


def test_pad_weight_aligns_rows_and_keeps_values():
    w = torch.randn(5, 1000, dtype=torch.float16)
    p = pad_weight(w)
    assert p.shape == w.shape and p.stride() == (1024, 1) and torch.equal(p, w)
    assert pad_weight(p) is p  # aligned already: no copy
    t = torch.randn(1000, 64, dtype=torch.float16).t()  # nn.Linear's weight.t(): K-major, rows of K = 64: aligned
    assert pad_weight(t) is t
    assert pad_weight(w, 8).stride(0) == 1000
    with pytest.raises(ValueError, match="2-D"):
        pad_weight(torch.zeros(3))
    with pytest.raises(ValueError, match="multiple of 16 bytes"):
        pad_weight(w, 4)


def test_pad_weight_keeps_a_k_major_weight_k_major_with_its_rows_of_k_padded():
    # FP8 takes B only K-major (w.t() of an N x K weight): padding must not turn it row-major
    for dtype, k in ((torch.float16, 1000), (torch.float8_e4m3fn, 3696)):
        w = torch.randn(24, k).to(dtype)  # N x K
        p = pad_weight(w.t(), 128)
        assert p.shape == (k, 24) and p.stride(0) == 1 and p.stride(1) % 128 == 0, p.stride()
        assert torch.equal(p.float(), w.t().float())


def test_rows_off_32_bytes_are_copied_only_where_the_gemm_pays_for_it():
    from fused_ops import local_gemm
    from fused_ops.local_gemm import sector_copies

    def a(m, k, pad=0):
        return torch.empty(m, k + pad, dtype=torch.float8_e4m3fn)[:, :k]

    def b(n, k, k_major=True, pad=0):
        w = torch.empty(n, k + pad, dtype=torch.float8_e4m3fn)[:, :k]
        return w.t() if k_major else w.t().contiguous()
    # (copy A, copy B): B from about 3000 rows at 8192 x 3696; A, the smaller copy, from 1024 rows
    assert sector_copies(4096, 8192, 3696, a(4096, 3696), b(8192, 3696)) == (True, True)
    assert sector_copies(16384, 8192, 3696, a(16384, 3696), b(8192, 3696)) == (True, True)
    assert sector_copies(1024, 8192, 3696, a(1024, 3696), b(8192, 3696)) == (True, False)
    assert sector_copies(4096, 8192, 3696, a(4096, 3696), b(8192, 3696), fast=True) == (False, True)  # broke even
    assert sector_copies(128, 8192, 3696, a(128, 3696), b(8192, 3696)) == (False, False)  # a launch's worth
    assert sector_copies(16384, 2880, 720, a(16384, 720), b(2880, 720)) == (False, True)  # A: 16384 rows to copy
    assert sector_copies(16384, 8192, 7392, a(16384, 7392), b(8192, 7392)) == (False, False)  # rows 32-byte aligned
    assert sector_copies(16384, 8192, 3696, a(16384, 3696, 16), b(8192, 3696, pad=16)) == (False, False)  # padded
    assert sector_copies(16384, 8192, 3696, a(16384, 3696), b(8192, 3696, k_major=False))[1] is False  # not FP8's B
    # 16-bit: K-major B only, rows of K x 2 bytes off 32 (row-major B of such rows ran at torch's rate as given)
    def b16(n, k, k_major=True, pad=0):
        w = torch.empty(n, k + pad, dtype=torch.bfloat16)[:, :k]
        return w.t() if k_major else torch.empty(k, n + pad, dtype=torch.bfloat16)[:, :n]
    a16 = torch.empty(16384, 360, dtype=torch.bfloat16)
    assert sector_copies(16384, 2880, 360, a16, b16(2880, 360)) == (False, True)  # gpt-oss at TP 8: 2 MB of B
    assert sector_copies(4096, 4096, 3000, a16[:4096, :3000], b16(4096, 3000)) == (False, True)
    assert sector_copies(4096, 3000, 4096, a16, b16(3000, 4096, k_major=False)) == (False, False)  # row-major
    assert sector_copies(1024, 4096, 3000, a16, b16(4096, 3000)) == (False, False)  # 24.6 MB for a short GEMM
    assert sector_copies(4096, 1440, 2880, a16, b16(1440, 2880, k_major=False)) == (False, False)  # 32-byte aligned
    assert sector_copies(16384, 2880, 360, a16, b16(2880, 360, pad=8)) == (False, False)  # padded already
    local_gemm.COPY_16BIT_B = False  # (the benchmark's "matmul, B rows as given")
    try:
        assert sector_copies(16384, 2880, 360, a16, b16(2880, 360)) == (False, False)
    finally:
        local_gemm.COPY_16BIT_B = True
    local_gemm.COPY_A = False  # (the benchmark's "default, no A copy")
    try:
        assert sector_copies(4096, 8192, 3696, a(4096, 3696), b(8192, 3696)) == (False, True)
    finally:
        local_gemm.COPY_A = True


def test_16bit_a_rows_off_32_bytes_pick_256_wide_tiles_where_b_rows_are_aligned():
    # config.UNALIGNED_A_COST: K = 360 (rows of 720 bytes) makes tiles that read A more often dearer
    from benchmarks.gemm_picks import pick
    kernel, cfg = pick(16384, 2880, 360, "bf16")
    assert (kernel, cfg.block_m, cfg.block_n, bool(cfg.swap_ab)) == ("wgmma", 128, 256, False), cfg
    kernel, cfg = pick(16384, 2880, 384, "bf16")  # rows of 768 bytes: the 192x128 tiles, as before
    assert (kernel, cfg.block_m, cfg.block_n) == ("wgmma", 192, 128), cfg
    kernel, cfg = pick(1024, 2880, 360, "bf16", b_k_major=True)  # B's rows off too: not moved onto swapped tiles
    assert (kernel, cfg.block_n + (cfg.rem_cols or 0), bool(cfg.swap_ab)) == ("wgmma", 192, False), cfg


@pytest.mark.parametrize("dtype, vec, cols, src_stride", [(torch.bfloat16, 8, 1000, 1000), (torch.float8_e4m3fn, 16,
                                                                                             3696, 3696),
                                                          (torch.float16, 2, 998, 1004)])
def test_copy_rows_kernel_copies_rows_between_any_strides(dtype, vec, cols, src_stride):
    # pad_weight's copy on a GPU, under the interpreter: rows of unaligned length into 128-byte aligned ones (a view
    # of wider storage as the source too); the destination's padding and the rows past the last stay untouched
    import os

    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("the interpreter (on a GPU pad_weight runs it)")
    rows = 19
    src = torch.randn(rows, src_stride).to(dtype)[:, :cols]
    dst = torch.full((rows + 1, 1024 * 4), 7.0).to(dtype)
    assert copy_vec(src, dst) == vec  # what copy_rows passes: 16 bytes, less where the row length does not divide
    copy_rows_kernel[(-(-rows // 8), -(-cols // 512))](src, dst, rows, cols, src.stride(0), dst.stride(0), VEC=vec,
                                                       BLOCK_R=8, BLOCK_C=512)
    assert torch.equal(dst[:rows, :cols].float(), src.float())
    assert (dst[:rows, cols:].float() == 7).all() and (dst[rows:].float() == 7).all()


def test_half_tile_cost_rises_where_k_is_short():
    assert half_tile_cost(36864, 64) == pytest.approx(0.528, abs=0.01)
    assert half_tile_cost(2048, 64) > 0.6 > half_tile_cost(8192, 64)
    # 16384 x 2880 x 2048: the 128x256 tile (0.88x torch.matmul) over the 128x128 one the long-K figure chose (0.73x)
    assert _tile(default_config(_GPU(), 16384, 2880, 2048, torch.bfloat16)) == HOPPER_TILES[0][:3]
    # 1024 x 2112 x 7168: 136 half tiles, 4 in a second wave: that wave is split
    cfg = default_config(_GPU(), 1024, 2112, 7168, torch.bfloat16, split=True)
    assert _tile(cfg) == HOPPER_TILES[1][:3] and cfg.split_tail


def test_fp8_tiles_hold_the_same_bytes_per_stage():
    for (bm, bn, bk, st, w, _), (fm, fn, fk, fst, fw, _) in zip(HOPPER_TILES, HOPPER_FP8_TILES):
        assert (fm, fn, fk, fst, fw) == (bm, bn, 2 * bk, st, w)
    assert default_config(_GPU(), 8192, 8192, 8192, torch.float8_e4m3fn).block_k == 128


def test_fp8_defaults_replace_the_spilling_128_row_tiles_and_use_decode_tiles():
    # scaled_mm (config.fp8_defaults): without fast accumulation, 128x256 and 128x128 defaults -> 128x128x256 whole
    # tiles; decode -> 16-row tiles (two slices of K where they leave half the SMs idle), with fast accumulation too;
    # plain split-K and the other 64-row tiles kept
    def pick(m, n, k, fast=False):
        c = fp8_defaults(default_config(_GPU(), m, n, k, torch.float8_e4m3fn, split=True), m, n, k, fast)
        return (c.block_m, c.block_n, c.block_k, c.num_stages, c.num_warps, c.split_k, c.split_tail)
    assert pick(16384, 8192, 7392) == (*FP8_PRECISE_TILE, 1, False)
    assert pick(4096, 4544, 4544) == (*FP8_PRECISE_TILE, 1, False)  # was 128x256 with its last wave split
    assert pick(1, 19008, 8192) == (*FP8_DECODE_WIDEST_TILE, 1, False)
    assert pick(1, 19008, 8192, fast=True) == (*FP8_DECODE_WIDEST_TILE, 1, False)
    assert pick(1, 4000, 4096) == (*FP8_DECODE_WIDE_TILE, 4, False)  # 32 tiles x 4 slices: 128 programs
    assert pick(16384, 8192, 7392, fast=True)[:3] == (128, 256, 128)
    assert pick(128, 128, 65536)[5] > 1 and pick(128, 128, 65536)[:2] == (64, 64)
    # few 64x64 tiles (fewer than half the SMs) whose K is too short to slice: 512-deep blocks, whole, precise only
    for m, n, k in ((128, 640, 3584), (128, 768, 4096), (128, 1792, 5120)):
        assert pick(m, n, k) == (*FP8_FEW_TILE, 1, False), (m, n, k)
        assert pick(m, n, k, fast=True)[:3] == (64, 64, 256), (m, n, k)
    assert pick(128, 2560, 2880)[:3] == (64, 64, 256)  # 80 tiles: more than half the SMs
    # 64-row tiles as 16-bit ones choose them (row_tile), whole: 64x64 where both fit one wave, else 64x128
    assert pick(128, 3584, 4736)[:3] == (64, 64, 256) and pick(128, 4608, 16384)[:3] == (64, 128, 256)
    # scaled_mm runs alone: where no 16-row tile fits one wave, three 3-stage programs per SM; the catalog's keep one
    for fast in (False, True):
        alone = fp8_defaults(default_config(_GPU(), 1, 38016, 3584, torch.float8_e4m3fn, split=True), 1, 38016,
                             3584, fast, alone=True)
        assert (_tile(alone), alone.num_stages, alone.gemm_sms, alone.split_k) == ((16, 64, 256), 3, 396, 1)
    assert fp8_catalog_defaults(default_config(_GPU(), 1, 38016, 3584, torch.float8_e4m3fn, split=True), 1, 38016,
                                3584, True).gemm_sms == 132
    one = fp8_defaults(default_config(_GPU(), 1, 19008, 8192, torch.float8_e4m3fn, split=True), 1, 19008, 8192,
                       alone=True)
    assert (one.block_n, one.gemm_sms) == (256, 132)  # the widest tiles fill one wave


def test_fp8_catalog_ops_take_the_fp8_tiles():
    # the catalog's FP8 GEMMs (always precise): FP8_PRECISE_TILE for 128-row defaults, FP8_FEW_TILE for few 64x64
    # tiles, the decode rule where the variant splits tiles, default_config's tiles at decode where it cannot
    def base(m, n, k, split):
        return default_config(_GPU(), m, n, k, fp8.FP8, split=split)
    for split in (False, True):
        assert _tile(fp8_catalog_defaults(base(4096, 4096, 8192, split), 4096, 4096, 8192, split)) == \
            FP8_PRECISE_TILE[:3]
        assert _tile(fp8_catalog_defaults(base(128, 640, 3584, split), 128, 640, 3584, split)) == FP8_FEW_TILE[:3]
    decode = base(16, 5120, 6912, True)
    assert fp8_catalog_defaults(decode, 16, 5120, 6912, True) == fp8_defaults(decode, 16, 5120, 6912)
    whole = base(16, 5120, 6912, False)
    assert fp8_catalog_defaults(whole, 16, 5120, 6912, False) == whole and whole.split_k == 1


def test_fp8_decode_tiles_fill_one_wave():
    # 16-row FP8 tiles, 128 or 64 wide, in slices of K: the most programs that fit one wave of 132 (ties: the wider
    # tile, then fewer slices), slices of 4+ blocks of K; else the 64-wide tile as before (many slices of a long K
    # over a narrow N, or too many tiles for one wave)
    wide, narrow = FP8_DECODE_WIDE_TILE, FP8_DECODE_TILE
    assert fp8_decode_split(16, 5120, 6912, 132) == (wide, 3)  # 40 x 3 = 120 programs, not 80 64-wide tiles
    assert fp8_decode_split(16, 6912, 5120, 132) == (wide, 2)  # 54 x 2 = 108 (108 64-wide tiles tie: the wider)
    assert fp8_decode_split(4, 14336, 4096, 132) == (wide, 1)  # 112 tiles; 224 64-wide ones take two waves
    assert fp8_decode_split(1, 4000, 4096, 132) == (wide, 4)  # 128, against 63 x 2 = 126
    assert fp8_decode_split(16, 3584, 2368, 132) == (narrow, 2)  # 28 x 4 would slice 10 blocks of K into 2.5
    # 149 128-wide tiles: more than one wave; 75 256-wide ones fit
    assert fp8_decode_split(1, 19008, 8192, 132) == (FP8_DECODE_WIDEST_TILE, 1)
    assert fp8_decode_split(1, 40000, 8192, 132) == (narrow, 1)  # 157 256-wide tiles: no tile fits one wave
    assert fp8_decode_split(1, 256, 131072, 132) == (narrow, 33)  # 4 tiles: plain split-K into many slices
    for m, n, k in ((16, 5120, 6912), (1, 4000, 4096), (16, 3584, 2368), (1, 19008, 8192)):
        (bm, bn, bk, _, _), split = fp8_decode_split(m, n, k, 132)
        tiles = -(-n // bn)
        assert tiles * split <= 132 or split == 1, (m, n, k)
        assert split == 1 or -(-k // bk) >= 4 * split, (m, n, k)
        # ... and the call keeps that split (resolve once recomputed it as for bf16 decode tiles: 3 -> 2 slices)
        base = default_config(_GPU(), m, n, k, fp8.FP8, split=True)
        cfg = resolve(fp8_defaults(base, m, n, k), None, m, n, k)
        assert (_tile(cfg), cfg.split_k) == ((bm, bn, bk), split), (m, n, k, cfg)
        other = Config(block_n=64)  # a caller's tile: the split of that tile
        assert resolve(other.merged(fp8_defaults(base, m, n, k)), other, m, n, k).block_n == 64


def _fp8(*shape):
    return torch.randn(*shape).to(fp8.FP8)


@pytest.mark.parametrize("case, error, words", [
    ("a_dtype", TypeError, "expected torch.float8_e4m3fn"),
    ("b_row_major", ValueError, "column-major"),
    ("inner", ValueError, "inner dimensions differ"),
    ("scale_shape", ValueError, "per-tensor"),
    ("mixed_scales", ValueError, "row-wise"),
    ("scale_dtype", TypeError, "expected torch.float32"),
    ("out_dtype", TypeError, "out_dtype"),
    ("out_shape", ValueError, "out must be a 4 x 6"),
    ("empty", ValueError, "empty operands"),
])
def test_fp8_refusals_say_what_was_expected(case, error, words):
    a, b = _fp8(4, 8), _fp8(6, 8).t()
    sa, sb = torch.tensor(1.0), torch.tensor(1.0)
    kw = {}
    if case == "a_dtype":
        a = a.half()
    elif case == "b_row_major":
        b = b.contiguous()
    elif case == "inner":
        b = _fp8(6, 9).t()
    elif case == "scale_shape":
        sa = torch.ones(4)
    elif case == "mixed_scales":
        sa, sb = torch.ones(4, 1), torch.tensor(1.0)
    elif case == "scale_dtype":
        sa = torch.tensor(1.0, dtype=torch.float64)
    elif case == "out_dtype":
        kw["out_dtype"] = torch.int8
    elif case == "out_shape":
        kw["out"] = torch.empty(6, 4, dtype=torch.bfloat16)
    elif case == "empty":
        a, b = _fp8(0, 8), _fp8(6, 8).t()
    with pytest.raises(error, match=words):
        fp8.scaled_mm(a, b, sa, sb, **kw)


# (m, n, k, config): edges of every kind: M/N/K of 1, primes, N = 8 mod 16 with fp16 out (16-byte stores through the
# alignment hint), plain split-K, and a split last wave (12 tiles over 5 programs: 2 full waves, 2 tiles split in 2)
FP8_CASES = [(1, 1, 1, Config(block_m=16, block_n=16, block_k=16)), (17, 31, 29, Config(block_m=16, block_n=16,
                              block_k=16)), (1, 40, 33, Config(block_m=16, block_n=16, block_k=32)),
             (37, 24, 70, Config(block_m=16, block_n=16, block_k=16, split_k=3)),
             # more slices than gemm.SERIAL_SLICES: added by fp32 atomics (K blocks 13 over 12 slices: some empty)
             (20, 24, 200, Config(block_m=16, block_n=16, block_k=16, split_k=12, gemm_sms=24)),
             (48, 64, 256, Config(block_m=16,
                                 block_n=16, block_k=16, gemm_sms=5,
                                                                                split_tail=True))]


@pytest.mark.skipif(__import__("iris").BACKEND == "cuda", reason="the interpreter's FP8 path (CPU tensors); on GPUs "
                    "test_fp8_default_configs_on_gpu_match_float64_like_torch checks the compiled one")
@pytest.mark.parametrize("m, n, k, cfg", FP8_CASES)
def test_fp8_edge_tiles_match_float64(m, n, k, cfg):
    torch.manual_seed(m * 1000 + n + k)
    plan, _ = fp8.plan(_fp8(m, k), _fp8(n, k).t(), cfg)
    if cfg.split_tail:
        assert plan.split_k == 2 and plan.split_tail
    for call in range(3):  # fresh inputs, poisoned output, repeated calls (split-K counts re-armed every call)
        row = call % 2 == 1
        a, b = _fp8(m, k), _fp8(n, k).t()
        sa = torch.rand(m, 1) + 0.5 if row else torch.tensor(0.75)
        sb = torch.rand(1, n) + 0.5 if row else torch.tensor(1.5)
        out_dtype = torch.float16 if call == 2 else torch.float32
        out = torch.full((m, n), float("nan"), dtype=out_dtype)
        c = fp8.scaled_mm(a, b, sa, sb, out_dtype=out_dtype, out=out, config=cfg)
        assert c is out and not torch.isnan(c).any()
        ref = (a.double() * sa.double()) @ (b.double() * sb.double())
        err = ((c.double() - ref).norm() / ref.norm()).item()
        assert err < (1e-3 if out_dtype == torch.float16 else 1e-6), (m, n, k, call, err)


# ------------------------------------------------------------------------------------------------ GPU only
ON_GPU = torch.cuda.is_available() and __import__("iris").BACKEND == "cuda"


@pytest.mark.skipif(not ON_GPU, reason="FP8 tensor cores: GPU only (the interpreter cases above run on the CPU)")
def test_fp8_default_configs_on_gpu_match_float64_like_torch():
    # The public set's edge classes with the FP8 defaults (decode, plain split-K, split tails, N not a multiple of the
    # tile), both scalings, against float64 and within 2x (or 1e-2) of torch._scaled_mm's own error; with fast
    # accumulation where per-tensor scales take 256x160 Gluon tiles (row-wise ones: 128x256), 192x128 and 128x144 ones;
    # decode rows in swapped tiles sliced along K, and in several tile-loop programs per SM, with either accumulation.
    cases = [(m, n, k, False) for m, n, k in ((1, 4000, 4096), (16, 3584, 2368), (128, 128, 65536), (1024, 2112, 7168),
                                              (4096, 3000, 4096), (3000, 4096, 4096), (333, 784, 2048))]
    cases += [(m, n, k, True) for m, n, k in ((4096, 1152, 3584), (1024, 4736, 1024), (4096, 2304, 3584),
                                              (1024, 2112, 7168))]
    cases += [(m, n, k, f) for m, n, k in ((16, 2304, 16384), (1, 38016, 3584)) for f in (False, True)]
    for m, n, k, fast in cases:
        for row in (False, True):
            a32, w32 = torch.randn(m, k, device="cuda"), torch.randn(n, k, device="cuda")
            sa = (a32.abs().amax(1, keepdim=True) if row else a32.abs().amax()) / 448
            sb = (w32.abs().amax(1, keepdim=True).t() if row else w32.abs().amax()) / 448
            a = (a32 / sa).to(fp8.FP8)
            b = (w32 / (sb.t() if row else sb)).to(fp8.FP8).t()
            sa, sb = sa.float().contiguous(), sb.float().contiguous()
            ref = (a.double() * sa.double()) @ (b.double() * sb.double())
            for _ in range(2):
                out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
                fp8.scaled_mm(a, b, sa, sb, out=out, use_fast_accum=fast)
                err = ((out.double() - ref).norm() / ref.norm()).item()
                err_torch = 0.0  # torch._scaled_mm refuses N or K not a multiple of 16
                if n % 16 == 0 and k % 16 == 0:
                    err_torch = ((torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast)
                                  .double() - ref).norm() / ref.norm()).item()
                assert err < max(2 * err_torch, 1e-2), (m, n, k, row, fast, err, err_torch)


def r_atomic_slices(ctx, op, variant):
    """r_check with 10 slices per tile (more than gemm.SERIAL_SLICES: added by fp32 atomics into a partial that the
    last slice zeroes again), 16-wide tiles at edges of 4; K blocks 9, so a slice is empty."""
    from test_fused_ops import r_check
    w = ctx.get_num_ranks()
    cfg = {"block_m": 16, "block_n": 16, "block_k": 16, "split_k": 10, "gemm_sms": 20}
    return r_check(ctx, op, variant, "float32", 20, 20 * w, 144, 3, cfg)


def test_atomic_slice_sums_in_fused_ops(ranks2):
    # the GEMM loop the fused variants share (FP8's scaled_mm, FP8_CASES above, covers the kernel of its own)
    errs = ranks2.run(r_atomic_slices, "gemm_all_scatter", "bulk_sync")
    assert all(isinstance(e, float) for e in errs), errs


def r_decode(ctx, op, variant, cfg):
    from test_fused_ops import r_check
    w = ctx.get_num_ranks()
    return r_check(ctx, op, variant, "bfloat16", 16 * w, 1000 * w, 768 * w, 2, cfg)


@pytest.mark.skipif(not ON_GPU, reason="16-row tiles compile differently on GPUs (mma.sync instead of wgmma)")
@pytest.mark.parametrize("op", ["gemm_all_scatter", "gemm_all_reduce", "all_gather_gemm", "gemm_reduce_scatter"])
def test_decode_tiles_in_every_variant(ranks2, op):
    from test_fused_ops import shares_gpus

    import fused_ops
    tiles = [dict(zip(("block_m", "block_n", "block_k", "num_stages", "num_warps"), t))
             for t in (DECODE_TILE, DECODE_FEW_TILE)]
    for cfg in tiles + [dict(tiles[1], split_k=2)]:
        for variant in fused_ops.list_variants(op, "cuda", "bfloat16"):
            v = fused_ops.get(op, variant)
            if v.pattern == "baseline" or shares_gpus(ranks2, op, variant) or ("split_k" in cfg and not v.split_k):
                continue
            errs = ranks2.run(r_decode, op, variant, cfg)
            assert all(isinstance(e, float) for e in errs), (variant, cfg, errs)


def test_pads_b_copies_only_unaligned_rows_of_large_gemms():
    # fused_ops/problem.py: B rows not 128-byte aligned are copied into aligned ones per call where the GEMM is long
    # enough for the copy (2 x K x N x 2 bytes at ~2.5 TB/s + a launch) to pay 1.5 times over (results/current/gemm/)
    from fused_ops.problem import pads_b

    for m, n, k in ((4096, 1000, 8192), (4096, 3000, 4096), (16384, 1440, 2880), (8192, 5000, 4096)):
        assert pads_b(m, n, k, 2, n), (m, n, k)
        assert not pads_b(m, n, k, 2, -(-n // 64) * 64), (m, n, k)  # aligned rows (pad_weight's): never
    # decode, small, and GEMMs whose gain (~25% of 2MNK at 600 TFLOP/s) does not cover the copy: B as given
    for m, n, k in ((1, 4000, 4096), (16, 1000, 8192), (128, 3000, 4096), (1000, 1000, 1000), (2048, 5000, 2048),
                    (4096, 1440, 2880), (1024, 2112, 7168), (4096, 2880, 360)):
        assert not pads_b(m, n, k, 2, n), (m, n, k)
    assert not pads_b(4096, 1024, 8192, 2, 1024) and not pads_b(4096, 1000, 8192, 4, 1024)  # 128-byte rows


def r_padded_b(ctx, op, variant, calls, replay, cols=1000):
    """Every call with fresh values of A and B (bf16; B's local rows `cols` elements: 1000, not 128-byte aligned, or
    999, not even 16-byte aligned: TMA only on the copy), the rule forced to copy (no margin, no launch cost) at this
    small shape; replay: the same tensors refilled in place (the calls from the third on replay a captured graph,
    which must copy the new B), else new tensors per call."""
    from fused_ops import problem
    from fused_ops import reference as R

    problem.PAD_B_MARGIN, problem.PAD_B_LAUNCH_S = 0.0, 0.0
    w = ctx.get_num_ranks()
    m, k = 256, 512 * w
    n = cols * w if op == "gemm_all_scatter" else cols
    _, (kb, nb), c_shape = R.local_shapes(op, m, n, k, w)
    assert nb == cols
    c = ctx.zeros(*c_shape, dtype=torch.bfloat16)
    a = b = None
    worst = 0.0
    for call in range(1, calls + 1):
        a_new, b_new, ref = R.make_inputs(op, 1000 + call, w, ctx.get_rank(), m, n, k, torch.bfloat16, ctx.get_device())
        if replay and a is not None:
            a.copy_(a_new)
            b.copy_(b_new)
        else:
            a, b = a_new, b_new
        c.fill_(float("nan"))
        ctx.barrier()
        getattr(__import__("fused_ops"), op)(ctx, a, b, c, variant=variant)
        err = R.rel_error(c, ref)
        if not err <= R.TOLERANCE[torch.bfloat16]:
            return f"call {call}: relative error {err}"
        worst = max(worst, err)
    padded = [key for key in problem._PADDED_B.get(ctx, {}) if key[1:3] == (kb, nb)]
    ctx.barrier()
    return worst if padded else "B was not copied into aligned rows"


@pytest.mark.skipif(not ON_GPU, reason="B is copied on CUDA only (TMA); the interpreter runs every stride alike")
@pytest.mark.parametrize("op", ["gemm_all_scatter", "gemm_all_reduce"])
@pytest.mark.parametrize("cols", [1000, 999], ids=["rows-not-128-byte-aligned", "rows-not-16-byte-aligned"])
def test_unaligned_b_copied_per_call_with_fresh_values(ranks2, op, cols):
    from test_fused_ops import shares_gpus

    import fused_ops
    ran = 0
    for variant in fused_ops.list_variants(op, "cuda", "bfloat16"):
        if fused_ops.get(op, variant).pattern == "baseline" or shares_gpus(ranks2, op, variant):
            continue
        for replay in (True, False):
            errs = ranks2.run(r_padded_b, op, variant, 6, replay, cols)
            assert all(isinstance(e, float) for e in errs), (variant, replay, errs)
        ran += 1
    assert ran >= 2


def test_gemm_picks_lists_the_hosts_choice_and_the_picks_a_change_moves(tmp_path, capsys, monkeypatch):
    # benchmarks/gemm_picks.py: the same choice local_gemm.pick_kernel makes on a GPU, computed on the host, for
    # every public GEMM; --diff names the ones two such lists disagree on
    import sys

    from benchmarks import gemm_picks as P
    assert P.pick(128, 38016, 8192, "bf16")[1].rem_cols == 32  # the one-wave 128x288 tile
    assert P.pick(128, 2304, 3584, "bf16")[1].split_k == 3  # thirds of K
    assert P.pick(4096, 4096, 4096, "fp8 fast")[0] == "wgmma" and P.pick(128, 8192, 3696, "fp8")[0] == "tile_loop"
    assert P.pick(128, 4608, 7168, "fp8")[1].turns  # 64x80 tiles, two consumers taking turns on K
    # units of work and waves: 128 tiles of 64x320 at 1024x2304 (the last of each row a fifth full), 36 tiles of
    # swapped 128x128 in thirds at 128x4608x16384, 128x288 tiles at 128x38016 (132: one wave)
    assert P.waves(1024, 2304, P.pick(1024, 2304, 3584, "bf16")[1]) == (128, 0.97)
    assert P.waves(128, 4608, P.pick(128, 4608, 16384, "bf16")[1]) == (108, 0.82)
    assert P.waves(128, 38016, P.pick(128, 38016, 8192, "bf16")[1]) == (132, 1.0)
    # the benchmark's candidate that runs a pick by name (what a moved GEMM is timed against), "" for the tile loop's
    assert P.candidate(*P.pick(4096, 1280, 2880, "bf16"), "bf16") == "wgmma 64x256x64 s4 rem64"
    assert P.candidate(*P.pick(128, 4608, 7168, "fp8"), "fp8") == "wgmma fp8 64x64x128 s10 rem16 turns"
    assert P.candidate(*P.pick(128, 8192, 3696, "fp8"), "fp8") == ""
    assert P.pick(1024, 2304, 3584, "bf16 k-major")[1].rem_cols == 32  # 64x288 tiles on nn.Linear's layout
    # the operands copied into aligned rows for the Gluon kernel (rows off 32 bytes: local_gemm.sector_copies)
    assert [P.copies(m, 8192, 3696, "fp8", "wgmma") for m in (128, 1024, 4096)] == ["", "A", "A+B"]
    assert P.copies(4096, 8192, 3696, "fp8 fast", "wgmma") == "B"
    assert P.copies(4096, 8192, 3696, "fp8", "tile_loop") == ""
    assert P.copies(16384, 2880, 360, "bf16 k-major", "wgmma") == "B"
    assert P.copies(16384, 2880, 360, "bf16", "wgmma") == ""  # row-major B: read as given
    before, after = tmp_path / "before.csv", tmp_path / "after.csv"
    monkeypatch.setattr(sys, "argv", ["gemm_picks", "--shapes", "128x2304x3584", "4096x4096x4096", "--out",
                                      str(before)])
    P.main()
    monkeypatch.setattr(P.C, "THIRDS_MIN_BLOCKS", 64)  # a change to the defaults: 128x2304x3584 back to whole tiles
    monkeypatch.setattr(sys, "argv", ["gemm_picks", "--shapes", "128x2304x3584", "4096x4096x4096", "--out", str(after)])
    P.main()
    capsys.readouterr()
    monkeypatch.setattr(sys, "argv", ["gemm_picks", "--diff", str(before), str(after)])
    P.main()
    out = capsys.readouterr().out
    assert "2 of 8 picks moved" in out and "2304" in out and "4096  4096" not in out and "waves_after" in out
    assert "bf16 k-major" in out  # nn.Linear's layout listed beside row-major B
    assert "candidate_before" in out and "copies_before" in out


def test_gemm_classes_tables_the_targets_per_class_over_runs_and_parts(tmp_path, capsys, monkeypatch):
    # benchmarks/gemm_classes.py: per-class geomean, minimum and GEMMs below issue 31's floors; several runs of a set
    # give the lower median per shape, parts of a set (two commits) each shape from its part, both commits named
    import sys

    import pandas as pd

    from benchmarks import gemm_classes as G
    stamp = dict(device="1x test GPU", date="2026-11-28", command="python benchmarks/gemm.py")

    def rows(ratios, commit, **more):
        return pd.DataFrame([dict(m=m, n=n, k=k, config=more.get("config", "matmul"), vs_torch=r, commit=commit,
                                  **stamp, **{k: v for k, v in more.items() if k != "config"})
                             for (m, n, k), r in ratios.items()])
    shapes = [(1, 4096, 4096), (1024, 1536, 4096), (4096, 4096, 4096)]
    paths = {}
    for name, ratios, commit in (("before", (0.80, 0.85, 1.0), "b0"), ("run1", (0.90, 0.89, 1.1), "a1"),
                                 ("run2", (0.84, 0.95, 1.2), "a1")):
        paths[name] = tmp_path / f"{name}.csv"
        rows(dict(zip(shapes, ratios)), commit).to_csv(paths[name], index=False)
    fp8 = dict(config="default", scaling="tensor", dtype="float8_e4m3fn", shape_class="aligned")
    for part, shape, ratio, commit in ((1, shapes[1], 0.80, "c1"), (2, shapes[2], 0.95, "c2")):
        paths[f"fp8_{part}"] = tmp_path / f"fp8_{part}.csv"
        rows({shape: ratio}, commit, **fp8).to_csv(paths[f"fp8_{part}"], index=False)
    monkeypatch.setattr(sys, "argv", ["gemm_classes", "--before", str(paths["before"]), "--before-config", "matmul",
                                      "--after", str(paths["run1"]), str(paths["run2"]), "--after-config", "matmul",
                                      "--fp8", str(paths["fp8_1"]), str(paths["fp8_2"])])
    G.main()
    out = capsys.readouterr().out
    assert "commit a1:" in out and "(median of 2 runs)" in out and "commit c1+c2:" in out
    bf16, fp8_part = out.split("fp8 scaled_mm")[0], out.split("fp8 scaled_mm")[1]
    last = [line.split() for line in bf16.splitlines() if line.startswith("all")][0]
    # the slower run per shape: 0.84 (decode, below 0.85), 0.89 (below 0.90), 1.1
    assert [float(x) for x in last[1:7]] == [3, 0.879, 0.8, 0.937, 0.84, 2], last
    last = [line.split() for line in fp8_part.splitlines() if line.split()[:1] == ["all"]][0]
    assert [float(x) for x in last[1:5]] == [2, 0.872, 0.8, 1], last


def test_gemm_classes_common_compares_a_sample_before_with_the_same_gemms_of_a_whole_set_after(tmp_path, capsys,
                                                                                              monkeypatch):
    # --common: a sample run before (2 GEMMs) against a whole set after (3): only the 2 both ran, bf16 and FP8 alike
    import sys

    import pandas as pd

    from benchmarks import gemm_classes as G
    stamp = dict(device="1x test GPU", date="2026-11-28", command="python benchmarks/gemm.py")
    shapes = [(1024, 1536, 4096), (4096, 4096, 4096), (4096, 8192, 4096)]

    def write(name, ratios, commit, **more):
        path = tmp_path / f"{name}.csv"
        pd.DataFrame([dict(m=m, n=n, k=k, vs_torch=r, commit=commit, **stamp, **more)
                      for (m, n, k), r in zip(shapes, ratios)]).to_csv(path, index=False)
        return str(path)
    fp8 = dict(config="default", scaling="tensor", dtype="float8_e4m3fn", shape_class="aligned")
    argv = ["gemm_classes", "--common", "--before", write("before", (0.5, 0.8), "b0", config="default"),
            "--after", write("after", (1.0, 1.0, 0.7), "a1", config="matmul"), "--after-config", "matmul",
            "--fp8-before", write("fp8_before", (0.6, 0.9), "f0", **fp8),
            "--fp8", write("fp8_after", (1.0, 0.9, 0.5), "f1", **fp8)]
    monkeypatch.setattr(sys, "argv", argv)
    G.main()
    out = capsys.readouterr().out
    assert "before: default at b0, after: matmul; only the GEMMs both ran" in out
    alls = [line.split() for line in out.splitlines() if line.split()[:1] == ["all"]]
    assert [float(x) for x in alls[0][1:7]] == [2, 0.632, 0.5, 1.0, 1.0, 0], alls[0]  # not the third's 0.7
    assert [float(x) for x in alls[1][1:7]] == [2, 0.735, 0.6, 1, 0.949, 0.9], alls[1]  # not the third's 0.5
    monkeypatch.setattr(sys, "argv", [a for a in argv if a != "--common"])  # without it, the third counts
    G.main()
    alls = [line.split() for line in capsys.readouterr().out.splitlines() if line.split()[:1] == ["all"]]
    assert float(alls[0][5]) == 0.7 and float(alls[1][6]) == 0.5, alls


@pytest.mark.parametrize("argv", [["--weights", "k-major", "--configs", "64x64x128 s4 w4"],
                                  ["--weights", "k-major"], ["--weights", "k-major", "--fp8", "--configs", "default"]])
def test_gemm_benchmark_times_k_major_weights_on_matmul_and_gluon_candidates_only(argv, monkeypatch):
    # bf16 B K-major (nn.Linear's weight.t()) goes through fused_ops.matmul or a Gluon candidate; a tile-loop
    # candidate, no candidate named, or FP8 (K-major already) is refused before any GPU work, saying what to pass
    import sys

    from benchmarks import gemm as B
    monkeypatch.setattr(sys, "argv", ["gemm.py", *argv])
    with pytest.raises(SystemExit, match="--weights k-major times bf16 fused_ops.matmul and the Gluon candidates"):
        B.main()


def test_every_gluon_candidate_of_the_benchmark_passes_the_kernels_host_checks():
    # each "wgmma ..." candidate as benchmarks/gemm.py runs it (its tile, rem, turns, slices, promotion) through
    # wgmma.kernel_args on host tensors: one the kernel refuses (a rem it has no such tile for, pairs beside too wide a
    # second MMA, stages past shared memory) fails here rather than in the device's scarce minutes
    import dataclasses

    from benchmarks import gemm as B
    from fused_ops import wgmma
    checked = 0
    for table, dtype in ((B.FP8_CANDIDATES, torch.float8_e4m3fn), (B.CANDIDATES, torch.bfloat16)):
        for name, cfg in table.items():
            if not name.startswith("wgmma") or cfg is None:
                continue
            m, n, k = (16 if "swap" in name else 1024), 4096, 4096
            a, c = torch.empty(m, k, dtype=dtype), torch.empty(m, n, dtype=torch.bfloat16)
            b = torch.empty(n, k, dtype=dtype).t()
            cfg = cfg if cfg.split_k is not None else dataclasses.replace(cfg, split_k=1, split_tail=False)
            used = B.gluon_candidate(name, cfg, a, c, 132)
            is_fp8 = dtype == torch.float8_e4m3fn
            scale = torch.ones(1) if is_fp8 else None
            wgmma.kernel_args(a, b, c, used.block_n, used.block_k, used.num_stages, scale_a=scale, scale_b=scale,
                              **B.gluon_kwargs(name, used, is_fp8))
            checked += 1
    assert checked > 100, checked

"""The per-device GEMM defaults: on Hopper, the largest tile whose count still gives most SMs one (the rule that
benchmarks/gemm.py's measurements support); ranks sharing a GPU share its SMs."""

import pytest
import torch

from fused_ops.config import HOPPER_TILES, Config, default_config


class _GPU:
    backend = "cuda"

    def __init__(self, sms=132, ranks_per_device=1):
        self.sms, self.ranks_per_device = sms, ranks_per_device

    def get_cu_count(self):
        return self.sms


def _tile(cfg):
    return cfg.block_m, cfg.block_n, cfg.block_k


def test_hopper_tiles_follow_the_tile_count():
    big, mid, narrow, small = (t[:3] for t in HOPPER_TILES)
    cases = {(16384, 8192): big, (1024, 4096): big, (512, 8192): big, (256, 16384): big,
             (512, 4096): mid, (256, 8192): mid, (128, 16384): mid,
             (256, 4096): narrow, (128, 8192): narrow,  # 64 tiles: >= 0.4 x 132; 64x64 ones need 2 waves
             (128, 4096): small,  # 64x64 tiles fit in one wave too (128 of them): config.row_tile
             (128, 2048): small, (32, 512): small}  # too small for any: the smallest tile
    for (m, n), want in cases.items():
        cfg = default_config(_GPU(), m, n, 4096, torch.bfloat16)
        assert _tile(cfg) == want, (m, n, _tile(cfg))
        assert cfg.gemm_sms == 132 and cfg.num_warps in (4, 8)


def test_half_tiles_where_the_last_wave_would_idle():
    # 288 tiles of 128 x 256 take 3 waves of 132 programs, 2.18 of them busy; 576 of 128 x 128 take 5 at ~0.52 each
    # (results/current/gemm/wave_a8219b8/: 0.74 -> 0.88x torch.matmul at 4096 x 2304 x 36864)
    big, mid = (t[:3] for t in HOPPER_TILES[:2])
    for m, n, k in ((4096, 2304, 36864), (8192, 2304, 36864), (4096, 4608, 18432)):
        cfg = default_config(_GPU(), m, n, k, torch.bfloat16)
        assert _tile(cfg) == mid and (cfg.num_stages, cfg.num_warps) == HOPPER_TILES[1][3:5], (m, n, k)
    # full last waves keep the large tile: 1152 tiles (8.7 waves) against 2304 (17.5 waves, 18 x 0.52 > 9)
    for m, n in ((8192, 4608), (16384, 8192), (1024, 4096)):
        assert _tile(default_config(_GPU(), m, n, 4096, torch.bfloat16)) == big, (m, n)
    # the waves are the GEMM's programs': 576 tiles over 116 (4.97 waves) keep the large tile
    assert _tile(default_config(_GPU(), 8192, 2304, 36864, torch.bfloat16, comm_programs=True)) == big


def test_shared_gpu_counts_its_share_of_sms():
    # 2 ranks per GPU: 66 SMs each, so 512 x 4096 (64 tiles of 128 x 256 >= 0.75 * 66) keeps the largest tile
    cfg = default_config(_GPU(ranks_per_device=2), 512, 4096, 4096, torch.bfloat16)
    assert _tile(cfg) == HOPPER_TILES[0][:3] and cfg.gemm_sms == 66


def test_float32_keeps_its_own_tiles():
    assert _tile(default_config(_GPU(), 128, 4096, 4096, torch.float32)) == (64, 128, 32)
    assert _tile(default_config(_GPU(), 4096, 4096, 4096, torch.float32)) == (128, 128, 32)


def test_whole_tiles_by_default_split_k_on_request():
    # Few rows, long K (where split-K was the default): 128 x 8192 x 16384 fills the SMs with 128 whole 64 x 128 tiles
    for m, n, k in ((128, 8192, 16384), (256, 4096, 8192), (128, 8192, 8192), (128, 16384, 16384)):
        cfg = default_config(_GPU(), m, n, k, torch.bfloat16)
        assert cfg.split_k == 1, (m, n, k)
    assert _tile(default_config(_GPU(), 128, 8192, 16384, torch.bfloat16)) == HOPPER_TILES[2][:3]
    spec = default_config(_GPU(), 128, 8192, 16384, torch.bfloat16, comm_programs=True)
    assert spec.split_k == 1 and spec.gemm_sms == 116
    # a caller's split is kept
    assert Config(split_k=2).merged(default_config(_GPU(), 128, 8192, 16384, torch.bfloat16)).split_k == 2


def test_split_tail_where_the_last_wave_is_short_and_k_long():
    from fused_ops.config import resolve
    # 288 tiles of 128 x 256: 2 full waves of 132 and 24 tiles, split 5 ways (120 programs); K = 36864 is 576 blocks,
    # so the fixup is small against the wave it saves (results/current/gemm/wave_38b2d51/: 0.75x whole, 0.88x half,
    # 1.00x split)
    cfg = default_config(_GPU(), 4096, 2304, 36864, torch.bfloat16, split=True)
    assert _tile(cfg) == HOPPER_TILES[0][:3] and (cfg.split_k, cfg.split_tail) == (5, True)
    # only for variants whose loop splits tiles; the others keep the smaller tiles' fuller waves
    assert _tile(default_config(_GPU(), 4096, 2304, 36864, torch.bfloat16)) == HOPPER_TILES[1][:3]
    # short K: 8 slices of 8 blocks would cost more in fixup than they save (16384 x 8192 x 4096: 1.00 -> 0.97x)
    for m, n, k in ((16384, 8192, 4096), (8192, 4096, 4096), (1024, 4096, 4096)):
        cfg = default_config(_GPU(), m, n, k, torch.bfloat16, split=True)
        assert (cfg.split_k, cfg.split_tail) == (1, False), (m, n, k)
    # a caller's overrides: split_tail=False means whole tiles; other tiles get their own tail's split_k
    base = default_config(_GPU(), 4096, 2304, 36864, torch.bfloat16, split=True)
    off = Config(split_tail=False)
    assert resolve(off.merged(base), off, 4096, 2304, 36864).split_k == 1
    half = Config(block_n=128)
    assert resolve(half.merged(base), half, 4096, 2304, 36864).split_k == 2  # 576 tiles: 48 left after 4 waves
    given = Config(split_k=3)  # plain split-K, as before split_tail existed
    assert (lambda c: (c.split_k, c.split_tail))(resolve(given.merged(base), given, 4096, 2304, 36864)) == (3, False)
    both = Config(split_k=3, split_tail=True)
    assert (lambda c: (c.split_k, c.split_tail))(resolve(both.merged(base), both, 4096, 2304, 36864)) == (3, True)


def test_swapped_tiles_are_the_gluon_kernels_alone():
    import fused_ops
    from fused_ops.config import check

    cfg = default_config(_GPU(), 4096, 4096, 4096, torch.bfloat16)
    check(cfg, _GPU(), fused_ops.get("gemm_all_scatter", "bulk_sync"))  # as the defaults make it
    swapped = Config(swap_ab=True).merged(cfg)
    assert swapped.describe().endswith(", swap AB")
    with pytest.raises(ValueError, match="swap_ab=True: the Gluon kernel.s tiles .*/bulk_sync runs the tile loop"):
        check(swapped, _GPU(), fused_ops.get("gemm_all_scatter", "bulk_sync"))
    wider = Config(swap_ab=True, rem_rows=16).merged(cfg)
    assert wider.describe().endswith(", swap AB + 16 rows")
    with pytest.raises(ValueError, match="swap_ab=True: the Gluon kernel.s tiles"):
        check(wider, _GPU(), fused_ops.get("gemm_all_scatter", "bulk_sync"))
    with pytest.raises(ValueError, match="rem_rows=16: the Gluon kernel.s tiles .*/bulk_sync runs the tile loop"):
        check(Config(rem_rows=16).merged(cfg), _GPU(), fused_ops.get("gemm_all_scatter", "bulk_sync"))

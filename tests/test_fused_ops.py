"""Every variant of every catalog op against a float64 reference: 2 and 4 ranks, fp16/fp32 (+bf16 on GPUs),
edge tiles, many calls in a row with fresh inputs and a poisoned output (stale flags are this field's classic bug)."""

import os
import random
import time

import pytest
import torch

import fused_ops
import iris
from conftest import FLOAT_DTYPES, ON_GPU
from fused_ops import reference
from fused_ops.config import HOPPER_TILES


def r_check(ctx, op, variant, dtype_name, m, n, k, calls, cfg, b_transposed=False, dawdle=None):
    """Global M x N x K, sharded as the op says. Returns the worst relative error (or what went wrong).
    b_transposed: B is passed as the transpose of an N x K row-major tensor (how nn.Linear stores weights).
    dawdle (a seed): no host barrier between calls; every rank sleeps a random time before poisoning its output and
    before checking it, so only the variant's own barriers order a rank's call with its peers'. Without an entry
    barrier a fast peer writes the next call's tiles over this rank's poison or over the result it has not checked
    yet; without an exit barrier this rank's call ends before the peers' tiles have landed."""
    dtype, world, rank = getattr(torch, dtype_name), ctx.get_num_ranks(), ctx.get_rank()
    c = ctx.zeros(*reference.local_shapes(op, m, n, k, world)[2], dtype=dtype)
    run = getattr(fused_ops, op)
    rng = None if dawdle is None else random.Random(dawdle * 1000 + rank)
    if rng:
        ctx.barrier()
    worst = 0.0
    for call in range(1, calls + 1):
        a, b, ref = reference.make_inputs(op, call, world, rank, m, n, k, dtype, ctx.get_device())
        if b_transposed:
            b = b.t().contiguous().t()
        if rng:
            time.sleep(rng.uniform(0, 0.02))
        c.fill_(float("nan"))
        if not rng:
            ctx.barrier()  # peers write into c: poison it before anyone starts
        run(ctx, a, b, c, variant=variant, config=fused_ops.Config(**cfg))
        if rng:
            time.sleep(rng.uniform(0, 0.02))
        err = reference.rel_error(c, ref)
        if not err <= reference.TOLERANCE[dtype]:  # NaN fails too
            return f"call {call}: relative error {err}"
        worst = max(worst, err)
    ctx.barrier()
    return worst


CASES = [(op, v, d) for op in fused_ops.list_ops() for d in FLOAT_DTYPES
         for v in fused_ops.list_variants(op, iris.BACKEND, d)]
CPU_CASES = [(op, v) for op, v, d in CASES if d == "float32"]


@pytest.mark.parametrize("op,variant,dtype", CASES, ids=[f"{o}-{v}-{d}" for o, v, d in CASES])
def test_variant_edge_tiles_repeated(ranks, op, variant, dtype):
    # 80 x 136 x 144 global, 32-wide tiles: partial tiles in M, N and K for every sharding at 2 and 4 ranks, so edge
    # boxes moved inside (gemm.tile_origin) shift in M and, by 16 columns (COL_ALIGN), in N.
    if refused_on_shared_gpus(ranks, op, variant, dtype):
        return
    errs = ranks.run(r_check, op, variant, dtype, 80, 136, 144, 3, {})
    assert all(isinstance(e, float) for e in errs), errs


def shares_gpus(ranks, op, variant):
    """Ranks share a GPU here (a one-GPU machine) and the variant needs one each (NCCL, copy engines)."""
    return ON_GPU and ranks.world > torch.cuda.device_count() and fused_ops.get(op, variant).one_gpu_per_rank


def refused_on_shared_gpus(ranks, op, variant, dtype):
    """True, once checked, where shares_gpus: the variant must refuse, on every rank."""
    if not shares_gpus(ranks, op, variant):
        return False
    for got in ranks.run(r_check_refused, op, variant, dtype):
        assert "needs one GPU per rank" in got, got
    return True


def r_check_refused(ctx, op, variant, dtype_name):
    try:
        w = ctx.get_num_ranks()
        r_check(ctx, op, variant, dtype_name, 8 * w, 8 * w, 8 * w, 1, {})
    except ValueError as err:
        return str(err)
    return "ran"


@pytest.mark.parametrize("op,variant", CPU_CASES, ids=[f"{o}-{v}" for o, v in CPU_CASES])
def test_variant_10_calls_in_a_row(ranks2, op, variant):
    # Ten calls, fresh inputs and a poisoned output each: stale flags and double buffers show on the second to fifth
    # call (CONTRIBUTING.md), prepared calls run from the third.
    if refused_on_shared_gpus(ranks2, op, variant, "float32"):
        return
    errs = ranks2.run(r_check, op, variant, "float32", 32, 32, 32, 10, {"block_m": 16, "block_n": 16, "block_k": 16})
    assert all(isinstance(e, float) for e in errs), errs


@pytest.mark.parametrize("op,variant", CPU_CASES, ids=[f"{o}-{v}" for o, v in CPU_CASES])
def test_variant_calls_without_host_sync(ranks, op, variant):
    if refused_on_shared_gpus(ranks, op, variant, "float32"):
        return
    w = ranks.world  # edge tiles of 16; six calls in a row, ranks dawdling random times before and after each
    errs = ranks.run(r_check, op, variant, "float32", 8 * w, 12 * w, 10 * w, 6,
                     {"block_m": 16, "block_n": 16, "block_k": 16}, False, w)
    assert all(isinstance(e, float) for e in errs), errs


SPLIT_K_CASES = [(op, v) for op, v in CPU_CASES if fused_ops.get(op, v).split_k]


def r_check_splits(ctx, op, variant, splits):
    """r_check with K split into each of `splits` slices per tile (errors: the first failure, tagged)."""
    worst = 0.0
    for s in splits:
        err = r_check(ctx, op, variant, "float32", 48, 96, 144, 3, {"block_m": 32, "block_n": 32, "block_k": 32,
                                                                   "split_k": s})
        if not isinstance(err, float):
            return f"split_k={s}: {err}"
        worst = max(worst, err)
    return worst


@pytest.mark.parametrize("op,variant", SPLIT_K_CASES, ids=[f"{o}-{v}" for o, v in SPLIT_K_CASES])
def test_split_k(ranks, op, variant):
    # 48 x 96 x 144 global in 32-wide tiles: a partial row tile (and a partial column tile where N is sharded). Per
    # rank, K is 36, 72 or 144 (2, 3 or 5 blocks of 32): 2 slices, and 4, which leaves some slices empty. Three calls
    # in a row each: a slice count left armed by a call would break the next one; the third is a prepared call.
    if refused_on_shared_gpus(ranks, op, variant, "float32"):
        return
    errs = ranks.run(r_check_splits, op, variant, (2, 4))
    assert all(isinstance(e, float) for e in errs), errs


def gemm_tiles(op, variant, m, n, world, block_m, block_n):
    """Output tiles of the GEMM one rank runs: N sharded for all-scatter and all-gather, K for the other two; one
    shard's rows for variants that launch a GEMM per shard or phase (registry shard_tiles)."""
    cols = n // world if op in ("gemm_all_scatter", "all_gather_gemm") else n
    rows = m // world if fused_ops.get(op, variant).shard_tiles else m
    return -(-rows // block_m) * -(-cols // block_n)


def r_check_tail_splits(ctx, op, variant, m, n, k, tiles_cfg, splits, dtype_name="float32"):
    """r_check with only the last wave's tiles split: gemm_sms = tiles - 2 leaves a wave of 2 tiles after a full one,
    split into each of `splits` slices, and into as many as the defaults choose (split_k unset; MIN_SLICE_BLOCKS lowered
    here, so that this small K splits; with no `splits`, the defaults must split). A launch over several shards has a
    longer tail, split fewer ways."""
    programs = gemm_tiles(op, variant, m, n, ctx.get_num_ranks(), tiles_cfg["block_m"], tiles_cfg["block_n"]) - 2
    worst, kept = 0.0, fused_ops.config.MIN_SLICE_BLOCKS
    fused_ops.config.MIN_SLICE_BLOCKS = 1  # (the rank process lives on: restored below)
    try:
        for s in splits + (None,):
            cfg = dict(tiles_cfg, gemm_sms=programs, split_k=s, split_tail=True)
            if s is None and not splits:  # the defaults' split is the only one run here: it must split the tail
                chosen = planned_config(ctx, op, variant, dtype_name, m, n, k, cfg)
                if chosen.split_k < 2 or not chosen.split_tail:
                    return f"the defaults split no tile: {chosen.describe()}"
            err = r_check(ctx, op, variant, dtype_name, m, n, k, 3, cfg)
            if not isinstance(err, float):
                return f"split_k={s}, gemm_sms={programs}: {err}"
            worst = max(worst, err)
    finally:
        fused_ops.config.MIN_SLICE_BLOCKS = kept
    return worst


def planned_config(ctx, op, variant, dtype_name, m, n, k, cfg):
    """The launch configuration fused_ops.plan resolves for r_check's operands under `cfg` (split_k=None: the
    default's choice)."""
    world, rank, dtype = ctx.get_num_ranks(), ctx.get_rank(), getattr(torch, dtype_name)
    a, b, _ = reference.make_inputs(op, 1, world, rank, m, n, k, dtype, ctx.get_device())
    with ctx.scratch():
        c = ctx.zeros(*reference.local_shapes(op, m, n, k, world)[2], dtype=dtype)
        return fused_ops.plan(ctx, op, a, b, c, variant, fused_ops.Config(**cfg))[1]


@pytest.mark.parametrize("op,variant", SPLIT_K_CASES, ids=[f"{o}-{v}" for o, v in SPLIT_K_CASES])
def test_split_tail(ranks, op, variant):
    # 48 x 96 x 144 in 16 x 16 tiles: 6 to 18 tiles per rank, the last 2 of them split, the others whole; three calls
    # in a row each. On 2 ranks into 2 slices, then into the default's choice (3 to 6 here); on 4 ranks into the
    # default's choice only (2 or 3: the same kernels as 2 slices, with 4 ranks' sharding and flags). Variants with a
    # GEMM per shard: 160 rows, 6 or 15 tiles per shard.
    if refused_on_shared_gpus(ranks, op, variant, "float32"):
        return
    m = 160 if fused_ops.get(op, variant).shard_tiles else 48
    errs = ranks.run(r_check_tail_splits, op, variant, m, 96, 144, {"block_m": 16, "block_n": 16, "block_k": 16},
                     (2,) if ranks.world == 2 else ())
    assert all(isinstance(e, float) for e in errs), errs


@pytest.mark.parametrize("op", fused_ops.list_ops())
def test_more_tiles_than_programs_and_tma_path(ranks2, op):
    # Many more tiles (15 to 30) than the 4 GEMM programs (+2 comm); operands through tensor descriptors where a variant
    # uses them (the interpreter supports them).
    for variant in fused_ops.list_variants(op, iris.BACKEND, "float16"):
        if shares_gpus(ranks2, op, variant):  # refusal: test_variant_edge_tiles_repeated
            continue
        errs = ranks2.run(r_check, op, variant, "float16", 80, 96, 64, 2,
                          {"block_m": 16, "block_n": 16, "block_k": 32, "tma": True})
        assert all(isinstance(e, float) for e in errs), (variant, errs)


@pytest.mark.parametrize("op", fused_ops.list_ops())
def test_transposed_weight_through_both_paths(ranks2, op):
    # B given column-major (a weight's .t()): TMA descriptors over the N x K storage, and the masked pointer path.
    for variant in fused_ops.list_variants(op, iris.BACKEND, "float16"):
        if shares_gpus(ranks2, op, variant):
            continue
        for tma in (True, False):
            errs = ranks2.run(r_check, op, variant, "float16", 48, 64, 96, 2,
                              {"block_m": 16, "block_n": 16, "block_k": 32, "tma": tma}, True)
            assert all(isinstance(e, float) for e in errs), (variant, tma, errs)


@pytest.mark.skipif(not ON_GPU, reason="Hopper tiles and pipelines are compiled on GPUs only; the interpreter runs "
                                        "every tile alike (the other tests cover it)")
@pytest.mark.parametrize("op", fused_ops.list_ops())
def test_hopper_default_tiles(ranks2, op):
    # Every tile the Hopper defaults can pick (fused_ops.config.HOPPER_TILES: block sizes, stages, warps), and
    # split-K (split_k=2), in every fused variant, bf16, at a shape with several tiles per rank and K blocks per tile.
    split = {"block_m": 128, "block_n": 128, "block_k": 64, "num_stages": 4, "num_warps": 8, "split_k": 2}
    for cfg in [{"block_m": bm, "block_n": bn, "block_k": bk, "num_stages": stages, "num_warps": warps}
                for bm, bn, bk, stages, warps, _ in fused_ops.config.HOPPER_TILES] + [split]:
        for variant in fused_ops.list_variants(op, iris.BACKEND, "bfloat16"):
            v = fused_ops.get(op, variant)
            if v.pattern == "baseline" or shares_gpus(ranks2, op, variant) or ("split_k" in cfg and not v.split_k):
                continue
            errs = ranks2.run(r_check, op, variant, "bfloat16", 512, 1024, 768, 2, cfg)
            assert all(isinstance(e, float) for e in errs), (variant, cfg, errs)


def r_alternate_configs(ctx, op, variant):
    small, big = {"block_m": 16, "block_n": 16, "block_k": 16}, {"block_m": 32, "block_n": 32, "block_k": 32}
    for cfg in (small, big, small, big):
        err = r_check(ctx, op, variant, "float32", 64, 64, 64, 2, cfg)
        if not isinstance(err, float):
            return f"{cfg}: {err}"
    return err


@pytest.mark.parametrize("op,variant", [("gemm_all_reduce", "one_shot"), ("gemm_reduce_scatter", "fused"),
                                        ("gemm_all_scatter", "wg_specialized")])
def test_configs_alternate_on_one_shape(ranks2, op, variant):
    # Per-tile flags count arrivals over every call of their workspace: calls with other tiles on the same shape need
    # a workspace of their own (they shared one, and the second config's tiles waited for arrivals that never came)
    errs = ranks2.run(r_alternate_configs, op, variant)
    assert all(isinstance(e, float) for e in errs), errs


def r_one_rank_splits(ctx):
    tiles = {"block_m": 16, "block_n": 16, "block_k": 16}
    out = []
    for variant in ("copy_engine_phased", "copy_engine"):
        for cfg in (dict(tiles, split_k=2), dict(tiles, gemm_sms=13, split_k=3, split_tail=True)):
            out.append((variant, cfg, r_check(ctx, "all_gather_gemm", variant, "float32", 80, 48, 64, 3, cfg)))
    return out


def test_one_rank_all_gather_splits():
    # One rank: the copy-engine all-gather has no peer shard, and the phased variant's second launch no tile to run
    # (15 tiles over 13 programs: the last 2 split in 3)
    for variant, cfg, err in iris.spawn(r_one_rank_splits, 1)[0]:
        assert isinstance(err, float), (variant, cfg, err)


def r_plan(ctx):
    world, rank, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    a, b, _ = reference.make_inputs("gemm_all_reduce", 1, world, rank, 48, 96, 144, torch.float32, dev)
    c = ctx.zeros(48, 96)
    cfg = fused_ops.Config(block_m=16, block_n=16, block_k=16, gemm_sms=16, split_k=2, split_tail=True)
    name, got = fused_ops.plan(ctx, "gemm_all_reduce", a, b, c, "bulk_sync", cfg)
    auto, _ = fused_ops.plan(ctx, "gemm_all_reduce", a, b, c)
    try:
        base = fused_ops.plan(ctx, "gemm_all_reduce", a, b, c, "torch_nccl")
    except ValueError as err:  # as the call would (ranks sharing a GPU)
        base = str(err)
    return name, got.describe(), auto in fused_ops.list_variants("gemm_all_reduce"), base


def test_plan_names_what_a_call_runs(ranks2):
    # 3 x 6 tiles of 16 over 16 programs: one full wave, the last 2 tiles split in 2; the defaults fill the rest
    for name, text, auto_known, base in ranks2.run(r_plan):
        assert name == "bulk_sync" and auto_known
        if shares_gpus(ranks2, "gemm_all_reduce", "torch_nccl"):
            assert "needs one GPU per rank" in base, base
        else:
            assert base == ("torch_nccl", None), base
        assert text.startswith("16x16x16 s") and text.endswith("16 GEMM programs, split_k 2 (last wave)"), text


@pytest.mark.skipif(not ON_GPU, reason="Hopper tiles and pipelines are compiled on GPUs only (test_split_tail runs the "
                                        "same schedule under the interpreter)")
@pytest.mark.parametrize("op,variant", SPLIT_K_CASES, ids=[f"{o}-{v}" for o, v in SPLIT_K_CASES])
def test_hopper_split_tail(ranks2, op, variant):
    # The default's large tile with its last wave split, bf16: 1024 x 2048 x 4096 leaves 32 or 64 tiles per rank, the
    # last 2 split into 2 slices, then into the default's choice (8: slices of 8 K blocks)
    if shares_gpus(ranks2, op, variant):
        return
    big = dict(zip(("block_m", "block_n", "block_k", "num_stages", "num_warps"), HOPPER_TILES[0][:5]), comm_sms=2)
    errs = ranks2.run(r_check_tail_splits, op, variant, 1024, 2048, 4096, big, (2,), "bfloat16")
    assert all(isinstance(e, float) for e in errs), errs


def r_errors(ctx, case):
    dev, w = ctx.get_device(), ctx.get_num_ranks()
    a = torch.randn(8, 16, device=dev)
    b = torch.randn(16, 8, device=dev)
    c = ctx.zeros(8, 8 * w)
    calls = {
        "unknown variant": lambda: fused_ops.gemm_all_scatter(ctx, a, b, c, variant="warp_drive"),
        "unknown op": lambda: fused_ops.get("gemm_all_nothing", "x"),
        "wrong c shape": lambda: fused_ops.gemm_all_scatter(ctx, a, b, ctx.zeros(8, 9)),
        "inner dims": lambda: fused_ops.gemm_all_reduce(ctx, a, a, ctx.zeros(8, 16)),
        "dtype mix": lambda: fused_ops.gemm_all_scatter(ctx, a.half(), b, c),
        "int dtype": lambda: fused_ops.gemm_all_reduce(ctx, a.int(), b.int(), ctx.zeros(8, 8, dtype=torch.int32)),
        "bf16 on cpu": lambda: fused_ops.gemm_all_reduce(ctx, a.bfloat16(), b.bfloat16(),
                                                         ctx.zeros(8, 8, dtype=torch.bfloat16)),
        "c not on heap": lambda: fused_ops.gemm_all_scatter(ctx, a, b, torch.zeros(8, 8 * w, device=dev)),
        "c not contiguous": lambda: fused_ops.gemm_all_reduce(ctx, a, b, ctx.zeros(8, 16)[:, ::2]),
        "3-D input": lambda: fused_ops.gemm_all_reduce(ctx, a[None], b, ctx.zeros(8, 8)),
        "bad block": lambda: fused_ops.gemm_all_reduce(ctx, a, b, ctx.zeros(8, 8), config=fused_ops.Config(block_m=48)),
        "bad sms": lambda: fused_ops.gemm_all_reduce(ctx, a, b, ctx.zeros(8, 8), config=fused_ops.Config(gemm_sms=0)),
        "cuda-only variant": lambda: fused_ops.gemm_all_reduce(ctx, a, b, ctx.zeros(8, 8), variant="torch_symm_mem"),
        "unsupported dtype": lambda: fused_ops.gemm_all_reduce(ctx, a.half(), b.half(),
                                                               ctx.zeros(8, 8, dtype=torch.float16),
                                                               variant="torch_symm_mem"),
        "split-K unsupported": lambda: fused_ops.gemm_all_reduce(ctx, a, b, ctx.zeros(8, 8), variant="two_shot",
                                                                 config=fused_ops.Config(split_k=2)),
        "split-K over SMs": lambda: fused_ops.gemm_all_reduce(ctx, a, b, ctx.zeros(8, 8), variant="bulk_sync",
                                                              config=fused_ops.Config(split_k=8, gemm_sms=4)),
        "split tail, no full wave": lambda: fused_ops.gemm_all_reduce(ctx, a, b, ctx.zeros(8, 8), variant="bulk_sync",
                                                                      config=fused_ops.Config(split_k=2,
                                                                                              split_tail=True)),
        "split tail, bad flag": lambda: fused_ops.gemm_all_reduce(ctx, a, b, ctx.zeros(8, 8), variant="bulk_sync",
                                                                  config=fused_ops.Config(split_tail="yes")),
        "split tail unsupported": lambda: fused_ops.gemm_all_reduce(ctx, a, b, ctx.zeros(8, 8), variant="two_shot",
                                                                    config=fused_ops.Config(split_tail=True)),
        "fp16 atomic on cpu": lambda: fused_ops.gemm_all_reduce(ctx, a.half(), b.half(),
                                                                ctx.zeros(8, 8, dtype=torch.float16), variant="atomic"),
    }
    try:
        calls[case]()
    except Exception as err:
        return type(err).__name__, str(err)
    return None, "no error"


ERRORS = {
    "unknown variant": ("UnknownName", "unknown variant 'warp_drive' of gemm_all_scatter; known variants: torch_nccl"),
    "unknown op": ("UnknownName", "unknown op 'gemm_all_nothing'"),
    "wrong c shape": ("ValueError", "c must be M x N"),
    "inner dims": ("ValueError", "inner dimensions differ"),
    "dtype mix": ("TypeError", "must share one dtype"),
    "int dtype": ("TypeError", "expected one of float16, bfloat16, float32"),
    "bf16 on cpu": ("TypeError", "not supported on the CPU backend"),
    "c not on heap": ("ValueError", "symmetric heap"),
    "c not contiguous": ("ValueError", "contiguous"),
    "3-D input": ("ValueError", "must be 2-D"),
    "bad block": ("ValueError", "power of two"),
    "bad sms": ("ValueError", "positive integer"),
    "cuda-only variant": ("ValueError", "runs on cuda only"),
    "unsupported dtype": ("TypeError", "supports bfloat16, float32, float8_e4m3fn on the cuda backend, not "
                                       "torch.float16"),
    "split-K unsupported": ("ValueError", "runs whole tiles only; split-K variants of gemm_all_reduce: bulk_sync"),
    "split-K over SMs": ("ValueError", "split_k=8 exceeds gemm_sms=4"),
    "split tail, no full wave": ("ValueError", "leave 1 in a last wave after 0 full ones; it needs at least one full"),
    "split tail, bad flag": ("ValueError", "config.split_tail='yes': expected True or False"),
    "split tail unsupported": ("ValueError", "config.split_tail: gemm_all_reduce/two_shot runs whole tiles only"),
    "fp16 atomic on cpu": ("TypeError", "float16 atomic add is not atomic across rank processes"),
}
if iris.BACKEND == "cuda":
    ERRORS.pop("bf16 on cpu")
    ERRORS.pop("cuda-only variant")
    ERRORS.pop("fp16 atomic on cpu")
else:
    ERRORS.pop("unsupported dtype")  # the variant is refused as CUDA-only before its dtypes are looked at


@pytest.mark.parametrize("case", list(ERRORS))
def test_bad_input_raises_before_launch(ranks2, case):
    name, text = ERRORS[case]
    for got, msg in ranks2.run(r_errors, case):
        assert got == name and text in msg, (case, got, msg)


def test_registry_lists_every_variant_with_its_pattern():
    assert fused_ops.list_ops() == ["gemm_all_scatter", "gemm_all_reduce", "all_gather_gemm", "gemm_reduce_scatter"]
    assert fused_ops.list_variants("all_gather_gemm") == ["torch_nccl", "torch_async_tp", "bulk_sync", "pull", "push",
                                                           "copy_engine_phased", "copy_engine"]
    assert fused_ops.list_variants("gemm_reduce_scatter") == ["torch_nccl", "torch_async_tp", "bulk_sync", "fused",
                                                              "wg_specialized", "copy_engine_phased", "copy_engine"]
    assert fused_ops.list_variants("gemm_all_scatter") == ["torch_nccl", "bulk_sync", "fused_sequential",
                                                           "producer_consumer", "wg_specialized"]
    assert fused_ops.list_variants("gemm_all_reduce") == ["torch_nccl", "torch_symm_mem", "bulk_sync", "atomic",
                                                          "one_shot", "two_shot", "wg_specialized", "copy_engine"]
    assert "torch_symm_mem" not in fused_ops.list_variants("gemm_all_reduce", "cpu")
    # their streams wait on each other's flags: never inside a CUDA graph (registry: Variant.capture)
    assert [(op, v) for op in fused_ops.list_ops() for v in fused_ops.list_variants(op)
            if v not in fused_ops.list_variants(op, capture=True)] == [
        ("gemm_all_scatter", "producer_consumer"), ("gemm_all_reduce", "copy_engine"),
        ("all_gather_gemm", "copy_engine"), ("gemm_reduce_scatter", "copy_engine")]
    for op in fused_ops.OPS.values():
        for v in op.variants.values():
            assert v.pattern in fused_ops.PATTERNS and v.summary


def test_uncapturable_variants_are_refused_under_capture_on_the_host(monkeypatch):
    from fused_ops import ops
    ce, one_shot = fused_ops.get("gemm_all_reduce", "copy_engine"), fused_ops.get("gemm_all_reduce", "one_shot")
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    ops.check_capture("cuda", ce)  # eager: runs
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    ops.check_capture("cuda", one_shot)  # capturable
    ops.check_capture("cpu", ce)  # the CPU backend never captures
    with pytest.raises(ValueError, match="gemm_all_reduce/copy_engine cannot be captured into a CUDA graph"):
        ops.check_capture("cuda", ce)


def test_the_capture_guard_can_be_lifted_per_variant_for_diagnosis():
    import subprocess
    import sys
    code = ("import fused_ops as f; print([v for o in f.list_ops() for v in f.list_variants(o) "
            "if v not in f.list_variants(o, capture=True)])")
    env = dict(os.environ, FUSED_OPS_CAPTURE_UNSAFE="all_gather_gemm/copy_engine,gemm_reduce_scatter/copy_engine")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['producer_consumer', 'copy_engine']", out


def r_gathered(ctx, variant, on_heap):
    world, rank, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    m, k = 24 * world, 40
    g = torch.Generator().manual_seed(3)
    full = torch.randn(m, k, generator=g).to(dev)
    a = full[rank * 24:(rank + 1) * 24].contiguous()
    b = torch.randn(k, 16, generator=g).to(dev)
    c = ctx.zeros(m, 16)
    gathered = ctx.full((m, k), float("nan")) if on_heap else torch.full((m, k), float("nan"), device=dev)
    try:
        fused_ops.all_gather_gemm(ctx, a, b, c, variant=variant, a_gathered=gathered)
    except ValueError as err:
        return str(err)
    ctx.barrier()
    want = full.double().cpu() @ b.double().cpu()
    return bool(torch.equal(gathered.cpu(), full.cpu())) and reference.rel_error(c.cpu(), want) < 1e-3


@pytest.mark.parametrize("on_heap", [True, False], ids=["heap", "device"])
def test_all_gather_gemm_returns_gathered_a(ranks2, on_heap):
    for variant in fused_ops.list_variants("all_gather_gemm", iris.BACKEND, "float32"):
        if shares_gpus(ranks2, "all_gather_gemm", variant):
            continue
        got = ranks2.run(r_gathered, variant, on_heap)
        if variant == "pull":
            assert all("never materializes the gathered A" in g for g in got), got
        else:
            assert got == [True, True], (variant, got)


@pytest.mark.parametrize("variant", ["bulk_sync", "push"])
def test_all_gather_splits_k_when_rows_are_few(ranks2, variant):
    # 32 rows (one row chunk per rank) and K = 600: the copy of A is split into K parts (two non-empty parts of
    # 384 and 216 columns in float32) so that every copying program has work; the parts must all land, call after call.
    errs = ranks2.run(r_check, "all_gather_gemm", variant, "float32", 32, 64, 600, 4, {"block_m": 32})
    assert all(isinstance(e, float) for e in errs), errs
    assert fused_ops.all_gather.bulk_sync.k_parts(2, 4, 600, 128) == 2  # the split this test relies on


def r_phased_peers_on_side_stream(ctx, dawdle):
    """all_gather_gemm/copy_engine_phased with the peers' rows launched on the copies' stream (CopyEngine.then),
    the path it takes from K = SIDE_MIN_K, which the small test shapes do not reach."""
    from fused_ops.all_gather import copy_engine_phased

    saved, copy_engine_phased.SIDE_MIN_K = copy_engine_phased.SIDE_MIN_K, 0
    try:
        return r_check(ctx, "all_gather_gemm", "copy_engine_phased", "float32", 80, 96, 144, 4, {}, dawdle=dawdle)
    finally:  # rank processes serve later tests too
        copy_engine_phased.SIDE_MIN_K = saved


def test_all_gather_phased_peers_on_the_copies_stream(ranks):
    if refused_on_shared_gpus(ranks, "all_gather_gemm", "copy_engine_phased", "float32"):
        return
    errs = ranks.run(r_phased_peers_on_side_stream, 3)
    assert all(isinstance(e, float) for e in errs), errs


def r_copy_engine_chunks(ctx, op, m, calls, chunk_bytes):
    """r_check of `op`/copy_engine with chunks of `chunk_bytes`, one program: returns the flags per shard (slice) this
    makes, the error, and the sums of every flag and count the variant keeps (all must be back at 0)."""
    saved, fused_ops.comm.CHUNK_BYTES = fused_ops.comm.CHUNK_BYTES, chunk_bytes
    try:
        return _chunks_and_flags(ctx, op, m, calls)
    finally:  # the rank processes serve later tests
        fused_ops.comm.CHUNK_BYTES = saved


def _chunks_and_flags(ctx, op, m, calls):
    world = ctx.get_num_ranks()
    err = r_check(ctx, op, "copy_engine", "float32", m, 48, 40, calls, {"block_m": 16, "block_n": 16, "block_k": 16,
                                                                         "gemm_sms": 1})
    left = {key[2]: int(t.sum()) for key, (_, t) in ctx._workspaces.items()
            if key[:2] == (op, "copy_engine") and isinstance(t, torch.Tensor) and t.dtype == torch.int32}
    if op == "all_gather_gemm":  # row blocks of a shard, 48/world columns: 160-byte rows of A
        blocks, cols, row_bytes = -(-m // world // 16), -(-48 // world // 16), 40 * 4
    elif op == "gemm_all_reduce":  # the largest slice of M's row blocks, all 48 columns of C
        blocks, cols, row_bytes = -(-(-(-m // 16)) // world), 3, 48 * 4  # noqa: B002 (nested ceil divisions)
    else:  # reduce-scatter: M / world rows per slice
        blocks, cols, row_bytes = -(-m // world // 16), 3, 48 * 4
    return -(-blocks // fused_ops.comm.chunk_blocks(blocks, cols, 1, 16, row_bytes)), err, left


CE_CHUNK_CASES = [(op, m) for op in ("all_gather_gemm", "gemm_all_reduce", "gemm_reduce_scatter") for m in (64, 58)
                  if "copy_engine" in fused_ops.list_variants(op, iris.BACKEND)]


# 2 ranks: both row counts; 4 ranks: 58 rows (the partial blocks and unequal slices), whole blocks only on 2 ranks
CE_CHUNK_RUNS = [(2, op, m) for op, m in CE_CHUNK_CASES] + [(4, op, m) for op, m in CE_CHUNK_CASES if m == 58]


@pytest.mark.parametrize("world,op,m_local", CE_CHUNK_RUNS, ids=[f"{w}ranks-{o}-{m}rows" for w, o, m in CE_CHUNK_RUNS])
def test_copy_engine_chunks(request, world, op, m_local):
    # 64 or 58 rows per rank in 16-row blocks. All-gather: 58 leaves the shard's last block partial, so the gathered
    # buffer holds each shard at a multiple of 16 rows with zero rows between. All-reduce: M = 58 x world rows make
    # slices of unequal block counts. Reduce-scatter: 58-row slices start mid-block and end in a partial block. 1 KiB
    # chunks make one flag per block: 4 per shard (the largest slice). Five calls in a row: every flag and count must
    # be lowered after each call.
    ranks = request.getfixturevalue(f"ranks{world}")
    if ON_GPU and ranks.world > torch.cuda.device_count():  # ranks would share a GPU: refused on the host
        for got in ranks.run(r_check_refused, op, "copy_engine", "float32"):
            assert "needs one GPU per rank" in got and "copy engines" in got, got
        return
    got = ranks.run(r_copy_engine_chunks, op, m_local * ranks.world, 5, 1024)
    for chunks, err, left in got:
        assert chunks == 4 and isinstance(err, float) and left and not any(left.values()), (chunks, err, left)


def r_copy_engine_plans(ctx, op):
    """Eight calls of `op`/copy_engine that alternate two shapes and, per shape, two heap copies of A and two
    outputs, each checked against the reference: the side stream's operations replay from plans
    (iris.CopyEngine.plan), so a key that missed something they depend on would move the wrong bytes here. Returns
    the errors and the number of plans recorded."""
    world, rank, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    cfg = fused_ops.Config(block_m=16, block_n=16, block_k=16)
    shapes = [(16 * world, 32, 24), (32 * world, 48, 40)]
    local = [reference.local_shapes(op, *shape, world) for shape in shapes]
    a_copies = [[ctx.zeros(*shapes_[0]) for _ in range(2)] for shapes_ in local]  # on the heap: read in place
    outs = [[ctx.zeros(*shapes_[2]) for _ in range(2)] for shapes_ in local]
    errs = []
    for call in range(8):
        shape, which = call % 2, call // 2 % 2
        a, b, ref = reference.make_inputs(op, call, world, rank, *shapes[shape], torch.float32, dev)
        a, c = a_copies[shape][which].copy_(a), outs[shape][which]
        c.fill_(float("nan"))
        ctx.barrier()
        getattr(fused_ops, op)(ctx, a, b, c, variant="copy_engine", config=cfg)
        errs.append(reference.rel_error(c, ref))
    ctx.barrier()
    return errs, len(ctx.replay.plans)


@pytest.mark.parametrize("op", [op for op, m in CE_CHUNK_CASES if m == 64])
def test_copy_engine_plans_follow_their_operands(ranks, op):
    if refused_on_shared_gpus(ranks, op, "copy_engine", "float32"):
        return
    for errs, plans in ranks.run(r_copy_engine_plans, op):
        assert all(e <= reference.TOLERANCE[torch.float32] for e in errs), errs
        assert plans == 4, plans  # one per shape and A (all-gather: the copies read A) or output (the others)


def test_copy_engine_chunk_sizes():
    from fused_ops.comm import chunk_blocks
    row = 8192 * 2  # bf16 rows of K = 8192
    assert chunk_blocks(16, 16, 132, 128, row) == 9      # 1.9 waves of 128x256 tiles: a wave's rows (9 of 16 blocks)
    assert chunk_blocks(64, 64, 132, 128, row) == 8      # 31 waves: 8 chunks of 16 MiB
    assert chunk_blocks(4, 32, 132, 128, row) == 4       # under 8 MiB in all: one copy
    assert chunk_blocks(256, 64, 132, 128, 2 * row) == 32  # at most 8 chunks

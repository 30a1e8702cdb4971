"""FP8 (e4m3) operands through the four catalog ops: every FP8-capable variant against a float64 reference of the
dequantized inputs (per-tensor and row-wise scales, each rank quantizing its shards with scales of its own), odd
shapes with edge tiles, poisoned outputs, fresh data and fresh scales on every call; and the host checks that refuse
bad FP8 input before any launch. The Triton interpreter computes FP8 dots exactly, so the CPU backend checks the
numbers; on GPUs the same tests run the Hopper FP8 path (c in bfloat16 there too)."""

import pytest
import torch

import fused_ops
import iris
from conftest import ON_GPU

FP8 = torch.float8_e4m3fn
OPS = fused_ops.list_ops()
CASES = [(op, v) for op in OPS for v in fused_ops.list_variants(op, iris.BACKEND, "float8_e4m3fn")]
OUT = ["float16", "float32"] + (["bfloat16"] if ON_GPU else [])
# float32 out: the interpreter's FP8 dots are exact; Hopper's FP8 tensor cores accumulate with fewer bits than fp32
# (relative errors of 4e-5 to 2e-4 at these sizes; torch._scaled_mm 7e-5 to 1.3e-4 on an H100)
TOL = {torch.float16: 2e-3, torch.bfloat16: 1e-2, torch.float32: 1e-3 if ON_GPU else 1e-5}
# per-rank m x n x k: edges in M, N and K for the CPU's 32-wide tiles and FP8's 128x256x128 on GPUs; on GPUs K and N are
# multiples of 16 (torch._scaled_mm's rule for the baselines) and rows of 48 bytes take the TMA path
DIMS = (18, 48, 48) if ON_GPU else (18, 40, 36)


def _shard(seed, rank, rows, cols, row_wise, device):
    """(q, s, dequantized): a rows x cols FP8 shard of rank `rank` (q.double() * s is what it stands for), with a
    scale of its own: one fp32 (per-tensor) or one per row. Every rank can rebuild every rank's shard."""
    gen = torch.Generator().manual_seed(seed * 7919 + rank)
    x = torch.randn(rows, cols, generator=gen) * 3
    s = (torch.rand(rows if row_wise else 1, 1, generator=gen) + 0.5) / 8
    q = x.to(FP8)
    return q.to(device), s.to(device), q.double() * s.double()


def fp8_inputs(op, call, world, rank, dims, rows, device):
    """This rank's (a, scale_a, b, scale_b) and the float64 reference of its output. dims: (m_loc, n_loc, k_loc)
    per-rank sizes; global M, N, K are world times those along the sharded dimensions. b is column-major (the .t()
    of an N x K weight) with a 1 x N scale (row-wise), as torch._scaled_mm wants it. rows: (scale_a row-wise,
    scale_b row-wise)."""
    ml, nl, kl = dims

    def a_of(r, m, k):
        return _shard(call * 2, r, m, k, rows[0], device)

    def b_of(r, n, k):  # stored N x K, passed as its K x N transpose; its scale per column of b
        q, s, d = _shard(call * 2 + 1, r, n, k, rows[1], device)
        return q.t(), s.reshape(1, -1), d.t()

    if op == "gemm_all_scatter":
        qa, sa, da = a_of(0, ml, kl)  # the same A on every rank
        bs = [b_of(r, nl, kl) for r in range(world)]
        ref = da @ torch.cat([d for _, _, d in bs], dim=1)
        return qa, sa, bs[rank][0], bs[rank][1], ref
    if op == "all_gather_gemm":
        a_s = [a_of(r, ml, kl) for r in range(world)]
        qb, sb, db = b_of(rank, nl, kl)
        ref = torch.cat([d for _, _, d in a_s]) @ db
        return a_s[rank][0], a_s[rank][1], qb, sb, ref
    m = ml * world
    a_s = [a_of(r, m, kl) for r in range(world)]
    bs = [b_of(r, nl * world if op == "gemm_reduce_scatter" else nl, kl) for r in range(world)]
    ref = sum(a[2] @ b[2] for a, b in zip(a_s, bs))
    if op == "gemm_reduce_scatter":
        ref = ref[rank * ml:(rank + 1) * ml]
    return a_s[rank][0], a_s[rank][1], bs[rank][0], bs[rank][1], ref


def out_shape(op, world, dims):
    ml, nl, _ = dims
    return {"gemm_all_scatter": (ml, nl * world), "gemm_all_reduce": (ml * world, nl),
            "all_gather_gemm": (ml * world, nl), "gemm_reduce_scatter": (ml, nl * world)}[op]


KINDS = [(False, False), (True, True), (True, False), (False, True)]  # (scale_a, scale_b) row-wise


def r_fp8(ctx, op, variant, out_name, dims, calls, cfg=None, first=0):
    """`calls` calls in a row through the kinds of scales (KINDS, from `first` on), fresh data each time, c poisoned
    with NaN before each. Returns the worst relative error, or what went wrong."""
    world, rank, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    dtype = getattr(torch, out_name)
    c = ctx.zeros(*out_shape(op, world, dims), dtype=dtype)
    worst, failed = 0.0, None
    for call in range(calls):  # every rank makes every call, even after a wrong result (peers would wait for it)
        kind = KINDS[(first + call) % len(KINDS)]
        a, sa, b, sb, ref = fp8_inputs(op, call + 1, world, rank, dims, kind, dev)
        c.fill_(float("nan"))
        ctx.barrier()  # peers write into c: poison it before anyone starts
        getattr(fused_ops, op)(ctx, a, b, c, variant=variant, scale_a=sa, scale_b=sb,
                               config=None if cfg is None else fused_ops.Config(**cfg))
        ctx.barrier()
        err = ((c.double().cpu() - ref.cpu()).norm() / ref.norm()).item()
        if not err <= TOL[dtype] and failed is None:
            failed = f"call {call + 1} (row-wise scale_a, scale_b: {kind}): relative error {err}"
        worst = max(worst, err)
    return failed or worst


def _check(results):
    for r in results:
        assert isinstance(r, float), r


def _skip_without_a_gpu_per_rank(op, variant):
    if ON_GPU and fused_ops.variant(op, variant).one_gpu_per_rank and torch.cuda.device_count() < 2:
        pytest.skip("NCCL and SymmetricMemory need one GPU per rank: 2 ranks, fewer GPUs here")


@pytest.mark.parametrize("op,variant", CASES, ids=[f"{o}-{v}" for o, v in CASES])
def test_fp8_variant_against_float64(ranks2, op, variant):
    _skip_without_a_gpu_per_rank(op, variant)
    # every kind of scales (KINDS), fresh data and scales per call, c poisoned before each, edge tiles (DIMS)
    dims = DIMS
    if (op, variant) == ("all_gather_gemm", "torch_async_tp"):  # PyTorch's FP8 op: rows per rank a multiple of 16
        with pytest.raises(iris.launch.RankError, match="multiple of 16"):
            ranks2.run(r_fp8, op, variant, "bfloat16", DIMS, 1)
        dims = (32,) + DIMS[1:]
    _check(ranks2.run(r_fp8, op, variant, OUT[len(variant) % len(OUT)], dims, 3))


@pytest.mark.skipif(not ON_GPU, reason="the GPU's FP8 tiles (config.fp8_catalog_defaults): 128-row and decode tiles")
@pytest.mark.parametrize("op,variant", CASES, ids=[f"{o}-{v}" for o, v in CASES])
def test_fp8_variant_gpu_tiles(ranks2, op, variant):
    # per-rank GEMMs large enough for 128-row tiles (FP8_PRECISE_TILE), and decode rows (16-row tiles, slices of K
    # where the variant splits tiles)
    _skip_without_a_gpu_per_rank(op, variant)
    for dims in ((1024, 2048, 512), (16, 2048, 2048)):
        _check(ranks2.run(r_fp8, op, variant, "bfloat16", dims, 2))


FOUR = [("all_gather_gemm", "push"), ("gemm_reduce_scatter", "fused")]


@pytest.mark.parametrize("op,variant", FOUR, ids=[f"{o}-{v}" for o, v in FOUR])
def test_fp8_four_ranks(ranks4, op, variant):
    # 4 ranks, each with scales of its own (the gathered row scales; the sum of four differently scaled partials);
    # rows of 20 bytes: the pointer path on GPUs too
    _check(ranks4.run(r_fp8, op, variant, "float32", (9, 24, 20), 2))


def test_fp8_split_k_scales_each_slice_once(ranks2):
    # slices of K meet in fp32 partials: scaled per slice, they must add up to the scaled tile (not scale twice)
    # (and the two mixed kinds of scales: row-wise scale_a with a per-tensor scale_b, and the other way round)
    _check(ranks2.run(r_fp8, "gemm_all_reduce", "one_shot", "float32", (18, 40, 300 if ON_GPU else 100), 2,
                      dict(split_k=2), 2))


def test_auto_picks_an_fp8_capable_variant(ranks2):
    _check(ranks2.run(r_fp8, "gemm_reduce_scatter", "auto", "float32", (8, 16, 32), 1))
    for op in OPS:
        assert fused_ops.ops.auto.DEFAULT[op] in fused_ops.list_variants(op, "cpu", "float8_e4m3fn"), op


def r_refusals(ctx):
    """Each bad FP8 call raises on the host (nothing launched) with a message saying what was expected."""
    dev, w = ctx.get_device(), ctx.get_num_ranks()
    a = torch.randn(8, 32).to(FP8).to(dev)
    b = torch.randn(16, 32).to(FP8).to(dev).t()  # column-major 32 x 16
    one = torch.ones(1, device=dev)
    c = ctx.zeros(8, 16 * w)
    run = fused_ops.gemm_all_scatter
    cases = {
        "FP8 needs a and b both": lambda: run(ctx, a, b.float(), c, scale_a=one, scale_b=one),
        "c holds the result: expected one of bfloat16": lambda: run(ctx, a, b, ctx.zeros(8, 16 * w, dtype=FP8),
                                                               scale_a=one, scale_b=one),
        "FP8 operands need scale_b": lambda: run(ctx, a, b, c, scale_a=one),
        "scale_a is for FP8 operands only": lambda: run(ctx, a.float(), b.float(), c, scale_a=one),
        "expected torch.float32": lambda: run(ctx, a, b, c, scale_a=one.half(), scale_b=one),
        "contiguous (1, 16) (row-wise: one per column": lambda: run(ctx, a, b, c, scale_a=torch.ones(8, 1, device=dev),
                                                                     scale_b=torch.ones(1, 15, device=dev)),
        "contiguous (8, 1) (row-wise: one per row": lambda: run(ctx, a, b, c, scale_a=torch.ones(1, 8, device=dev),
                                                                 scale_b=one),
        "must be column-major": lambda: run(ctx, a, b.contiguous(), c, scale_a=one, scale_b=one),
    }
    if not ON_GPU:  # all_reduce/atomic: FP8 on GPUs only (the interpreter's atomics), the one variant without it here
        want = "that take torch.float8_e4m3fn here: torch_nccl, bulk_sync, one_shot"
        cases[want] = lambda: fused_ops.gemm_all_reduce(ctx, a[:, :16], b[:16], ctx.zeros(8, 16), variant="atomic",
                                                        scale_a=one, scale_b=one)
    got = {}
    for want, call in cases.items():
        try:
            call()
            got[want] = "no error"
        except (TypeError, ValueError) as e:
            got[want] = str(e)
    return got


def test_fp8_bad_input_is_refused_with_what_was_expected(ranks2):
    for got in ranks2.run(r_refusals):
        for want, msg in got.items():
            assert want in msg, (want, msg)


def test_the_first_call_agreement_covers_the_scales():
    # ranks that pass scales of different kinds (per-tensor here, row-wise there) run kernels that do not meet: the
    # first call's cross-rank fingerprint (ops._fingerprint, iris/consistency.py) must differ, so they are refused
    spec = fused_ops.ops.GEMM_REDUCE_SCATTER  # no operand on the heap: the fingerprint needs no context
    a, b, c = torch.zeros(8, 32).to(FP8), torch.zeros(16, 32).to(FP8).t(), torch.zeros(4, 16)
    prints = {fused_ops.ops._fingerprint(None, spec, (), a, b, c, scales) for scales in (
        (torch.ones(1), torch.ones(1)), (torch.ones(8, 1), torch.ones(1)), (torch.ones(1), torch.ones(1, 16)))}
    assert len(prints) == 3


def test_async_tp_fp8_refuses_rows_per_rank_cublaslt_refuses():
    # PyTorch's FP8 all-gather matmul: rows per rank a multiple of 16 (18 failed inside cuBLASLt on H100s); a host
    # rule (registry: Variant.refuses) that auto and the sweeps pass over; bf16 operands untouched
    v = fused_ops.variant("all_gather_gemm", "torch_async_tp")
    assert v.refusal(64, 48, 48, 2, FP8) == "" and v.refusal(36, 48, 48, 2, torch.bfloat16) == ""
    assert "multiple of 16" in v.refusal(36, 48, 48, 2, FP8) and "18 rows" in v.refusal(36, 48, 48, 2, FP8)
    # and bfloat16 results only (PyTorch's row-wise scaled op); unknown (None) passes
    assert v.refusal(64, 48, 48, 2, FP8, torch.bfloat16) == "" and "bfloat16 only" in v.refusal(64, 48, 48, 2, FP8,
                                                                                               torch.float32)

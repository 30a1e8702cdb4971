"""Expert parallelism on 2 and 4 ranks: iris.collectives.all_to_all_v (device-side splits, zero-size splits,
overflow recorded, repeated calls) and the moe_ffn catalog op (every variant against a float64 reference, random and
adversarial routing, repeated calls with fresh routing), the MoE layer's output and gradients."""

import pytest
import torch
from conftest import ON_GPU, gpu_per_rank

from iris import collectives as coll
from iris.all_to_all_v import AllToAllVError, check


def _splits(seed, world, rows, mode):
    """Every rank's send splits (the same table on every rank): mode "random", "zeros" (rank 0 sends nothing, every
    rank sends nothing to rank 1), "one" (everything to rank 0)."""
    g = torch.Generator().manual_seed(seed)
    table = []
    for s in range(world):
        if mode == "one":
            sp = [rows] + [0] * (world - 1)
        else:
            cuts = sorted(torch.randint(0, rows + 1, (world - 1,), generator=g).tolist())
            sp = [b - a for a, b in zip([0] + cuts, cuts + [rows])]
            if mode == "zeros":
                sp = [0] * world if s == 0 else [v if d != 1 else 0 for d, v in enumerate(sp)]
        table.append(sp)
    return table


def r_all_to_all_v(ctx, variant, dtype_name, rows, width, calls, mode):
    dtype, w, r, dev = getattr(torch, dtype_name), ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    out = torch.empty(w * rows, width, dtype=dtype, device=dev)
    fails = []
    for call in range(calls):
        table = _splits(call * 7 + 1, w, rows, mode)
        xs = [(torch.randn(rows, width, generator=torch.Generator().manual_seed(100 * call + s)) * 3).to(dtype)
              for s in range(w)]
        x = xs[r].to(dev)
        sp = torch.tensor(table[r], device=dev, dtype=torch.int32)  # device-side splits
        out.fill_(float("nan"))
        coll.all_to_all_v(ctx, out, x, sp, variant=variant)  # no host barrier between calls
        want = torch.cat([xs[s][sum(table[s][:r]):sum(table[s][:r + 1])] for s in range(w)])
        n = want.shape[0]
        _, got_splits = coll.all_to_all_v(ctx, out, x, sp, variant=variant)
        if got_splits.tolist() != [table[s][r] for s in range(w)]:
            fails.append(f"call {call}: out_splits {got_splits.tolist()}")
        if not torch.equal(out[:n].cpu(), want):
            fails.append(f"call {call}: rows differ")
    return fails


A2AV = [("pull", "float16", "random"), ("pull", "float32", "zeros"), ("pull", "float32", "one"),
        ("auto", "float32", "random")]


@pytest.mark.parametrize("variant,dtype,mode", A2AV, ids=["-".join(c) for c in A2AV])
def test_all_to_all_v_matches_torch(ranks, variant, dtype, mode):
    for fails in ranks.run(r_all_to_all_v, variant, dtype, 13, 5, 2, mode):
        assert fails == [], fails


@gpu_per_rank(2)
def test_all_to_all_v_nccl_fallback(ranks2):
    for fails in ranks2.run(r_all_to_all_v, "nccl", "float32", 9, 3, 2, "zeros"):
        assert fails == [], fails


def r_a2av_overflow(ctx):
    w, r, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    x = torch.arange(8 * 2, dtype=torch.float32, device=dev).reshape(8, 2) + 100 * r
    out = torch.full((5, 2), -1.0, device=dev)
    # everyone sends 8 rows to the last rank, which holds 5: it pulls from itself first (senders rotate), and what
    # fits is still rank 0's first 5 rows, in rank order
    sp = torch.tensor([0] * (w - 1) + [8], device=dev)
    try:
        _, got = coll.all_to_all_v(ctx, out, x, sp)
        err = None
        if ctx.backend == "cuda":  # GPUs record it; reading the record is a host sync, done on request
            check(ctx, out.shape[0])
    except AllToAllVError as e:
        err, got = str(e), None
    ok_rows = r != w - 1 or torch.equal(out, (x - 100 * r)[:5])  # the rows that fit, in order
    bad = []
    for call in (lambda: coll.all_to_all_v(ctx, out, x, torch.zeros(w + 1, dtype=torch.int32, device=dev)),
                 lambda: coll.all_to_all_v(ctx, out, x, [9] + [0] * (w - 1)),
                 lambda: coll.all_to_all_v(ctx, out.half(), x, sp)):
        try:
            call()
            bad.append("accepted")
        except (ValueError, TypeError) as e:
            bad.append(type(e).__name__)
    # the next call after an overflow is correct again
    coll.all_to_all_v(ctx, out, x, torch.tensor([1] * w, device=dev))
    again = bool(out[:w, 0].tolist() == [100.0 * s + 2 * r for s in range(w)])
    return err, ok_rows, bad, again, got


def test_all_to_all_v_overflow_is_recorded_never_silent(ranks2):
    res = ranks2.run(r_a2av_overflow)
    assert "16 rows arrived for an output of 5 rows" in res[1][0], res[1]
    assert res[0][0] is None  # rank 0 received nothing: no error there
    for _err, ok_rows, bad, again, _ in res:
        assert ok_rows and again, res
        assert bad == ["ValueError", "ValueError", "TypeError"], bad


# ---------------------------------------------------------------------------------------------- moe_ffn
def _moe_inputs(seed, world, t, h, f, e_local, k, dtype, mode, wdtype=None):
    """Every rank's (x, topk_idx, topk_weights, w1, w2), the same lists on every rank. mode: "random" (top-k of
    random scores), "one" (every token picks experts 0..k-1: expert 0 gets all tokens, most get none), "local" (each
    rank routes only to its own experts: nobody sends a row to a peer)."""
    g = torch.Generator().manual_seed(seed)
    e = e_local * world
    xs, idxs, wts, w1s, w2s = [], [], [], [], []
    for r in range(world):
        xs.append(torch.randn(t, h, generator=g).to(dtype))
        if mode == "one":
            idx = torch.arange(k).repeat(t, 1)
        elif mode == "local":
            idx = torch.stack([torch.randperm(e_local, generator=g)[:k] + r * e_local for _ in range(t)])
        else:
            idx = torch.rand(t, e, generator=g).topk(k, dim=1).indices
        idxs.append(idx.to(torch.int32 if r % 2 else torch.int64))
        wt = torch.rand(t, k, generator=g) + 0.1
        wts.append((wt / wt.sum(1, keepdim=True)).to(wdtype or dtype))
        w1s.append((torch.randn(e_local, h, f, generator=g) / h ** 0.5).to(dtype))
        w2s.append((torch.randn(e_local, f, h, generator=g) / f ** 0.5).to(dtype))
    return xs, idxs, wts, w1s, w2s


def r_moe(ctx, variant, dtype_name, mode, calls, t, h, f, e_local, k, act="silu", dawdle=False):
    import random
    import time

    import fused_ops
    from fused_ops.reference import rel_error
    dtype, w, r, dev = getattr(torch, dtype_name), ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    errs = []
    y = torch.empty(t, h, dtype=dtype, device=dev)
    rng = random.Random(r)
    for call in range(calls):
        if dawdle:  # ranks drift apart: only the op's own handshakes keep its buffers and counters consistent
            time.sleep(rng.random() * 0.02)
        xs, idxs, wts, w1s, w2s = _moe_inputs(1000 * call + 7, w, t, h, f, e_local, k, dtype,
                                              mode if call % 3 == 0 or mode != "mixed" else ("random", "one",
                                                                                              "local")[call % 3],
                                              torch.float32 if call % 2 else None)
        ref = fused_ops.moe.reference(xs, idxs, wts, w1s, w2s, act)[r]
        y.fill_(float("nan"))  # poisoned
        fused_ops.moe_ffn(ctx, xs[r].to(dev), idxs[r].to(dev), wts[r].to(dev), w1s[r].to(dev), w2s[r].to(dev), out=y,
                          variant=variant, activation=act)  # no host barrier between calls
        errs.append(rel_error(y.cpu(), ref))
    return errs


# GPUs: Triton's fp32 tl.dot runs in TF32 (10-bit mantissa), as the catalog's fp32 GEMMs do
TOL = {"float16": 1e-2, "float32": 3e-3 if ON_GPU else 1e-4, "bfloat16": 3e-2}
MOE = [("fused", "float16", "mixed"), ("bulk_sync", "float32", "mixed")] + (
    [("fused", "bfloat16", "mixed"), ("bulk_sync", "bfloat16", "mixed")] if ON_GPU else [])  # interpreter: no bf16


@pytest.mark.parametrize("variant,dtype,mode", MOE, ids=["-".join(c) for c in MOE])
def test_moe_ffn_matches_float64_reference(ranks, variant, dtype, mode):
    # T=5, H=20, F=12, 2 experts per rank, top-2; "mixed": random, all-to-one-expert and rank-local routing in turn
    for errs in ranks.run(r_moe, variant, dtype, mode, 3 if mode == "mixed" else 2, 5, 20, 12, 2, 2):
        assert all(e <= TOL[dtype] for e in errs), errs


@gpu_per_rank(2)
def test_moe_ffn_torch_nccl_baseline(ranks2):
    for errs in ranks2.run(r_moe, "torch_nccl", "float32", "mixed", 3, 7, 20, 12, 3, 3):
        assert all(e <= TOL["float32"] for e in errs), errs


def test_moe_ffn_fifty_calls_fresh_routing_no_barrier(ranks2):
    # 50 calls in a row, fresh inputs and routing each (random / all to one expert / rank-local), ranks dawdling
    # random times, odd sizes (T=3, H=9, F=5, top-3 of 6 experts), relu: counters and flags never go stale
    for errs in ranks2.run(r_moe, "fused", "float32", "mixed", 50, 3, 9, 5, 3, 3, "relu", True):
        assert len(errs) == 50 and all(e <= TOL["float32"] for e in errs), errs


def test_moe_ffn_bulk_sync_repeated_four_ranks_dawdling(ranks4):
    for errs in ranks4.run(r_moe, "bulk_sync", "float16", "mixed", 4, 3, 9, 5, 2, 2, "none", True):
        assert all(e <= TOL["float16"] for e in errs), errs


def r_moe_overflow(ctx, variant):
    import fused_ops
    from fused_ops.reference import rel_error
    w, r, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    xs, idxs, wts, w1s, w2s = _moe_inputs(5, w, 6, 8, 4, 2, 2, torch.float32, "one")  # expert 0 gets 6 * w rows
    args = [t[r].to(dev) for t in (xs, idxs, wts, w1s, w2s)]
    y = torch.zeros(6, 8, device=dev)
    try:
        fused_ops.moe_ffn(ctx, *args, out=y, variant=variant, capacity=5)
        err = None
        if ctx.backend == "cuda":  # GPUs record it; check_errors reads the record (a host sync)
            fused_ops.moe.check_errors(ctx)
    except fused_ops.moe.MoEError as e:
        err = str(e)
    nan_rows = torch.isnan(y).any(1).tolist()
    # the next call, with room for every row, is right again
    fused_ops.moe_ffn(ctx, *args, out=y, variant=variant, capacity=6 * w)
    again = rel_error(y.cpu(), fused_ops.moe.reference(xs, idxs, wts, w1s, w2s)[r])
    return err, nan_rows, again


def test_moe_auto_pick_is_the_same_on_every_rank_and_follows_the_measured_rule():
    """auto's pick depends only on what every rank shares: the backend, ranks per GPU, T and the experts' H x F (the
    same on every rank by the op's contract, checked on the first call). With a GPU per rank: bulk_sync up to 16
    tokens per rank (the baseline's host synchronization dominates there) and for small experts (Qwen3-30B-A3B's
    2048 x 768) at any count, torch_nccl for larger experts above 16 tokens (DeepSeek-V3's 7168 x 2048, Mixtral's
    4096 x 14336); elsewhere fused (NCCL cannot run)."""
    from types import SimpleNamespace

    from fused_ops.moe.op import AUTO_BULK_SYNC_MAX_EXPERT, AUTO_BULK_SYNC_MAX_TOKENS, _auto

    gpu, shared, cpu = (SimpleNamespace(backend=b, ranks_per_device=n) for b, n in (("cuda", 1), ("cuda", 2),
                                                                                      ("cpu", 1)))
    assert AUTO_BULK_SYNC_MAX_TOKENS == 16 and AUTO_BULK_SYNC_MAX_EXPERT == 4 << 20
    qwen3, deepseek, mixtral = 2048 * 768, 7168 * 2048, 4096 * 14336
    assert [_auto(gpu, t, deepseek) for t in (1, 16, 17, 4096)] == ["bulk_sync", "bulk_sync", "torch_nccl",
                                                                     "torch_nccl"]
    assert [_auto(gpu, t, e) for t, e in ((1024, qwen3), (4096, qwen3), (1024, mixtral))] == [
        "bulk_sync", "bulk_sync", "torch_nccl"]
    assert {_auto(c, t, e) for c in (shared, cpu) for t in (1, 16, 17, 4096) for e in (qwen3, mixtral)} == {"fused"}


@pytest.mark.parametrize("variant", ["fused", "bulk_sync"])
def test_moe_ffn_capacity_overflow_is_never_silent(ranks2, variant):
    res = ranks2.run(r_moe_overflow, variant)
    # expert 0 (rank 0) holds 5 rows: 5 of the 12 tokens that chose it get through, whichever arrived first
    dropped = sum(sum(n) for _, n, _ in res)
    assert dropped == 2 * 6 - 5, res
    assert "capacity >= " in (res[0][0] or "") + (res[1][0] or ""), res
    for err, nan_rows, again in res:
        assert (err is not None) == any(nan_rows), res
        assert again <= TOL["float32"], res


def r_moe_errors(ctx):
    import fused_ops
    import fused_ops.nn
    w, dev = ctx.get_num_ranks(), ctx.get_device()
    xs, idxs, wts, w1s, w2s = _moe_inputs(5, w, 4, 8, 4, 2, 2, torch.float32, "random")
    x, idx, wt, w1, w2 = (t[ctx.get_rank()].to(dev) for t in (xs, idxs, wts, w1s, w2s))
    def out_of_range():
        fused_ops.moe_ffn(ctx, x, idx + 2 * w, wt, w1, w2, variant="fused")
        fused_ops.moe.check_errors(ctx)  # GPUs: recorded on the device (the CPU backend refuses on the host)

    calls = {"range": out_of_range,
             "k": lambda: fused_ops.moe_ffn(ctx, x, idx, wt[:, :1], w1, w2),
             "shape": lambda: fused_ops.moe_ffn(ctx, x, idx, wt, w1[:, :5], w2),
             "dtype": lambda: fused_ops.moe_ffn(ctx, x.half(), idx, wt, w1, w2),
             "weights": lambda: fused_ops.moe_ffn(ctx, x, idx, wt.double(), w1, w2),
             "capacity": lambda: fused_ops.moe_ffn(ctx, x, idx, wt, w1, w2, capacity=0),
             "variant": lambda: fused_ops.moe_ffn(ctx, x, idx, wt, w1, w2, variant="nope"),
             "act": lambda: fused_ops.moe_ffn(ctx, x, idx, wt, w1, w2, activation="tanh"),
             "experts": lambda: fused_ops.nn.MoE(ctx, 8, 4, 2 * w + 1, 2)}
    out = {}
    for name, call in calls.items():
        try:
            call()
            out[name] = "accepted"
        except (ValueError, TypeError, KeyError, fused_ops.moe.MoEError) as e:
            out[name] = f"{type(e).__name__}: {e}"
    return out


def test_moe_ffn_bad_input_raises_before_launch(ranks2):
    expect = {"range": "expert ids were out of range" if ON_GPU else "expected [0, 4)", "k": "k mismatch",
              "shape": "E_local x 8 x F", "dtype": "share one dtype",
              "weights": "topk_weights has dtype", "capacity": "capacity=0", "variant": "unknown variant",
              "act": "activation='tanh'", "experts": "must be divisible by the world size"}
    for out in ranks2.run(r_moe_errors):
        for name, text in expect.items():
            assert text in out[name], (name, out[name])


# ---------------------------------------------------------------------------------------------- the layer
LAYER = {"hidden": 8, "ffn": 6, "num_experts": 4, "top_k": 2, "tokens": 7}


def _layer_data(world):
    g = torch.Generator().manual_seed(11)
    xs = [torch.randn(LAYER["tokens"], LAYER["hidden"], generator=g) for _ in range(world)]
    gs = [torch.randn(LAYER["tokens"], LAYER["hidden"], generator=g) for _ in range(world)]
    return xs, gs


def r_layer(ctx, variant):
    from fused_ops.nn import MoE
    w, r, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    moe = MoE(ctx, LAYER["hidden"], LAYER["ffn"], LAYER["num_experts"], LAYER["top_k"], variant=variant, seed=3)
    xs, gs = _layer_data(w)
    out = []
    for _ in range(2):  # twice: the second call reuses the workspaces and must not see the first call's counts
        moe.zero_grad()
        x = xs[r].to(dev).clone().requires_grad_()
        y = moe(x)
        (y * gs[r].to(dev)).sum().backward()
        out.append([t.detach().cpu().clone() for t in (y, x.grad, moe.router.grad, moe.w1.grad, moe.w2.grad)])
    with torch.no_grad():  # inference: the fused catalog op instead of the autograd path
        y = moe(xs[r].to(dev))
    return out, y.cpu()


def _layer_reference(world):
    """Float64, one device: the same router and all experts (MoE's seeded initialization), every rank's tokens."""
    from fused_ops.nn_moe import _ACT
    g = torch.Generator().manual_seed(3)
    h, f, e, k = LAYER["hidden"], LAYER["ffn"], LAYER["num_experts"], LAYER["top_k"]
    router = (torch.randn(e, h, generator=g) / h ** 0.5).double().requires_grad_()
    w1 = (torch.randn(e, h, f, generator=g) / h ** 0.5).double().requires_grad_()
    w2 = (torch.randn(e, f, h, generator=g) / f ** 0.5).double().requires_grad_()
    xs, gs = _layer_data(world)
    xs = [x.double().requires_grad_() for x in xs]
    ys = []
    for x, gr in zip(xs, gs):
        top, idx = torch.softmax(x @ router.t(), -1).topk(k, -1)
        wts = top / top.sum(-1, keepdim=True)
        y = sum(wts[:, j, None] * torch.einsum("tf,tfh->th", _ACT["silu"](torch.einsum("th,thf->tf", x, w1[idx[:, j]])),
                                               w2[idx[:, j]]) for j in range(k))
        (y * gr.double()).sum().backward()
        ys.append(y.detach())
    return ys, [x.grad for x in xs], router.grad, w1.grad, w2.grad


def test_moe_layer_output_and_every_gradient_match_single_device(ranks):
    _check_layer(ranks.run(r_layer, "pull"), ranks.world)


@gpu_per_rank(2)
def test_moe_layer_over_nccl(ranks2):
    _check_layer(ranks2.run(r_layer, "nccl"), 2)


def _check_layer(res, w):
    ys, gxs, g_router, g_w1, g_w2 = _layer_reference(w)
    el = LAYER["num_experts"] // w

    def close(a, b, tol=1e-4):
        return float((a.double() - b).abs().max()) <= tol * (1 + float(b.abs().max()))

    for r in range(w):
        assert close(res[r][1], ys[r], TOL["float32"]), r  # no_grad forward through fused_ops.moe_ffn
    res = [out for out, _ in res]
    for call in range(2):
        router_sum = sum(res[r][call][2].double() for r in range(w))  # replicated router: ranks hold their share
        assert close(router_sum, g_router), call
        for r in range(w):
            y, gx, _, gw1, gw2 = res[r][call]
            assert close(y, ys[r]) and close(gx, gxs[r]), (call, r)
            assert close(gw1, g_w1[r * el:(r + 1) * el]) and close(gw2, g_w2[r * el:(r + 1) * el]), (call, r)


def r_moe_device_ids(ctx):
    """What GPUs do with an invalid expert id (the host check is the CPU backend's only): NaN row, recorded."""
    import fused_ops
    from fused_ops.moe import op
    w, r, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    xs, idxs, wts, w1s, w2s = _moe_inputs(9, w, 4, 8, 4, 2, 2, torch.float32, "random")
    x, idx, wt, w1, w2 = (t[r].to(dev) for t in (xs, idxs, wts, w1s, w2s))
    bad = idx.clone()
    bad[1, 0] = 2 * w if r == 0 else -1
    y = torch.zeros(4, 8, device=dev)
    p = op.MoEProblem(ctx=ctx, x=x, idx=bad, weights=wt, w1=w1, w2=w2, y=y, act="silu", capacity=4 * w,
                      cfg=op.default_config(ctx, x.dtype))
    fused_ops.get("moe_ffn", "fused").run(p)
    try:
        op.check_errors(ctx)
        err = None
    except op.MoEError as e:
        err = str(e)
    nan_rows = torch.isnan(y).any(1).tolist()
    fused_ops.moe_ffn(ctx, x, idx, wt, w1, w2, out=y, variant="fused", capacity=4 * w)
    from fused_ops.reference import rel_error
    return err, nan_rows, rel_error(y.cpu(), fused_ops.moe.reference(xs, idxs, wts, w1s, w2s)[r])


def test_moe_ffn_invalid_ids_on_the_device_give_nan_rows_and_an_error(ranks2):
    for err, nan_rows, again in ranks2.run(r_moe_device_ids):
        assert "1 expert ids were out of range" in err, err
        assert nan_rows == [False, True, False, False], nan_rows
        assert again <= TOL["float32"]


@gpu_per_rank(2)  # the benchmark gathers its timings over NCCL
def test_moe_benchmark_smoke(tmp_path):
    """benchmarks/moe.py end to end on tiny shapes: every variant timed, validated and written with the taxonomy's
    columns (device, date, commit, command included)."""
    import csv
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "benchmarks/moe.py", "--smoke", "--out", str(tmp_path)], cwd=root,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": root})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = list(csv.DictReader(open(tmp_path / "moe_ffn.csv")))
    assert {r["variant"] for r in rows} >= {"bulk_sync", "fused"}, rows
    assert all(r["correct"] == "True" for r in rows), rows
    assert all(r[c] for r in rows for c in ("device", "date", "commit", "command")), rows

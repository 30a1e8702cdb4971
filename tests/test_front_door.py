"""The catalog's front door (fused_ops/ops.py): one spec per op drives every call. The public functions and the
specs agree; extra operands (all_gather_gemm's a_gathered) steer auto's pick in plan() as in a call, and bad ones
are refused on the host with a message that says what was expected."""

import inspect

import torch

import fused_ops
from conftest import gpu_per_rank
from fused_ops import auto, ops, reference


def test_every_gemm_op_has_a_spec_and_a_front_door_taking_its_operands():
    assert list(ops.SPECS) == fused_ops.list_ops()
    for name, spec in ops.SPECS.items():
        params = list(inspect.signature(getattr(fused_ops, name)).parameters)
        assert params == ["ctx", "a", "b", "c", "variant", "config", *(x.name for x in spec.extras)], (name, params)


def r_extras(ctx):
    """auto's pick with and without a_gathered (pull forced as the tuned pick), and the refusals of bad extras."""
    world, rank, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    m, n, k = 8 * world, 8 * world, 16
    a, b, _ = reference.make_inputs("all_gather_gemm", 1, world, rank, m, n, k, torch.float32, dev, reference=False)
    c = ctx.zeros(*reference.local_shapes("all_gather_gemm", m, n, k, world)[2])
    g = torch.empty(m, k, device=dev)
    key = ("all_gather_gemm", m, n, k, a.dtype, world, ctx.backend, ctx.handle)
    assert auto.global_shape(ctx, "all_gather_gemm", a, b) == (m, n, k)
    auto._tuned[key] = "pull"
    try:
        picks = [fused_ops.plan(ctx, "all_gather_gemm", a, b, c)[0],
                 fused_ops.plan(ctx, "all_gather_gemm", a, b, c, a_gathered=g)[0]]
    finally:
        del auto._tuned[key]
    calls = {"unknown operand": lambda: fused_ops.plan(ctx, "gemm_all_reduce", a, b, c, a_gathered=g),
             "not a tensor": lambda: fused_ops.all_gather_gemm(ctx, a, b, c, variant="push", a_gathered="yes"),
             "wrong shape": lambda: fused_ops.all_gather_gemm(ctx, a, b, c, variant="push", a_gathered=g[1:]),
             "not a GEMM op": lambda: fused_ops.plan(ctx, "moe_ffn", a, b, c)}
    errors = {}
    for case, call in calls.items():
        try:
            call()
            errors[case] = (None, "no error")
        except Exception as err:
            errors[case] = (type(err).__name__, str(err))
    return picks, errors


def test_extra_operands_steer_auto_and_are_checked_on_the_host(ranks2):
    for picks, errors in ranks2.run(r_extras):
        assert picks[0] == "pull" and picks[1] != "pull", picks  # pull never materializes the gathered A
        want = {"unknown operand": ("TypeError", "gemm_all_reduce takes no operand a_gathered; its optional operands: "
                                                 "scale_a, scale_b"),
                "not a tensor": ("TypeError", "a_gathered must be a torch.Tensor or None, got str"),
                "wrong shape": ("ValueError", "a_gathered must be a contiguous 16 x 16 torch.float32 tensor, got "
                                              "(15, 16)"),
                "not a GEMM op": ("ValueError", "moe_ffn is not a GEMM+communication op")}
        for case, (name, text) in want.items():
            assert errors[case][0] == name and text in errors[case][1], (case, errors[case])


def r_tune_gathered(ctx):
    """tune() with a_gathered: the variants it rules out are skipped (pull used to be timed, and raised), the
    others are timed with it and fill it."""
    world, rank, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    m, n, k = 8 * world, 8 * world, 16
    full = torch.randn(m, k, generator=torch.Generator().manual_seed(5)).to(dev)
    a = full[rank * 8:(rank + 1) * 8].contiguous()
    b = torch.randn(k, n // world, generator=torch.Generator().manual_seed(6 + rank)).to(dev)
    c = ctx.zeros(m, n // world)
    g = torch.full((m, k), float("nan"), device=dev)
    key = ("all_gather_gemm", m, n, k, a.dtype, world, ctx.backend, ctx.handle)
    try:
        times = fused_ops.tune(ctx, "all_gather_gemm", a, b, c, variants=["push", "pull"], iters=1, a_gathered=g)
        picked = auto._tuned[key]
    finally:
        auto._tuned.pop(key, None)
        auto._tuned_config.pop(key, None)
    return sorted(times), picked, bool(torch.equal(g.cpu(), full.cpu()))


@gpu_per_rank(2)  # tune agrees on its timings over the context's group (NCCL on GPUs)
def test_tune_skips_the_variants_an_extra_operand_rules_out(ranks2):
    for timed, picked, gathered in ranks2.run(r_tune_gathered):
        assert timed == ["push"] and picked == "push" and gathered, (timed, picked, gathered)

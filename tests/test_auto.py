"""The `auto` variant: table lookup (nearest shape, runnable variants only, exclusions), the tuning pass and its
cache, the default where nothing is known, and auto through the op front door and the taxonomy CLI."""

import re

import torch
from conftest import ON_GPU, gpu_per_rank

import fused_ops
from fused_ops import auto, reference
from test_taxonomy import taxonomy


def r_choose(ctx):
    op, w = "gemm_all_reduce", ctx.get_num_ranks()
    out = {"default": auto.choose(ctx, op, 64, 64, 64, torch.float32)}
    saved, saved_mode = auto._table, auto.mode
    try:
        auto._table = {(auto._gpu(ctx), w, op, "float32", "eager"): [
            ((64, 64, 64), ["torch_symm_mem", "two_shot", "torch_nccl"]), ((4096, 4096, 4096), ["atomic", "one_shot"])],
            (auto._gpu(ctx), w, op, "bfloat16", "graph"): [((64, 64, 64), ["two_shot", "torch_nccl"])]}
        out["near_small"] = auto.choose(ctx, op, 80, 48, 64, torch.float32)   # symm_mem is GPU-only
        out["near_big"] = auto.choose(ctx, op, 2048, 8192, 4096, torch.float32)
        out["excluded"] = auto.choose(ctx, op, 64, 64, 64, torch.float32, exclude=("two_shot",))
        out["fp16_borrows_bf16"] = auto.choose(ctx, op, 64, 64, 64, torch.float16)  # bf16 graph rows, borrowed
        auto._table[(auto._gpu(ctx), w, op, "bfloat16", "eager")] = [((64, 64, 64), ["atomic", "torch_nccl"])]
        out["eager_rows"] = auto.choose(ctx, op, 64, 64, 64, torch.bfloat16)
        auto._table[(auto._gpu(ctx), w, op, "float32", "graph")] = [((64, 64, 64), ["copy_engine", "one_shot"])]
        auto._table[(auto._gpu(ctx), w, op, "float32", "eager")] = [((64, 64, 64), ["copy_engine", "one_shot"])]
        out["copy_engine_eager"] = auto.choose(ctx, op, 64, 64, 64, torch.float32)
        auto._tuned[(op, 64, 64, 64, torch.float32, w, ctx.backend)] = "copy_engine"
        auto.mode = lambda ctx: "graph"  # as under CUDA-graph capture
        out["graph_rows"] = auto.choose(ctx, op, 64, 64, 64, torch.bfloat16)
        out["copy_engine_graph"] = auto.choose(ctx, op, 64, 64, 64, torch.float32)  # tuned or ranked: not captured
        # plan() names the pick of the mode asked for, whatever the call's own mode
        a, b, _ = reference.make_inputs(op, 4, w, ctx.get_rank(), 32, 32, 32 * w, torch.float32, ctx.get_device())
        auto._table[(auto._gpu(ctx), w, op, "float32", "eager")] = [((32, 32, 32 * w), ["atomic", "one_shot"])]
        auto._table[(auto._gpu(ctx), w, op, "float32", "graph")] = [((32, 32, 32 * w), ["two_shot", "one_shot"])]
        out["plan_modes"] = [fused_ops.plan(ctx, op, a, b, ctx.zeros(32, 32), timing=t)[0] for t in ("eager", "graph")]
    finally:
        auto._table, auto.mode = saved, saved_mode
        auto._tuned.clear()
    a, b, ref = reference.make_inputs(op, 4, w, ctx.get_rank(), 32, 32, 32 * w, torch.float32, ctx.get_device())
    c = ctx.zeros(32, 32)
    times = auto.tune(ctx, op, a, b, c, iters=1)
    out["tuned_all"] = sorted(times) == sorted(fused_ops.list_variants(op, ctx.backend, "float32"))
    out["tuned_pick"] = auto.choose(ctx, op, 32, 32, 32 * w, torch.float32) == min(times, key=times.get)
    c.fill_(float("nan"))
    ctx.barrier()
    fused_ops.gemm_all_reduce(ctx, a, b, c)  # variant="auto" by default
    out["auto_correct"] = reference.rel_error(c, ref) < reference.TOLERANCE[torch.float32]  # TF32 on GPUs
    auto._tuned.clear()
    return out


def r_tune_configs(ctx):
    op, w = "gemm_all_reduce", ctx.get_num_ranks()
    a, b, ref = reference.make_inputs(op, 5, w, ctx.get_rank(), 48, 48, 48 * w, torch.float32, ctx.get_device())
    c = ctx.zeros(48, 48)
    try:
        # two fused variants, each with its defaults and the two candidate tiles; split-K only where it runs
        split = fused_ops.Config(block_m=16, block_n=16, block_k=16, split_k=2)
        times = auto.tune(ctx, op, a, b, c, variants=["one_shot", "two_shot"], iters=1,
                          configs=fused_ops.config.candidates(ctx, torch.float32) + [split])
        pick = auto.choose(ctx, op, 48, 48, 48 * w, torch.float32)
        tuned = auto.tuned_config(ctx, op, 48, 48, 48 * w, torch.float32, pick)
        planned = fused_ops.plan(ctx, op, a, b, c)  # auto, no config: the tuned one
        given = fused_ops.plan(ctx, op, a, b, c, config=fused_ops.Config(block_m=64))  # the caller's wins
        c.fill_(float("nan"))
        ctx.barrier()
        fused_ops.gemm_all_reduce(ctx, a, b, c)
        return (sorted(times), pick == min(times, key=times.get), planned[0] == pick,
                tuned is None or planned[1] == tuned.merged(planned[1]), given[1].block_m,
                reference.rel_error(c, ref) < reference.TOLERANCE[torch.float32])
    finally:
        auto._tuned.clear()
        auto._tuned_config.clear()


@gpu_per_rank(2)
def test_tune_searches_configs_and_auto_uses_the_winner(ranks2):
    for names, pick_fastest, planned_pick, planned_cfg, given_block_m, correct in ranks2.run(r_tune_configs):
        assert names == ["one_shot", "two_shot"] and pick_fastest and planned_pick and planned_cfg and correct
        assert given_block_m == 64


@gpu_per_rank(2)
def test_auto_choice_rules(ranks2):
    for out in ranks2.run(r_choose):
        gpu = ON_GPU  # GPUs: symm_mem is runnable, and with nothing measured auto falls back to torch_nccl
        assert out == {"default": "torch_nccl" if gpu else "one_shot", "near_small": "torch_symm_mem" if gpu else
                       "two_shot", "near_big": "atomic", "excluded": "torch_symm_mem" if gpu else "torch_nccl",
                       "fp16_borrows_bf16": "two_shot", "eager_rows": "atomic", "graph_rows": "two_shot",
                       "copy_engine_eager": "copy_engine", "copy_engine_graph": "one_shot",
                       "plan_modes": ["atomic", "two_shot"],
                       "tuned_all": True, "tuned_pick": True, "auto_correct": True}, out


def r_refused_shapes(ctx):
    """A variant that refuses a shape on the host (registry: Variant.refuses): auto passes it over for the next in
    its table's ranking, a call naming it raises before any launch, and a sweep leaves it out."""
    op, w = "gemm_all_reduce", ctx.get_num_ranks()
    two = fused_ops.variant(op, "two_shot")
    saved = auto._table, two.refuses
    out = {}
    try:
        two.refuses = lambda m, n, k, world, dtype, c_dtype: (f"two_shot takes no {m} rows" if m % 3 == 0 else
                                                              "nor float32 c at 64" if (m, c_dtype) == (64, "float32")
                                                              else "")
        auto._table = {(auto._gpu(ctx), w, op, "float32", "eager"): [((96, 64, 64), ["two_shot", "one_shot"]),
                                                                       ((64, 64, 64), ["two_shot", "one_shot"])]}
        out["refused"] = auto.choose(ctx, op, 96, 64, 64, torch.float32)
        out["taken"] = auto.choose(ctx, op, 64, 64, 64, torch.float32)  # c's dtype unknown to choose()
        a, b, _ = reference.make_inputs(op, 6, w, ctx.get_rank(), 64, 32, 32 * w, torch.float32, ctx.get_device())
        out["refused_for_c"] = fused_ops.plan(ctx, op, a, b, ctx.zeros(64, 32))[0]  # the call knows it
        a, b, _ = reference.make_inputs(op, 5, w, ctx.get_rank(), 96, 32, 32 * w, torch.float32, ctx.get_device())
        c = ctx.zeros(96, 32)
        try:
            fused_ops.gemm_all_reduce(ctx, a, b, c, variant="two_shot")
            out["call"] = "ran"
        except ValueError as e:
            out["call"] = str(e)
        out["auto_call"] = fused_ops.plan(ctx, op, a, b, c)[0]
        from taxonomy.cli import bench_shape  # a sweep leaves the refused variant out (no row), the rest runs

        rows = bench_shape(ctx, op, ["torch_nccl", "two_shot"], 96, 32, 32 * w, "float32", fused_ops.Config(), 0, 0,
                           True, False)
        out["swept"] = [(r["variant"], r["correct"]) for r in rows]
    finally:
        auto._table, two.refuses = saved
        auto._picked.clear()
    return out


def test_auto_passes_over_variants_that_refuse_the_shape(ranks2):
    for out in ranks2.run(r_refused_shapes):
        assert out == {"refused": "one_shot", "taken": "two_shot", "call": "two_shot takes no 96 rows",
                       "auto_call": "one_shot", "swept": [("torch_nccl", True)], "refused_for_c": "one_shot"}, out


@gpu_per_rank(2)
def test_taxonomy_runs_auto_and_names_its_choice():
    out = taxonomy("run", "gemm_all_reduce", "-m", "32", "-n", "32", "-k", "64", "--validate", "--benchmark",
                   "--iters", "1", "--warmup", "0", "--variants", "auto")
    # CPU: no table rows, so the op's default; GPUs: the table's pick for the nearest swept shape
    pick = re.search(r"auto: (\w+)", out)
    assert pick and "torch_nccl" in out, out
    assert pick.group(1) == "one_shot" if not ON_GPU else pick.group(1) in fused_ops.list_variants("gemm_all_reduce")


def r_capture_pick_set_up(ctx):
    """auto may rank variants differently under capture; its first eager call on a shape also runs the capture
    pick once, so that its workspace exists before a capture (which forbids creating one)."""
    op, w = "gemm_all_reduce", ctx.get_num_ranks()
    saved = auto._table, auto._can_capture
    out = {}
    try:
        auto._can_capture = lambda ctx: True  # as on GPUs (the CPU backend has no capture)
        auto._table = {(auto._gpu(ctx), w, op, "float32", "eager"): [((48, 40, 96), ["one_shot"]),
                                                                     ((4096, 4096, 4096), ["atomic"])],
                       (auto._gpu(ctx), w, op, "float32", "graph"): [((48, 40, 96), ["two_shot"]),
                                                                     ((4096, 4096, 4096), ["atomic"])]}
        out["first"] = auto.capture_pick_to_set_up(ctx, op, 4000, 4000, 4000, torch.float32)  # same pick: None
        out["differs"] = auto.capture_pick_to_set_up(ctx, op, 48, 40, 96, torch.float32)
        out["once"] = auto.capture_pick_to_set_up(ctx, op, 48, 40, 96, torch.float32)
        auto._set_up.clear()
        m, n, k = 48, 40, 32 * w
        a, b, ref = reference.make_inputs(op, 6, w, ctx.get_rank(), m, n, k, torch.float32, ctx.get_device())
        c = ctx.zeros(m, n)
        c.fill_(float("nan"))
        fused_ops.gemm_all_reduce(ctx, a, b, c)  # eager auto: one_shot, then two_shot once
        out["correct"] = reference.rel_error(c, ref) < reference.TOLERANCE[torch.float32]
        made = {key[1] for key in ctx._workspaces if key[0] == op and key[2:5] == (m, n, k // w)}
        out["workspaces"] = sorted(made & {"one_shot", "two_shot"})
    finally:
        auto._table, auto._can_capture = saved
        auto._set_up.clear()
    return out


def test_auto_sets_up_its_capture_pick_on_the_first_eager_call(ranks2):
    for out in ranks2.run(r_capture_pick_set_up):
        assert out == {"first": None, "differs": "two_shot", "once": None, "correct": True,
                       "workspaces": ["one_shot", "two_shot"]}, out

"""Device-side tracing on the CPU backend: catalog variants record GEMM and communication spans per program, the
output stays correct, the merged Chrome trace and the timeline PNG are written, a full buffer drops records (and
says so), and kernels launched without a tracer record nothing."""

import json

import matplotlib.image
import pytest
import torch

import fused_ops
import iris
from fused_ops import reference

EXPECTED = {("gemm_all_scatter", "wg_specialized"): {"gemm tile", "flag wait", "remote store"},
            ("gemm_all_scatter", "fused_sequential"): {"gemm tile", "remote store"},
            ("gemm_all_reduce", "one_shot"): {"gemm tile", "flag wait", "reduce"},
            ("gemm_all_reduce", "bulk_sync"): {"gemm tile", "reduce"}}


def r_trace(ctx, op, variant, path):
    w, r = ctx.get_num_ranks(), ctx.get_rank()
    m = n = k = 64
    a, b, ref = reference.make_inputs(op, 3, w, r, m, n, k, torch.float32, ctx.get_device())
    c = ctx.zeros(m, n)
    cfg = fused_ops.Config(block_m=32, block_n=32, block_k=32)
    tracer = iris.Tracer(ctx, capacity=1024)
    with tracer:
        getattr(fused_ops, op)(ctx, a, b, c, variant=variant, config=cfg)
    ctx.barrier()
    spans = tracer.spans()
    untraced = iris.Tracer(ctx, capacity=16)  # a second buffer, never entered: stays empty
    getattr(fused_ops, op)(ctx, a, b, c, variant=variant, config=cfg)
    tracer.export(str(path / "trace.json"))
    tracer.plot(str(path / "timeline.png"), title=f"{op} {variant}")
    return dict(err=reference.rel_error(c, ref), cats={s["cat"] for s in spans},
                gemm_tiles=sorted(s["tile"] for s in spans if s["cat"] == "gemm tile"),
                ordered=all(s["end_ns"] >= s["start_ns"] for s in spans), untraced=untraced.records()[0],
                dropped=tracer.dropped)


@pytest.mark.parametrize("op,variant", list(EXPECTED), ids=[f"{o}-{v}" for o, v in EXPECTED])
def test_catalog_variants_record_spans(ranks2, tmp_path, op, variant):
    results = ranks2.run(r_trace, op, variant, tmp_path)
    tiles = (64 // 32) * ((64 // 2 if op == "gemm_all_scatter" else 64) // 32)
    for res in results:
        assert res["err"] < reference.TOLERANCE[torch.float32] and res["ordered"], res
        assert res["untraced"] == [] and res["dropped"] == 0, res
        assert res["cats"] == EXPECTED[(op, variant)], res["cats"]
        assert res["gemm_tiles"] == list(range(tiles)), res["gemm_tiles"]  # every tile computed exactly once
    trace = json.load(open(tmp_path / "trace.json"))["traceEvents"]
    assert {e["pid"] for e in trace} == {0, 1}
    assert all(e["dur"] > 0 for e in trace if e["ph"] == "X")
    assert matplotlib.image.imread(tmp_path / "timeline.png").shape[0] > 200


def r_overflow(ctx):
    a, b, _ = reference.make_inputs("gemm_all_reduce", 1, ctx.get_num_ranks(), ctx.get_rank(), 64, 64, 64,
                                    torch.float32, ctx.get_device())
    c = ctx.zeros(64, 64)
    tracer = iris.Tracer(ctx, capacity=5)
    with tracer:
        fused_ops.gemm_all_reduce(ctx, a, b, c, variant="one_shot",
                                  config=fused_ops.Config(block_m=16, block_n=16, block_k=16))
    rows, dropped = tracer.records()
    return len(rows), dropped


def test_full_buffer_drops_and_counts(ranks2):
    for kept, dropped in ranks2.run(r_overflow):
        assert kept == 5 and dropped == 1 + 16 * 6 - 5  # the align record + 6 records for each of 16 tiles

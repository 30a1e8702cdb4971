"""16 · Seeing overlap: device-side tracing and a timeline plot. Kernels record begin/end events (GEMM tile, remote
store, flag wait) with program, SM and the GPU's global timer into a heap buffer; the tracer merges every rank's
events into a Chrome/Perfetto trace and draws one row per program.

Teaches: `iris.Tracer(ctx)`, `with tracer:` (catalog kernels record by themselves), `tracer.kernel_args()` and
`iris.tracing.record(TRACE, kind, tile, TRACING)` in a kernel of your own (compiled out when TRACING is False),
`tracer.export(path)` (open in ui.perfetto.dev) and `tracer.plot(path)`.

    python examples/16_tracing.py            # writes /tmp/iris_trace.json and /tmp/iris_timeline.png
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
import triton
import triton.language as tl

import iris
from iris import tracing


@triton.jit
def traced_gemm_scatter(A, B, C, M, NL, K, context, TRACE, TRACING: tl.constexpr, BM: tl.constexpr,
                        BN: tl.constexpr, BK: tl.constexpr):
    """08's fused GEMM + All-Scatter, with a GEMM span and a STORE span per tile."""
    dctx = iris.DeviceContext.initialize(context)
    tiles_n = tl.cdiv(NL, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, tl.num_programs(0)):
        tracing.record(TRACE, tracing.GEMM, tile, TRACING)
        rm, rn = (tile // tiles_n) * BM + tl.arange(0, BM), (tile % tiles_n) * BN + tl.arange(0, BN)
        acc = tl.zeros((BM, BN), tl.float32)
        for k0 in range(0, K, BK):
            rk = k0 + tl.arange(0, BK)
            acc += tl.dot(tl.load(A + rm[:, None] * K + rk[None, :], mask=rk[None, :] < K, other=0.0),
                          tl.load(B + rk[:, None] * NL + rn[None, :], mask=rk[:, None] < K, other=0.0))
        tracing.record(TRACE, -tracing.GEMM, tile, TRACING)
        tracing.record(TRACE, tracing.STORE, tile, TRACING)
        ptrs = C + rm[:, None] * (NL * dctx.world) + dctx.rank * NL + rn[None, :]
        for i in range(dctx.world):
            dctx.store(ptrs, acc, (dctx.rank + i) % dctx.world)
        tracing.record(TRACE, -tracing.STORE, tile, TRACING)


def main(ctx, m=64, n_local=32, k=32, out_dir=None):
    world, rank = ctx.get_num_ranks(), ctx.get_rank()
    out_dir = out_dir or tempfile.gettempdir()
    g = torch.Generator().manual_seed(16)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n_local * world, generator=g)
    dev = ctx.get_device()
    a_d, b_d = a.to(dev), b[:, rank * n_local:(rank + 1) * n_local].contiguous().to(dev)
    c = ctx.zeros(m, n_local * world)
    tracer = iris.Tracer(ctx, capacity=1024)
    ctx.barrier()
    with tracer:
        traced_gemm_scatter[(2,)](a_d, b_d, c, m, n_local, k, ctx.get_device_context(), **tracer.kernel_args(),
                                  BM=32, BN=32, BK=32)
    ctx.barrier()
    ref = a.double() @ b.double()
    assert ((c.cpu().double() - ref).norm() / ref.norm()).item() < 1e-2
    spans = tracer.spans()
    tiles = (m // 32) * (n_local // 32)
    assert sorted(s["tile"] for s in spans if s["cat"] == "gemm tile") == list(range(tiles)), spans
    assert all(s["end_ns"] >= s["start_ns"] for s in spans)
    trace = tracer.export(os.path.join(out_dir, "iris_trace.json"))          # collective
    png = tracer.plot(os.path.join(out_dir, "iris_timeline.png"), title="fused GEMM + All-Scatter")  # collective
    if rank == 0:
        assert os.path.getsize(trace) > 0 and os.path.getsize(png) > 0
        print(f"ok: {len(spans)} spans on rank 0; trace {trace}, timeline {png}")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)

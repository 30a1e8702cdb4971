"""Producer-consumer: the GEMM kernel (gemm_sms programs) stores tiles locally and sets a per-tile flag to the call's
epoch; a scatter kernel (comm_sms programs) on a second stream waits on each flag and pushes the tile to every peer.
On the CPU backend there are no streams: the kernels run one after the other, the flags already set. The kernels hold
the call's barriers (fused_ops/sync.py): the GEMM announces the rank's entry as it starts, the scatter kernel waits
for every peer's before its first push and ends with the exit barrier. Every GEMM program has a tile, so each has read
the call's number before the scatter kernel, which waits for all tiles, can close the call."""

import torch

import iris
from .. import sync
from ..comm import scatter_kernel
from ..gemm import gemm_kernel
from ..fp8 import WITH_FP8
from ..registry import register

_streams = {}


def side_stream(device):
    if device not in _streams:
        _streams[device] = torch.cuda.Stream(device)
    return _streams[device]


@register("gemm_all_scatter", "producer_consumer", "producer-consumer", "GEMM kernel and scatter kernel on two "
                                                                        "streams, linked by per-tile flags; barrier",
          split_k=True, capture=False, dtypes=WITH_FP8)
def run(p):
    c, col0 = p.c, p.rank * p.n
    ws = p.workspace(in_kernel=True)
    gemm = lambda: gemm_kernel[p.grid(p.cfg.gemm_sms)](  # noqa: E731
        *p.gemm_args(), c, c.stride(0), c.stride(1), col0, ws["flags"], ws["sync"], 0, *p.rank_args(),
        SIGNAL="local", ROLE=sync.role(enter=True), **p.meta(), **p.trace_args())
    scatter = lambda: scatter_kernel[(max(1, min(p.cfg.comm_sms, p.num_tiles)),)](  # noqa: E731
        c, p.m, p.n, c.stride(0), c.stride(1), col0, ws["flags"], ws["sync"], *p.rank_args(), WAIT=True,
        ROLE=sync.role(wait=True, exit=True, close=True), **p.tiles(), num_warps=4, **p.trace_args(),
        **iris.pdl_launch())
    if p.ctx.backend == "cpu":
        gemm()
        scatter()
    else:
        main, side = torch.cuda.current_stream(), side_stream(p.ctx.get_device())
        side.wait_stream(main)  # inputs are ready before either kernel starts
        gemm()
        with torch.cuda.stream(side):
            scatter()
        main.wait_stream(side)

"""Producer-consumer: the GEMM kernel (gemm_sms programs) stores tiles locally and sets a per-tile flag to the call's
epoch; a scatter kernel (comm_sms programs) on a second stream waits on each flag and pushes the tile to every peer.
On the CPU backend there are no streams: the kernels run one after the other, the flags already set."""

import torch

import iris
from ..comm import scatter_kernel
from ..gemm import gemm_kernel
from ..registry import register

_streams = {}


def side_stream(device):
    if device not in _streams:
        _streams[device] = torch.cuda.Stream(device)
    return _streams[device]


@register("gemm_all_scatter", "producer_consumer", "producer-consumer", "GEMM kernel and scatter kernel on two "
                                                                        "streams, linked by per-tile flags; barrier",
          split_k=True)
def run(p):
    c, col0 = p.c, p.rank * p.n
    ws = p.workspace()
    p.ctx.device_barrier()  # every rank is done with the previous call's output before peers write it
    gemm = lambda: gemm_kernel[p.grid(p.cfg.gemm_sms)](  # noqa: E731
        *p.gemm_args(), c, c.stride(0), c.stride(1), col0, ws["flags"], ws["epoch"], 0, *p.rank_args(),
        SIGNAL="local", **p.meta(), **p.trace_args())
    scatter = lambda: scatter_kernel[(max(1, min(p.cfg.comm_sms, p.num_tiles)),)](  # noqa: E731
        c, p.m, p.n, c.stride(0), c.stride(1), col0, ws["flags"], ws["epoch"], *p.rank_args(), WAIT=True,
        **p.tiles(), num_warps=4, **p.trace_args(), **iris.pdl_launch())
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
    p.ctx.device_barrier()

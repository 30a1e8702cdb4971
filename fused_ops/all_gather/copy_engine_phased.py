"""Copy engine, phased: the `copy_engine` variant with stream order in place of flags, so a CUDA graph may hold it.
After a barrier, a side stream pulls each peer's whole shard of A while a persistent GEMM runs this rank's own rows;
a second GEMM launch, ordered after the copies (in a graph: an edge), runs the peers' rows: on the side stream at
long K, where it fills the SMs the first leaves free in its last wave (SIDE_MIN_K), else after the first. Nothing
waits on a flag raised by other work of this GPU, so any order a graph picks for its branches is correct; they
overlap when the graph runs them at once. The cost: no peer row starts before every copy has landed, and a second
launch. A barrier last, as in `copy_engine`."""

import torch

from ..fp8 import WITH_FP8
from ..registry import register
from .copy_engine import finish, launch, operands_and_buffer


# The peers' rows go on the copies' stream from this K (2x H200, 00f8000, results/archive/world2_00f8000/): there they
# overlap the own rows' last wave, which pays where tiles take long (every K >= 8192 shape gained or tied), and costs
# a few microseconds of fixed latency (a kernel after a copy on another stream, the closing barrier's launch no longer
# overlapped) that short tiles do not win back (K = 4096 lost).
SIDE_MIN_K = 8192


@register("all_gather_gemm", "copy_engine_phased", "copy-engine", "copy engines pull the peers' shards while a GEMM "
                                                                  "runs the own rows; a second GEMM, after the copies "
                                                                  "by stream order, runs the peers' rows: no flags",
          shard_tiles=True, split_k=True, split_default=False, dtypes=WITH_FP8)
def run(p):
    a, g, blocks, _ = operands_and_buffer(p)
    unused = p.buffer("no_flags", (1,), torch.int32)  # the kernel's flag arguments, not read in phases 1 and 2

    def peers():  # no PDL: the launch must not overtake the copies
        launch(p, a, g, unused, unused, blocks, 2, pdl=False)

    side = p.k >= SIDE_MIN_K  # on the copies' stream: they start on the SMs the own rows' last wave leaves free
    p.ctx.device_barrier()
    with p.ctx.copy_engine() as ce:
        for i in range(1, p.world):
            src = (p.rank + i) % p.world
            row0 = src * blocks * p.cfg.block_m
            ce.get(g[row0:row0 + p.m_local], a, src)
        launch(p, a, g, unused, unused, blocks, 1)
        if side:
            ce.then(peers)
    if not side:  # after the own rows, on this stream (leaving the block, it waited for the copies)
        peers()
    finish(p, a, g, blocks)

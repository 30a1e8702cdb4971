"""Copy engine: the gather runs on the copy engines, so the GEMM keeps every SM. After a barrier (every shard is
ready), a side stream pulls each peer's shard of A, chunk by chunk, into this rank's gathered buffer and raises each
chunk's flag from the stream once the chunk has landed (iris.CopyEngine: no SM involved, so the GEMM that holds them
all cannot starve it). Meanwhile one persistent GEMM runs this rank's own rows first, straight from A, then each
peer's rows as their chunks' flags rise; its last program lowers the flags for the next call. A barrier last:
peers have finished copying this rank's A before it may change.

PyTorch's async-TP splits the work the same way but runs one matmul per shard; here one persistent grid spans all
shards, so no shard ends in a half-empty wave and no launch sits between shards. Tiles never straddle two shards:
the gathered buffer holds each shard at a multiple of BLOCK_M rows (zero rows in between when BLOCK_M does not divide
the shard), so every tile reads one shard and waits on one flag. Default tiles are those of one shard's GEMM
(registry `shard_tiles`): the own shard's tiles must fill a wave to hide the first copy."""

import torch
import triton
import triton.language as tl

import iris
from iris.replay import tensor_key
from ..comm import chunk_blocks
from ..gemm import NEXT_IN_AT_START, c_tile, first_unit, operands, tile_coords, unit_acc, unit_start, unit_tile
from ..fp8 import WITH_FP8
from ..registry import register


@triton.jit
def kernel(
    A, G, B, C,                                         # own shard, gathered shards (heap), B K x N, output C
    M_LOCAL, N, K,                                      # problem size (per shard)
    stride_am, stride_gm, stride_bk, stride_bn, stride_cm, stride_cn,  # strides, in elements
    flags, done,                                        # per-chunk flags raised by the copies; programs done
    CHUNK_BLOCKS,                                       # row blocks per chunk
    cur_rank, world_size, heap_bases,                   # this rank, the ranks, the symmetric heap
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    TMA: tl.constexpr,                                  # 0: plain pointers; 1: TMA; 2: TMA, B stored transposed
    PDL: tl.constexpr = tl.constexpr(False),            # programmatic dependent launch (iris.launched_early)
    PHASE: tl.constexpr = tl.constexpr(0),              # 0: every shard; 1: own shard only; 2: peers' only, no flags
    PARTIALS=None, COUNTS=None,                         # split-K: the slices' fp32 partials and arrival counts
    SPLIT_K: tl.constexpr = tl.constexpr(1), WHOLE=0,   # split-K: slices per tile; tiles [0, WHOLE) stay whole
    SA=None, SB=None, SCALES: tl.constexpr = tl.constexpr(0),  # FP8: scales (gemm.scale_tile); 0: none
):
    """PHASE 0: every shard, the peers' tiles each waiting on its chunk's flag. 1: this rank's own shard only; 2: the
    peers' shards only, with no flags (the copies completed before this launch: copy_engine_phased). The launch's
    tiles, shard after shard, are work units as in the shared loop (gemm.num_units: split-K, or only the last wave's
    tiles split)."""
    iris.launched_early(PDL, NEXT_IN_AT_START)
    blocks = tl.cdiv(M_LOCAL, BLOCK_M)  # row blocks per shard; shard s starts at row s * blocks * BLOCK_M of G
    chunks = tl.cdiv(blocks, CHUNK_BLOCKS)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    per_shard = blocks * num_pid_n
    programs = tl.num_programs(0)
    # The persistent order over all shards' tiles (tile t on program t % programs), walked shard by shard so that
    # each shard's operand is set up once and one tile loop serves all of them (one pipeline's shared memory).
    first, last = 0, world_size
    if PHASE == 1:
        last = 1
    if PHASE == 2:
        first = 1
    for shard in range(first, last):  # 0: this rank's own rows, ready at once; then the peers in the copies' order
        src = (cur_rank + shard) % world_size
        if shard == 0:
            rows, base, stride, block0 = M_LOCAL, A, stride_am, 0
        else:
            rows, base, stride, block0 = world_size * blocks * BLOCK_M, G, stride_gm, src * blocks
        a_op, b_op = operands(base, B, rows, N, K, stride, stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, TMA)
        sa = SA
        if SCALES % 2 == 0:  # FP8 (SA: every rank's row scales, padded): row (block0 + lb) * BLOCK_M + i of this
            if SCALES != 0:  # operand is row lb * BLOCK_M + i of shard src
                sa = SA + src * M_LOCAL - block0 * BLOCK_M
        lo = (shard - first) * per_shard  # the launch's tiles, numbered from 0
        for unit in range(first_unit(unit_start(lo, SPLIT_K, WHOLE)), unit_start(lo + per_shard, SPLIT_K, WHOLE),
                          programs):
            tile, s, _ = unit_tile(unit, SPLIT_K, WHOLE)
            lb, pid_n = tile_coords(tile - lo, blocks, num_pid_n, GROUP_M)
            if PHASE == 0:
                if shard > 0:
                    iris.wait(flags + src * chunks + lb // CHUNK_BLOCKS, 1, cur_rank, heap_bases)
                    if TMA:  # the chunk was written by the copy engine; TMA reads through the async proxy
                        iris.fence_proxy_async()
            acc, whole = unit_acc(a_op, b_op, unit, tile, s, block0 + lb, pid_n, rows, N, K, stride, 1, stride_bk,
                                  stride_bn, PARTIALS, COUNTS, BLOCK_M, BLOCK_N, BLOCK_K, TMA, SPLIT_K, WHOLE,
                                  SA=sa, SB=SB, SCALES=SCALES)
            if whole:  # (a split tile: on the program that summed its slices)
                ptrs, mask = c_tile(C + src * M_LOCAL * stride_cm, lb, pid_n, M_LOCAL, N, stride_cm, stride_cn, 0,
                                    BLOCK_M, BLOCK_N)
                tl.store(ptrs, acc.to(C.dtype.element_ty), mask=mask)
    # Every peer chunk's flag was seen at 1 by some tile before its program counted itself in here, so the last one
    # in lowers them all after the copy engine's writes: no flag is stale for the next call or graph replay.
    if PHASE == 0:
        if tl.atomic_add(done, 1, sem="acq_rel", scope="gpu") == tl.num_programs(0) - 1:
            for f in range(world_size * chunks):
                tl.store(flags + f, 0)
            tl.store(done, 0)


@register("all_gather_gemm", "copy_engine", "copy-engine", "copy engines pull peers' A chunks on a side stream and "
                                                           "raise flags from the stream; one GEMM on every SM",
          shard_tiles=True, capture=False, split_k=True, split_default=False, dtypes=WITH_FP8)
def run(p):
    a, g, blocks, col_blocks = operands_and_buffer(p)
    programs = min(p.cfg.gemm_sms, p.world * blocks * col_blocks)
    per = chunk_blocks(blocks, col_blocks, programs, p.cfg.block_m, p.k * a.element_size())
    chunks = triton.cdiv(blocks, per)
    flags = p.buffer(f"chunk_flags_x{chunks}", (p.world * chunks,), torch.int32)
    done = p.buffer("programs_done", (1,), torch.int32)
    p.ctx.device_barrier()
    with p.ctx.copy_engine() as ce:
        def pull():
            for i in range(1, p.world):  # in the order the GEMM consumes them
                src = (p.rank + i) % p.world
                for j in range(chunks):
                    lo, hi = j * per * p.cfg.block_m, min((j + 1) * per * p.cfg.block_m, p.m_local)
                    row0 = src * blocks * p.cfg.block_m
                    ce.get(g[row0 + lo:row0 + hi], a[lo:hi], src, flag=flags[src * chunks + j:src * chunks + j + 1])

        # everything pull() reads: the same key, the same operations (CopyEngine.plan)
        ce.plan(("all_gather_gemm/copy_engine", tensor_key(a), g.data_ptr(), flags.data_ptr(), per, p.cfg.block_m),
                pull)
        launch(p, a, g, flags, done, per, 0)
    finish(p, a, g, blocks)


def operands_and_buffer(p):
    """A on the heap (peers copy it), the gathered buffer (each shard at a multiple of BLOCK_M rows), the shard's row
    blocks and the column blocks."""
    a, bm = p.staged_a(), p.cfg.block_m
    p.scale_args()  # FP8: the row scales' gather (a collective launch) now, before the copy engines' block
    blocks = triton.cdiv(p.m_local, bm)
    g = p.buffer("gathered_a_by_block", (p.world * blocks * bm, p.k), a.dtype)
    return a, g, blocks, triton.cdiv(p.n, p.cfg.block_n)


def launch(p, a, g, flags, done, per, phase, pdl=True):
    """One launch of the kernel: every shard (phase 0), this rank's own (1) or the peers' (2), on at most gemm_sms
    programs, split as the config says (Problem.launch_split)."""
    c = p.c
    shards = {0: p.world, 1: 1, 2: p.world - 1}[phase]
    tiles = shards * triton.cdiv(p.m_local, p.cfg.block_m) * triton.cdiv(p.n, p.cfg.block_n)
    split, programs = p.launch_split(tiles, p.cfg.gemm_sms, f"phase{phase}")
    kernel[(programs,)](*p.operands(a), *p.operands(g, p.b), c, p.m_local, p.n, p.k, a.stride(0), g.stride(0),
                        p.b.stride(0), p.b.stride(1), c.stride(0), c.stride(1), flags, done, per, *p.rank_args(),
                        BLOCK_M=p.cfg.block_m, BLOCK_N=p.cfg.block_n, BLOCK_K=p.cfg.block_k, GROUP_M=p.cfg.group_m,
                        TMA=p.tma, num_warps=p.cfg.num_warps, num_stages=p.cfg.num_stages, PHASE=phase,
                        **split, **(iris.pdl_launch() if pdl else {}), **p.scale_args())


def finish(p, a, g, blocks):
    """The gathered A for a caller who asked for it, then the closing barrier: peers have finished copying this rank's
    A before it may change."""
    if p.a_gathered is not None:  # rows back together, without the padding
        out = p.gathered_buffer().view(p.world, p.m_local, p.k)
        g_shards = g.view(p.world, blocks * p.cfg.block_m, p.k)
        for r in range(p.world):
            out[r].copy_(a if r == p.rank else g_shards[r, :p.m_local])
    p.ctx.device_barrier()

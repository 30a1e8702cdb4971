"""Copy engine: a two-shot all-reduce whose transfers all run on the copy engines, so the GEMM keeps every SM and the
reduction rides in its epilogue. Rows are split into one slice per rank (its owner). Each rank's persistent GEMM
computes the peers' slices first: each finished chunk of partial rows is counted on a flag that the side stream waits
on (cuStreamWaitValue32) before the copy engine puts the chunk into the owner's inbox and raises the owner's flag.
Then it computes its own slice: each tile adds the peers' partials from the inbox (reduce-scatter), is stored final,
and is counted again; the side stream puts every finished chunk into every peer's C (all-gather). A small kernel
last waits until the peers' chunks of C have landed here.

Nothing waits on a previous call's state, so there is no barrier: a rank writes a peer's inbox for call e+1 only
after that peer finished call e (it needed this rank's final chunks of call e first), and every flag is lowered by
its consumer before the chain that leads to the next write of it (the last tile of a chunk lowers its inbox flags
before it counts the chunk final; the side stream lowers the counts it waited on; the last kernel lowers the C
flags). On the interpreter, which runs programs one after another, the GEMM is two launches (peers' slices, then
its own), so no program waits on a slice that a later program of a peer computes."""

import torch
import triton
import triton.language as tl

import iris
from ..comm import chunk_blocks
from ..gemm import c_tile, gemm_tile, operands, tile_coords
from ..registry import register


@triton.jit
def _slice(s, blocks, world_size):
    """Row blocks [lo, hi) owned by rank s."""
    return s * blocks // world_size, (s + 1) * blocks // world_size


@triton.jit
def kernel(A, B, C, S, I, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, ready, inflags, consumed, final,
           CHUNK_BLOCKS, MAX_CHUNKS, SLICE_ROWS, cur_rank, world_size, heap_bases, BLOCK_M: tl.constexpr,
           BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, TMA: tl.constexpr,
           PHASE: tl.constexpr = tl.constexpr(0), PDL: tl.constexpr = tl.constexpr(False)):
    """C, S (partials of the peers' slices) and the inbox I (world x SLICE_ROWS x N) are contiguous M x N-wide.
    PHASE 0: every slice in one launch; 1: the peers' slices only; 2: this rank's own slice only."""
    iris.launched_early(PDL)
    a_op, b_op = operands(A, B, M, N, K, stride_am, stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, TMA)
    blocks, num_pid_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    programs = tl.num_programs(0)
    first, last = 1, world_size + 1  # the peers' slices in the copies' order, then (i == world_size) its own
    if PHASE == 1:
        last = world_size
    if PHASE == 2:
        first = world_size
    base = 0  # tiles of the slices walked so far: the persistent order continues across slices
    for i in range(first, last):
        s = (cur_rank + i) % world_size
        lo, hi = _slice(s, blocks, world_size)
        tiles = (hi - lo) * num_pid_n
        for t in range(base + (tl.program_id(0) - base % programs + programs) % programs, base + tiles, programs):
            lb, pid_n = tile_coords(t - base, hi - lo, num_pid_n, GROUP_M)
            j = lb // CHUNK_BLOCKS
            acc = gemm_tile(a_op, b_op, lo + lb, pid_n, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                            BLOCK_M, BLOCK_N, BLOCK_K, TMA)
            if i < world_size:  # a peer's rows: the partial goes to the copy engine, chunk by chunk
                ptrs, mask = c_tile(S, lo + lb, pid_n, M, N, N, 1, 0, BLOCK_M, BLOCK_N)
                tl.store(ptrs, acc.to(S.dtype.element_ty), mask=mask)
                iris.signal(ready + s * MAX_CHUNKS + j, 1, cur_rank, cur_rank, heap_bases, op="add")
            else:
                rows = tl.minimum(hi * BLOCK_M, M) - lo * BLOCK_M
                for q in range(1, world_size):
                    src = (cur_rank + q) % world_size
                    iris.wait(inflags + src * MAX_CHUNKS + j, 1, cur_rank, heap_bases)
                    part, pmask = c_tile(I + src * SLICE_ROWS * N, lb, pid_n, rows, N, N, 1, 0, BLOCK_M, BLOCK_N)
                    acc += tl.load(part, mask=pmask, other=0.0).to(tl.float32)
                ptrs, mask = c_tile(C, lo + lb, pid_n, M, N, N, 1, 0, BLOCK_M, BLOCK_N)
                tl.store(ptrs, acc.to(C.dtype.element_ty), mask=mask)
                chunk_tiles = (tl.minimum(j * CHUNK_BLOCKS + CHUNK_BLOCKS, hi - lo) - j * CHUNK_BLOCKS) * num_pid_n
                if tl.atomic_add(consumed + j, 1, sem="acq_rel", scope="gpu") == chunk_tiles - 1:
                    for q in range(1, world_size):  # the chunk's inbox is read: lower its flags for the next call
                        tl.store(inflags + ((cur_rank + q) % world_size) * MAX_CHUNKS + j, 0)
                    tl.store(consumed + j, 0)
                iris.signal(final + j, 1, cur_rank, cur_rank, heap_bases, op="add")
        base += tiles


@triton.jit
def gathered_kernel(flags, MAX_CHUNKS, CHUNK_BLOCKS, M, cur_rank, world_size, heap_bases, BLOCK_M: tl.constexpr,
                    PDL: tl.constexpr = tl.constexpr(False)):
    """Wait until every peer's final chunks have landed in this rank's C (flags[q * MAX_CHUNKS + j]), then lower
    the flags for the next call."""
    iris.launched_early(PDL)
    blocks = tl.cdiv(M, BLOCK_M)
    for q in range(1, world_size):
        src = (cur_rank + q) % world_size
        lo, hi = _slice(src, blocks, world_size)
        for j in range(tl.cdiv(hi - lo, CHUNK_BLOCKS)):
            iris.wait(flags + src * MAX_CHUNKS + j, 1, cur_rank, heap_bases)
            tl.store(flags + src * MAX_CHUNKS + j, 0)


def _slice_rows(s, blocks, world, bm, m):
    lo, hi = s * blocks // world, (s + 1) * blocks // world
    return lo * bm, min(hi * bm, m)


@register("gemm_all_reduce", "copy_engine", "copy-engine", "two-shot on the copy engines: partial chunks put to their "
                                                           "owner, reduced in its GEMM epilogue, put back; no barrier")
def run(p):
    c, bm, world, rank = p.c, p.cfg.block_m, p.world, p.rank
    blocks, col_blocks = triton.cdiv(p.m, bm), triton.cdiv(p.n, p.cfg.block_n)
    programs = min(p.cfg.gemm_sms, blocks * col_blocks)
    per = chunk_blocks(triton.cdiv(blocks, world), col_blocks, programs, bm, p.n * c.element_size())
    max_chunks = triton.cdiv(triton.cdiv(blocks, world), per)
    slice_rows = triton.cdiv(blocks, world) * bm
    ws = {name: p.buffer(name, shape, dtype) for name, shape, dtype in (
        ("partials", (p.m, p.n), c.dtype), ("inbox", (world, slice_rows, p.n), c.dtype),
        (f"ready_x{max_chunks}", (world * max_chunks,), torch.int32),
        (f"inflags_x{max_chunks}", (world * max_chunks,), torch.int32),
        (f"consumed_x{max_chunks}", (max_chunks,), torch.int32), (f"final_x{max_chunks}", (max_chunks,), torch.int32),
        (f"gathered_x{max_chunks}", (world * max_chunks,), torch.int32))}
    ready, inflags, final, gathered = (ws[f"{n}_x{max_chunks}"] for n in ("ready", "inflags", "final", "gathered"))

    def chunks(s):
        lo, hi = _slice_rows(s, blocks, world, bm, p.m)
        for j, r0 in enumerate(range(lo, hi, per * bm)):
            r1 = min(r0 + per * bm, hi)
            yield j, lo, r0, r1, triton.cdiv(r1 - r0, bm) * col_blocks

    ce = p.ctx.copy_engine()
    for i in range(1, world):  # the peers' slices, in the GEMM's order: partials to their owner's inbox
        s = (rank + i) % world
        for j, lo, r0, r1, tiles in chunks(s):
            flag = ready[s * max_chunks + j:][:1]
            ce.wait(flag, tiles)
            ce.write(flag, 0)
            ce.put(ws["inbox"][rank, r0 - lo:r1 - lo], ws["partials"][r0:r1], s,
                   flag=inflags[rank * max_chunks + j:][:1])
    for j, lo, r0, r1, tiles in chunks(rank):  # its own slice, reduced: into every peer's C
        ce.wait(final[j:j + 1], tiles)
        ce.write(final[j:j + 1], 0)
        for i in range(1, world):
            ce.put(c[r0:r1], c[r0:r1], (rank + i) % world, flag=gathered[rank * max_chunks + j:][:1])
    args = (p.a, p.b, c, ws["partials"], ws["inbox"], p.m, p.n, p.k, p.a.stride(0), p.a.stride(1), p.b.stride(0),
            p.b.stride(1), ready, inflags, ws[f"consumed_x{max_chunks}"], final, per, max_chunks, slice_rows,
            *p.rank_args())
    meta = dict(BLOCK_M=bm, BLOCK_N=p.cfg.block_n, BLOCK_K=p.cfg.block_k, GROUP_M=p.cfg.group_m, TMA=p.tma,
                num_warps=p.cfg.num_warps, num_stages=p.cfg.num_stages, **iris.pdl_launch())
    for phase in ((0,) if p.ctx.backend == "cuda" else (1, 2)):
        kernel[(programs,)](*args, PHASE=phase, **meta)
    gathered_kernel[(1,)](gathered, max_chunks, per, p.m, *p.rank_args(), BLOCK_M=bm, num_warps=1,
                          **iris.pdl_launch())
    ce.join()

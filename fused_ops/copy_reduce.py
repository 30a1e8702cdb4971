"""The copy-engine reduction shared by gemm_all_reduce/copy_engine and gemm_reduce_scatter/copy_engine: every byte
moves on the copy engines (iris.CopyEngine), so the GEMM keeps every SM and the reduction rides in its epilogue.

Rows are split into one slice per rank (its owner). Each rank's persistent GEMM computes the peers' slices first:
each finished chunk of partial rows is counted on a flag that the side stream waits on (cuStreamWaitValue32) before
the copy engine puts the chunk into the owner's inbox and raises the owner's flag. Then it computes its own slice:
each tile adds the peers' partials from the inbox and is stored final (reduce-scatter). For an all-reduce it is also
counted, and the side stream puts every finished chunk into every peer's C (all-gather); a small kernel last waits
until the peers' chunks of C have landed here.

The all-reduce needs no barrier: a rank writes a peer's inbox for call e+1 only after its call e waited for that
peer's final chunks, which the peer sent after reading the inbox in call e. The reduce-scatter has no such wait: a
rank may finish call e and put call e+1's partials into the inbox of a peer still in call e, whose consumer would
then lower the new flag with the old one and wait for it forever (test_variant_calls_without_host_sync caught it,
4 ranks, CPU). So it starts with a device barrier, before the side stream forks. Every flag is lowered by its
consumer before the chain that leads to the next write of it: the last tile of a chunk lowers its inbox flags
before it counts the chunk final, the side stream lowers the counts it waited on, the last kernel lowers the C
flags. On the interpreter, which runs programs one after another, the GEMM is two launches (peers' slices, then its
own), so no program waits on a slice that a later program of a peer computes.

On GPUs the side stream's waits are enqueued after the GEMM's launch and before gathered_kernel's. Streams share
hardware queues (CUDA_DEVICE_MAX_CONNECTIONS), and a queue runs its work in order: a stream wait enqueued before the
launch it waits for hung (scripts/copy_engine_check.py --handshake --wait-first), and the all-reduce hung on two
H200s (2026-11-23, d7e0f17: every peer's inbox flag stayed 0) while its waits sat behind gathered_kernel's launch,
which cannot start before the GEMM ends, whose tiles wait for the peer's puts that those waits hold back. A CUDA
graph keeps no such order (nor promises that its branches run at once), so these variants are never captured
(registry: Variant.capture)."""

import torch
import triton
import triton.language as tl

import iris
from iris.replay import tensor_key
from .comm import chunk_blocks
from .gemm import NEXT_IN_AT_START, c_tile, first_unit, gemm_tile, operands, tile_coords


@triton.jit
def slice_rows(s, M, world_size, BLOCK_M: tl.constexpr, EVEN: tl.constexpr):
    """Rows [lo, hi) owned by rank s: M / world each (EVEN: reduce-scatter's layout), or whole row blocks."""
    if EVEN:
        lo, hi = s * (M // world_size), (s + 1) * (M // world_size)
    else:
        blocks = tl.cdiv(M, BLOCK_M)
        lo, hi = (s * blocks // world_size) * BLOCK_M, tl.minimum(((s + 1) * blocks // world_size) * BLOCK_M, M)
    return lo, hi


@triton.jit
def kernel(
    A, B,                                       # operands: A M x K, B K x N
    OUT,                                        # all of C (GATHER) or this rank's slice
    S, I,                                       # peers' partials (M x N), inbox (world x SLICE_ROWS x N)
    M, N, K,                                    # problem size
    stride_am, stride_ak, stride_bk, stride_bn, stride_om,  # strides, in elements
    ready, inflags, consumed, final,            # per-chunk counts: partials ready, inbox landed, tiles read, final
    CHUNK_BLOCKS, MAX_CHUNKS, SLICE_ROWS,       # row blocks per chunk, chunks per slice, inbox rows
    cur_rank, world_size, heap_bases,           # this rank, the ranks, the symmetric heap
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    TMA: tl.constexpr,                          # 0: plain pointers; 1: TMA; 2: TMA, B stored transposed
    EVEN: tl.constexpr, GATHER: tl.constexpr,   # slices of M / world rows; all-reduce (C gathered)
    PHASE: tl.constexpr = tl.constexpr(0),      # 0: every slice; 1: the peers'; 2: this rank's own
    PDL: tl.constexpr = tl.constexpr(False),    # programmatic dependent launch (iris.launched_early)
    FLAGS: tl.constexpr = tl.constexpr(True),   # False (run_phased): no flag raised or awaited
    SA=None, SB=None, SCALES: tl.constexpr = tl.constexpr(0),  # FP8: scales (gemm.scale_tile); 0: none
):
    """S (the peers' slices' partials, M x N) and the inbox I (world x SLICE_ROWS x N) are contiguous. OUT: all of C
    (GATHER: this rank's slice at its rows, counted on `final`), or this rank's slice alone. PHASE 0: every slice in
    one launch; 1: the peers' slices only; 2: this rank's own slice only. FLAGS=False (run_phased): no flag is
    raised or awaited, and the own slice is stored as this rank's partial, without the inbox."""
    iris.launched_early(PDL, NEXT_IN_AT_START)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    programs = tl.num_programs(0)
    first, last = 1, world_size + 1  # the peers' slices in the copies' order, then (i == world_size) its own
    if PHASE == 1:
        last = world_size
    if PHASE == 2:
        first = world_size
    base = 0  # tiles of the slices walked so far: the persistent order continues across slices
    for i in range(first, last):
        s = (cur_rank + i) % world_size
        lo, hi = slice_rows(s, M, world_size, BLOCK_M, EVEN)
        blocks = tl.cdiv(hi - lo, BLOCK_M)
        tiles = blocks * num_pid_n
        a_op, b_op = operands(A + lo * stride_am, B, hi - lo, N, K, stride_am, stride_bk, stride_bn, BLOCK_M, BLOCK_N,
                              BLOCK_K, TMA)
        sa = SA
        if SCALES % 2 == 0:  # FP8, a scale per row of A: this slice's rows (SCALES 0 has no SA to offset)
            if SCALES != 0:
                sa = SA + lo
        for t in range(first_unit(base), base + tiles, programs):
            lb, pid_n = tile_coords(t - base, blocks, num_pid_n, GROUP_M)
            j = lb // CHUNK_BLOCKS
            acc = gemm_tile(a_op, b_op, lb, pid_n, hi - lo, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                            BLOCK_M, BLOCK_N, BLOCK_K, TMA, SA=sa, SB=SB, SCALES=SCALES)
            if i < world_size:  # a peer's rows: the partial goes to the copy engine, chunk by chunk
                ptrs, mask = c_tile(S + lo * N, lb, pid_n, hi - lo, N, N, 1, 0, BLOCK_M, BLOCK_N)
                tl.store(ptrs, acc.to(S.dtype.element_ty), mask=mask)
                if FLAGS:
                    iris.signal(ready + s * MAX_CHUNKS + j, 1, cur_rank, cur_rank, heap_bases, op="add")
            elif not FLAGS:
                ptrs, mask = c_tile(OUT, lb, pid_n, hi - lo, N, stride_om, 1, 0, BLOCK_M, BLOCK_N)
                tl.store(ptrs, acc.to(OUT.dtype.element_ty), mask=mask)
            else:
                for q in range(1, world_size):
                    src = (cur_rank + q) % world_size
                    iris.wait(inflags + src * MAX_CHUNKS + j, 1, cur_rank, heap_bases)
                    part, pmask = c_tile(I + src * SLICE_ROWS * N, lb, pid_n, hi - lo, N, N, 1, 0, BLOCK_M, BLOCK_N)
                    acc += tl.load(part, mask=pmask, other=0.0).to(tl.float32)
                row0 = lo if GATHER else 0
                ptrs, mask = c_tile(OUT + row0 * stride_om, lb, pid_n, hi - lo, N, stride_om, 1, 0, BLOCK_M, BLOCK_N)
                tl.store(ptrs, acc.to(OUT.dtype.element_ty), mask=mask)
                chunk_tiles = (tl.minimum(j * CHUNK_BLOCKS + CHUNK_BLOCKS, blocks) - j * CHUNK_BLOCKS) * num_pid_n
                if tl.atomic_add(consumed + j, 1, sem="acq_rel", scope="gpu") == chunk_tiles - 1:
                    for q in range(1, world_size):  # the chunk's inbox is read: lower its flags for the next call
                        tl.store(inflags + ((cur_rank + q) % world_size) * MAX_CHUNKS + j, 0)
                    tl.store(consumed + j, 0)
                if GATHER:
                    iris.signal(final + j, 1, cur_rank, cur_rank, heap_bases, op="add")
        base += tiles


@triton.jit
def gathered_kernel(
    flags,                                     # per-chunk flags of the final chunks
    MAX_CHUNKS, CHUNK_BLOCKS,                  # chunks per slice, row blocks per chunk
    M,                                         # rows
    cur_rank, world_size, heap_bases,          # this rank, the ranks, the symmetric heap
    BLOCK_M: tl.constexpr,                     # tile rows
    PDL: tl.constexpr = tl.constexpr(False),   # programmatic dependent launch (iris.launched_early)
):
    """Wait until every peer's final chunks have landed in this rank's C (flags[q * MAX_CHUNKS + j]), then lower
    the flags for the next call."""
    iris.launched_early(PDL)
    for q in range(1, world_size):
        src = (cur_rank + q) % world_size
        lo, hi = slice_rows(src, M, world_size, BLOCK_M, False)
        for j in range(tl.cdiv(tl.cdiv(hi - lo, BLOCK_M), CHUNK_BLOCKS)):
            iris.wait(flags + src * MAX_CHUNKS + j, 1, cur_rank, heap_bases)
            tl.store(flags + src * MAX_CHUNKS + j, 0)


@triton.jit
def inbox_add_kernel(
    OUT, I,                                         # this rank's slice (ROWS x N), the inbox (world x ROWS x N)
    ROWS, N, stride_om,                             # slice size, OUT's row stride
    arrived, consumed,                              # per-peer arrival flags, programs done
    cur_rank, world_size, heap_bases,               # this rank, the ranks, the symmetric heap
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,   # tile
):
    """OUT (this rank's slice, ROWS x N, holding its own partial) += every peer's partial in the inbox I (world x
    ROWS x N, contiguous), once each peer's copy has raised arrived[peer]. The last program lowers the flags."""
    for q in range(1, world_size):
        iris.wait(arrived + (cur_rank + q) % world_size, 1, cur_rank, heap_bases)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    for t in range(tl.program_id(0), tl.cdiv(ROWS, BLOCK_M) * num_pid_n, tl.num_programs(0)):
        rows = (t // num_pid_n) * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = (t % num_pid_n) * BLOCK_N + tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < ROWS) & (cols[None, :] < N)
        ptrs = OUT + rows[:, None] * stride_om + cols[None, :]
        acc = tl.load(ptrs, mask=mask).to(tl.float32)
        for q in range(1, world_size):
            src = (cur_rank + q) % world_size
            acc += tl.load(I + src * ROWS * N + rows[:, None] * N + cols[None, :], mask=mask).to(tl.float32)
        tl.store(ptrs, acc.to(OUT.dtype.element_ty), mask=mask)
    if tl.atomic_add(consumed, 1, sem="acq_rel", scope="gpu") == tl.num_programs(0) - 1:
        for q in range(world_size):  # every program has seen every flag: lower them for the next call
            tl.store(arrived + q, 0)
        tl.store(consumed, 0)


def _slice_rows(s, m, world, bm, even):
    if even:
        return s * (m // world), (s + 1) * (m // world)
    blocks = triton.cdiv(m, bm)
    return (s * blocks // world) * bm, min(((s + 1) * blocks // world) * bm, m)


def _kernel_args(p, out, partials, inbox, flags, chunk_blocks, max_chunks, slice_rows, **constexprs):
    """`kernel`'s arguments and launch options for this call; flags: (ready, inflags, consumed, final)."""
    args = (p.a, *p.operands(b=p.b), out, partials, inbox, p.m, p.n, p.k, p.a.stride(0), p.a.stride(1),
            p.b.stride(0), p.b.stride(1), out.stride(0), *flags, chunk_blocks, max_chunks, slice_rows, *p.rank_args())
    meta = dict(BLOCK_M=p.cfg.block_m, BLOCK_N=p.cfg.block_n, BLOCK_K=p.cfg.block_k, GROUP_M=p.cfg.group_m,
                TMA=p.tma, num_warps=p.cfg.num_warps, num_stages=p.cfg.num_stages, **constexprs, **p.scale_args())
    return args, meta


def run(p, out, even, gather):
    """One call: `out` is all of C (gather: the all-reduce) or this rank's slice (the reduce-scatter)."""
    bm, world, rank, m, n = p.cfg.block_m, p.world, p.rank, p.m, p.n
    rows = [_slice_rows(s, m, world, bm, even) for s in range(world)]
    slice_rows_max = max(triton.cdiv(hi - lo, bm) for lo, hi in rows) * bm
    col_blocks = triton.cdiv(n, p.cfg.block_n)
    programs = min(p.cfg.gemm_sms, sum(triton.cdiv(hi - lo, bm) for lo, hi in rows) * col_blocks)
    per = chunk_blocks(slice_rows_max // bm, col_blocks, programs, bm, n * out.element_size())
    nc = triton.cdiv(slice_rows_max // bm, per)  # chunks of the largest slice
    ws = {name: p.buffer(name, shape, dtype) for name, shape, dtype in (
        ("partials", (m, n), out.dtype), ("inbox", (world, slice_rows_max, n), out.dtype),
        (f"ready_x{nc}", (world * nc,), torch.int32), (f"inflags_x{nc}", (world * nc,), torch.int32),
        (f"consumed_x{nc}", (nc,), torch.int32), (f"final_x{nc}", (nc,), torch.int32),
        (f"gathered_x{nc}", (world * nc,), torch.int32))}
    ready, inflags, final, gathered = (ws[f"{name}_x{nc}"] for name in ("ready", "inflags", "final", "gathered"))

    def chunks(s):
        lo, hi = rows[s]
        for j, r0 in enumerate(range(lo, hi, per * bm)):
            r1 = min(r0 + per * bm, hi)
            yield j, lo, r0, r1, triton.cdiv(r1 - r0, bm) * col_blocks

    if not gather:  # every peer has read its inbox of the previous call (the module's note)
        p.ctx.device_barrier()
    ce = p.ctx.copy_engine()  # forks here: the side stream's work depends on nothing launched below

    def enqueue():
        for i in range(1, world):  # the peers' slices, in the GEMM's order: partials to their owner's inbox
            s = (rank + i) % world
            for j, lo, r0, r1, tiles in chunks(s):
                count = ready[s * nc + j:][:1]
                ce.wait(count, tiles)
                ce.write(count, 0)
                ce.put(ws["inbox"][rank, r0 - lo:r1 - lo], ws["partials"][r0:r1], s,
                       flag=inflags[rank * nc + j:][:1])
        if gather:  # its own slice, reduced: into every peer's C
            for j, _lo, r0, r1, tiles in chunks(rank):
                ce.wait(final[j:j + 1], tiles)
                ce.write(final[j:j + 1], 0)
                for i in range(1, world):
                    ce.put(out[r0:r1], out[r0:r1], (rank + i) % world, flag=gathered[rank * nc + j:][:1])

    args, meta = _kernel_args(p, out, ws["partials"], ws["inbox"], (ready, inflags, ws[f"consumed_x{nc}"], final),
                              per, nc, slice_rows_max, EVEN=even, GATHER=gather, **iris.pdl_launch())
    # everything enqueue() reads: the same key, the same operations (CopyEngine.plan)
    key = ("copy_reduce", gather, even, m, n, bm, p.cfg.block_n, per, tensor_key(out),
           *(t.data_ptr() for t in ws.values()))
    cuda = p.ctx.backend == "cuda"
    with ce:
        if not cuda:  # the worker must hold its operations before the interpreter runs the kernels to completion
            ce.plan(key, enqueue)
        for phase in ((0,) if cuda else (1, 2)):
            kernel[(programs,)](*args, PHASE=phase, **meta)
        if cuda:  # GPUs: the stream waits go in after the GEMM they wait for, and before gathered_kernel (module note)
            ce.plan(key, enqueue)
        if gather:
            gathered_kernel[(1,)](gathered, nc, per, m, *p.rank_args(), BLOCK_M=bm, num_warps=1, **iris.pdl_launch())


def run_phased(p):
    """The reduce-scatter with stream order in place of flags between this GPU's own streams, so a CUDA graph may
    hold it (gemm_reduce_scatter/copy_engine_phased). After a barrier (peers have read their inboxes of the last
    call), one launch computes the peers' slices; the side stream, forked after it, puts each into its owner's inbox
    and raises the owner's `arrived` flag, while a second launch computes this rank's own slice, as its partial,
    straight into C. After the join a small kernel adds the inbox into C, waiting on the peers' flags: raised by
    their copies, which depend only on their first launch, so the wait ends whatever order a graph runs the
    branches in (nothing on this GPU waits on a flag of this GPU)."""
    bm, world, rank, m, n, out = p.cfg.block_m, p.world, p.rank, p.m, p.n, p.c
    rows = m // world
    col_blocks = triton.cdiv(n, p.cfg.block_n)
    tiles = triton.cdiv(rows, bm) * col_blocks  # of one slice
    partials = p.buffer("partials", (m, n), out.dtype)
    inbox = p.buffer("inbox", (world, rows, n), out.dtype)
    arrived, consumed = p.buffer("arrived", (world,), torch.int32), p.buffer("inbox_read", (1,), torch.int32)
    # no flags in the kernel: any int32 heap words serve as its flag arguments
    args, meta = _kernel_args(p, out, partials, inbox, (arrived, arrived, consumed, arrived), 1, 1, rows, EVEN=True,
                              GATHER=False, FLAGS=False)
    p.ctx.device_barrier()
    kernel[(min(p.cfg.gemm_sms, (world - 1) * tiles),)](*args, PHASE=1, **meta, **iris.pdl_launch())
    with p.ctx.copy_engine() as ce:  # forks here: the copies follow the peers' slices by stream order
        for i in range(1, world):
            s = (rank + i) % world
            ce.put(inbox[rank], partials[s * rows:(s + 1) * rows], s, flag=arrived[rank:rank + 1])
        kernel[(min(p.cfg.gemm_sms, tiles),)](*args, PHASE=2, **meta, **iris.pdl_launch())
    # leaving the block, this stream waits for its copies; no PDL: the launch must not overtake that wait
    inbox_add_kernel[(min(p.cfg.gemm_sms, tiles),)](out, inbox, rows, n, out.stride(0), arrived, consumed,
                                                    *p.rank_args(), BLOCK_M=bm, BLOCK_N=p.cfg.block_n,
                                                    num_warps=p.cfg.num_warps)

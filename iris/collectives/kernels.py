"""The device side of iris.collectives: one @triton.jit kernel per host collective (and variant), and the entry and
exit helpers they share.

Barrier kernels (all_reduce one_shot, two_shot and atomic; all_gather "direct"; reduce_scatter "pull"; all_to_all;
broadcast) follow one protocol: `_enter`, move blocks b = pid, pid + programs, ... (two_shot: this rank's own blocks
only), `_exit`. Each program p has its own call count in EPOCHS; FLAGS holds 2 x programs x world int32 slots (entry
flags, then exit flags), set only ever to a larger count, so nothing is re-zeroed and a flag of an earlier call never
satisfies a later wait. Staged variants (the output is also an input peers read, or not on the heap) write into S
and copy S into Y after the exit barrier, before the program's count advances.

Push kernels (all_reduce push, ring and push_two_shot; all_gather and reduce_scatter "push") move one tile of BLOCK
elements per program through iris.tile's double-buffered inboxes (WS, FLAGS, EPOCHS of an iris.tile.Workspace):
no entry or exit barrier, and no input or output needs to be on the heap.

Parameters, by role: data (X the input, Y the output, S the staging buffer; n elements), the workspace, the ranks
(cur_rank, world_size, heap_bases), then compile-time choices. Every kernel starts with iris.launched_early(PDL).
"""

import triton
import triton.language as tl

from .. import device as iris
from .. import tile


# ---------------------------------------------------------------------------------------------- shared helpers
@triton.jit
def _span(b, n, BLOCK: tl.constexpr):
    """Offsets and mask of block b of an n-element tensor."""
    offs = b * BLOCK + tl.arange(0, BLOCK)
    return offs, offs < n


@triton.jit
def _reduce_all(X, offs, m, cur_rank, world_size, heap_bases, OP: tl.constexpr, ACC: tl.constexpr):
    """The block at X + offs combined over every rank (own copy first), in ACC precision: world - 1 peer loads."""
    acc = tl.load(X + offs, mask=m).to(ACC)
    for i in range(1, world_size):
        acc = tile._combine(acc, iris.load(X + offs, cur_rank, (cur_rank + i) % world_size, heap_bases, mask=m).to(ACC),
                            OP)
    return acc


@triton.jit
def _all_arrive(flags, e, cur_rank, world_size, heap_bases):
    """Set my slot of `flags` to e on every rank, then wait until every rank's slot here is >= e."""
    for i in range(world_size):
        iris.signal(flags + cur_rank, e, cur_rank, (cur_rank + i) % world_size, heap_bases)
    for src in range(world_size):
        iris.wait(flags + src, e, cur_rank, heap_bases, cmp="ge")


@triton.jit
def _enter(FLAGS, EPOCHS, cur_rank, world_size, heap_bases, PDL: tl.constexpr):
    """Entry barrier of program pid: returns this call's epoch e (its count + 1) once program pid of every rank has
    entered the call (every rank's inputs are ready)."""
    iris.launched_early(PDL)
    pid = tl.program_id(0)
    e = tl.load(EPOCHS + pid) + 1
    _all_arrive(FLAGS + pid * world_size, e, cur_rank, world_size, heap_bases)
    return e


@triton.jit
def _exit_barrier(FLAGS, e, cur_rank, world_size, heap_bases):
    """Exit barrier of program pid: program pid of every rank has done its reads and writes of this call."""
    pid, programs = tl.program_id(0), tl.num_programs(0)
    _all_arrive(FLAGS + (programs + pid) * world_size, e, cur_rank, world_size, heap_bases)


@triton.jit
def _close(EPOCHS, e):
    """Advance program pid's call count: last, after any copy out of the staging buffer."""
    tl.store(EPOCHS + tl.program_id(0), e)


@triton.jit
def _exit(FLAGS, EPOCHS, e, cur_rank, world_size, heap_bases):
    """Exit barrier, then the count advances (the kernels that stage nothing)."""
    _exit_barrier(FLAGS, e, cur_rank, world_size, heap_bases)
    _close(EPOCHS, e)


@triton.jit
def _copy_block(Y, S, b, n, BLOCK: tl.constexpr, ZERO: tl.constexpr):
    """Block b of the staging buffer S into Y (ZERO: then S's block back to 0, ready for the next call's adds)."""
    offs, m = _span(b, n, BLOCK)
    tl.store(Y + offs, tl.load(S + offs, mask=m), mask=m)
    if ZERO:
        tl.store(S + offs, tl.zeros((BLOCK,), S.dtype.element_ty), mask=m)


# ---------------------------------------------------------------------------------------------- barrier kernels
@triton.jit
def one_shot_kernel(X, Y, S, n,  # data: X (heap) reduced into Y; into S first when staged (in place)
                    FLAGS, EPOCHS,  # workspace
                    cur_rank, world_size, heap_bases,
                    OP: tl.constexpr, STAGED: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
                    PDL: tl.constexpr = tl.constexpr(False)):
    """all_reduce "one_shot": every rank pulls every block from every rank and reduces it (w - 1 peer reads)."""
    e = _enter(FLAGS, EPOCHS, cur_rank, world_size, heap_bases, PDL)  # everyone's inputs are ready
    pid, programs = tl.program_id(0), tl.num_programs(0)
    for b in range(pid, tl.cdiv(n, BLOCK), programs):
        offs, m = _span(b, n, BLOCK)
        acc = _reduce_all(X, offs, m, cur_rank, world_size, heap_bases, OP, ACC)
        tl.store((S if STAGED else Y) + offs, acc.to(Y.dtype.element_ty), mask=m)
    _exit_barrier(FLAGS, e, cur_rank, world_size, heap_bases)  # no peer reads X any more
    if STAGED:
        for b in range(pid, tl.cdiv(n, BLOCK), programs):
            _copy_block(Y, S, b, n, BLOCK, False)
    _close(EPOCHS, e)


@triton.jit
def two_shot_kernel(X, Y, S, n,  # data: X (heap) reduced into Y (heap); S (heap) when staged
                    FLAGS, EPOCHS,  # workspace
                    cur_rank, world_size, heap_bases,
                    OP: tl.constexpr, STAGED: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
                    PDL: tl.constexpr = tl.constexpr(False)):
    """all_reduce "two_shot": rank r reduces blocks b with b % world == r and stores the result on every rank (each
    program walks owned blocks only, so all programs of every rank work)."""
    e = _enter(FLAGS, EPOCHS, cur_rank, world_size, heap_bases, PDL)
    pid, programs = tl.program_id(0), tl.num_programs(0)
    blocks = tl.cdiv(n, BLOCK)
    for j in range(pid, tl.cdiv(blocks - cur_rank, world_size), programs):
        offs, m = _span(cur_rank + j * world_size, n, BLOCK)
        acc = _reduce_all(X, offs, m, cur_rank, world_size, heap_bases, OP, ACC).to(Y.dtype.element_ty)
        for i in range(world_size):
            iris.store((S if STAGED else Y) + offs, acc, cur_rank, (cur_rank + i) % world_size, heap_bases, mask=m)
    _exit_barrier(FLAGS, e, cur_rank, world_size, heap_bases)
    if STAGED:  # the blocks that programs `pid` of all ranks wrote (their exit barrier covers those)
        for j in range(pid, tl.cdiv(blocks, world_size), programs):
            for r in range(world_size):
                _copy_block(Y, S, r + j * world_size, n, BLOCK, False)
    _close(EPOCHS, e)


@triton.jit
def atomic_kernel(X, Y, S, n,  # data: X added into S (heap, zero between calls), then copied into Y
                  FLAGS, EPOCHS,  # workspace
                  cur_rank, world_size, heap_bases,
                  BLOCK: tl.constexpr,
                  PDL: tl.constexpr = tl.constexpr(False)):
    """all_reduce "atomic" (sum): every rank atomically adds its blocks into every rank's S."""
    e = _enter(FLAGS, EPOCHS, cur_rank, world_size, heap_bases, PDL)
    pid, programs = tl.program_id(0), tl.num_programs(0)
    for b in range(pid, tl.cdiv(n, BLOCK), programs):
        offs, m = _span(b, n, BLOCK)
        v = tl.load(X + offs, mask=m)
        for i in range(world_size):
            iris.atomic_add(S + offs, v, cur_rank, (cur_rank + i) % world_size, heap_bases, mask=m, sem="relaxed",
                            scope="sys")
    _exit_barrier(FLAGS, e, cur_rank, world_size, heap_bases)  # every rank's adds have landed
    for b in range(pid, tl.cdiv(n, BLOCK), programs):
        _copy_block(Y, S, b, n, BLOCK, True)
    _close(EPOCHS, e)


@triton.jit
def all_gather_kernel(X, Y, n,  # data: X (n elements) stored at slice `cur_rank` of every rank's Y (heap)
                      FLAGS, EPOCHS,  # workspace
                      cur_rank, world_size, heap_bases,
                      BLOCK: tl.constexpr,
                      PDL: tl.constexpr = tl.constexpr(False)):
    """all_gather "direct": every rank stores its slice into every rank's output."""
    e = _enter(FLAGS, EPOCHS, cur_rank, world_size, heap_bases, PDL)  # no rank still reads its previous output
    pid, programs = tl.program_id(0), tl.num_programs(0)
    for b in range(pid, tl.cdiv(n, BLOCK), programs):
        offs, m = _span(b, n, BLOCK)
        v = tl.load(X + offs, mask=m)
        for i in range(world_size):
            iris.store(Y + cur_rank * n + offs, v, cur_rank, (cur_rank + i) % world_size, heap_bases, mask=m)
    _exit(FLAGS, EPOCHS, e, cur_rank, world_size, heap_bases)  # every slice has landed


@triton.jit
def reduce_scatter_kernel(X, Y, n,  # data: slice `cur_rank` (n elements) of every rank's X (heap) reduced into Y
                          FLAGS, EPOCHS,  # workspace
                          cur_rank, world_size, heap_bases,
                          OP: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
                          PDL: tl.constexpr = tl.constexpr(False)):
    """reduce_scatter "pull": every rank reads its slice from every rank's input."""
    e = _enter(FLAGS, EPOCHS, cur_rank, world_size, heap_bases, PDL)
    pid, programs = tl.program_id(0), tl.num_programs(0)
    for b in range(pid, tl.cdiv(n, BLOCK), programs):
        offs, m = _span(b, n, BLOCK)
        acc = _reduce_all(X + cur_rank * n, offs, m, cur_rank, world_size, heap_bases, OP, ACC)
        tl.store(Y + offs, acc.to(Y.dtype.element_ty), mask=m)
    _exit(FLAGS, EPOCHS, e, cur_rank, world_size, heap_bases)  # no peer reads X any more


@triton.jit
def all_to_all_kernel(X, Y, n,  # data: slice c (n elements) of X to slice `cur_rank` of rank c's Y (heap)
                      FLAGS, EPOCHS,  # workspace
                      cur_rank, world_size, heap_bases,
                      BLOCK: tl.constexpr,
                      PDL: tl.constexpr = tl.constexpr(False)):
    """all_to_all: every rank stores slice c of its input into rank c's output."""
    e = _enter(FLAGS, EPOCHS, cur_rank, world_size, heap_bases, PDL)
    pid, programs = tl.program_id(0), tl.num_programs(0)
    for b in range(pid, tl.cdiv(n, BLOCK), programs):
        offs, m = _span(b, n, BLOCK)
        for i in range(world_size):
            dst = (cur_rank + i) % world_size
            iris.store(Y + cur_rank * n + offs, tl.load(X + dst * n + offs, mask=m), cur_rank, dst, heap_bases, mask=m)
    _exit(FLAGS, EPOCHS, e, cur_rank, world_size, heap_bases)


@triton.jit
def broadcast_kernel(X, Y, n, root,  # data: rank root's X (heap) into every rank's Y
                     FLAGS, EPOCHS,  # workspace
                     cur_rank, world_size, heap_bases,
                     STAGED: tl.constexpr, BLOCK: tl.constexpr,  # STAGED: Y is not X (the root copies too)
                     PDL: tl.constexpr = tl.constexpr(False)):
    """broadcast: every rank but the root reads the root's blocks."""
    e = _enter(FLAGS, EPOCHS, cur_rank, world_size, heap_bases, PDL)  # the root's input is ready
    pid, programs = tl.program_id(0), tl.num_programs(0)
    for b in range(pid, tl.cdiv(n, BLOCK), programs):
        offs, m = _span(b, n, BLOCK)
        if cur_rank != root:
            tl.store(Y + offs, iris.load(X + offs, cur_rank, root, heap_bases, mask=m), mask=m)
        elif STAGED:
            tl.store(Y + offs, tl.load(X + offs, mask=m), mask=m)
    _exit(FLAGS, EPOCHS, e, cur_rank, world_size, heap_bases)  # the root may overwrite its input


# ---------------------------------------------------------------------------------------------- push kernels
@triton.jit
def _push_enter(WS, FLAGS, EPOCHS, world_size, BLOCK: tl.constexpr, PDL: tl.constexpr):
    """This program's tile: (its inbox base, its flag base, its first epoch); no barrier."""
    iris.launched_early(PDL)
    return tile.begin(WS, FLAGS, EPOCHS, tl.program_id(0), world_size, BLOCK)


@triton.jit
def push_all_reduce_kernel(X, Y, n,  # data: X (n elements) reduced into Y, anywhere
                           WS, FLAGS, EPOCHS,  # an iris.tile.Workspace of one tile per program
                           cur_rank, world_size, heap_bases,
                           OP: tl.constexpr, VARIANT: tl.constexpr, BLOCK: tl.constexpr,  # VARIANT: iris.tile's
                           PDL: tl.constexpr = tl.constexpr(False)):
    """all_reduce "push" (VARIANT="one_shot": every rank pushes its tile into every rank's inbox) and "ring"."""
    ws, flags, e = _push_enter(WS, FLAGS, EPOCHS, world_size, BLOCK, PDL)
    offs, m = _span(tl.program_id(0), n, BLOCK)
    x = tl.load(X + offs, mask=m, other=0)
    tl.store(Y + offs, tile.all_reduce(x, ws, flags, e, cur_rank, world_size, heap_bases, OP, VARIANT), mask=m)
    tile.end(EPOCHS, tl.program_id(0), e)


@triton.jit
def push_all_reduce_rmsnorm_kernel(X, RES, W, Y, rows, hidden, eps,  # data: rows x hidden; RES updated in place
                                   WS, FLAGS, EPOCHS,  # an iris.tile.Workspace of one tile per program
                                   cur_rank, world_size, heap_bases,
                                   BLOCK: tl.constexpr,  # hidden, rounded up to a power of two
                                   PDL: tl.constexpr = tl.constexpr(False)):
    """all_reduce_rmsnorm "push": row r of X summed over ranks through iris.tile's one-shot inboxes (one epoch per
    row, rows r = pid, pid + programs, ...), then h = sum + RES[r] in float32, RES[r] = h, and Y[r] = h / rms(h) * W.
    The sum is rounded to X's dtype before the residual is added, as all_reduce followed by a fused add + RMSNorm
    would."""
    ws, flags, e = _push_enter(WS, FLAGS, EPOCHS, world_size, BLOCK, PDL)
    cols = tl.arange(0, BLOCK)
    m = cols < hidden
    w = tl.load(W + cols, mask=m, other=0).to(tl.float32)
    for r in range(tl.program_id(0), rows, tl.num_programs(0)):
        row = r * hidden + cols
        s = tile.all_reduce(tl.load(X + row, mask=m, other=0), ws, flags, e, cur_rank, world_size, heap_bases)
        h = s.to(tl.float32) + tl.load(RES + row, mask=m, other=0).to(tl.float32)
        tl.store(RES + row, h.to(RES.dtype.element_ty), mask=m)
        inv = 1.0 / tl.sqrt(tl.sum(h * h, axis=0) / hidden + eps)
        tl.store(Y + row, (h * inv * w).to(Y.dtype.element_ty), mask=m)
        e += 1
    tile.end(EPOCHS, tl.program_id(0), e - 1)


@triton.jit
def push_two_shot_kernel(X, Y, n, TOTAL,  # data: X (TOTAL elements, world slices of n, the last short) into Y
                         WS, FLAGS, EPOCHS,  # an iris.tile.Workspace of one tile per program
                         cur_rank, world_size, heap_bases,
                         OP: tl.constexpr, BLOCK: tl.constexpr,
                         PDL: tl.constexpr = tl.constexpr(False)):
    """all_reduce "push_two_shot": a reduce-scatter into rank r's inbox of slice r, then an all-gather of the reduced
    slices (two epochs per call)."""
    ws, flags, e = _push_enter(WS, FLAGS, EPOCHS, world_size, BLOCK, PDL)
    first = tl.program_id(0) * BLOCK
    acc = tile.reduce_scatter_strided(X, first, n, TOTAL, ws, flags, e, cur_rank, world_size, heap_bases, OP, BLOCK)
    e += 1
    tile.all_gather_strided(acc, Y, first, n, TOTAL, ws, flags, e, cur_rank, world_size, heap_bases)
    tile.end(EPOCHS, tl.program_id(0), e)


@triton.jit
def push_all_gather_kernel(X, Y, n,  # data: X (n elements) to slice `cur_rank` of every rank's Y (world * n), anywhere
                           WS, FLAGS, EPOCHS,  # an iris.tile.Workspace of one tile per program
                           cur_rank, world_size, heap_bases,
                           BLOCK: tl.constexpr,
                           PDL: tl.constexpr = tl.constexpr(False)):
    """all_gather "push": every rank pushes its tile into every rank's inbox."""
    ws, flags, e = _push_enter(WS, FLAGS, EPOCHS, world_size, BLOCK, PDL)
    offs, m = _span(tl.program_id(0), n, BLOCK)
    x = tl.load(X + offs, mask=m, other=0)
    tile.all_gather_strided(x, Y, tl.program_id(0) * BLOCK, n, world_size * n, ws, flags, e, cur_rank, world_size,
                            heap_bases)
    tile.end(EPOCHS, tl.program_id(0), e)


@triton.jit
def push_reduce_scatter_kernel(X, Y, n,  # data: slice `cur_rank` (n elements) of every rank's X reduced into Y
                               WS, FLAGS, EPOCHS,  # an iris.tile.Workspace of one tile per program
                               cur_rank, world_size, heap_bases,
                               OP: tl.constexpr, BLOCK: tl.constexpr,
                               PDL: tl.constexpr = tl.constexpr(False)):
    """reduce_scatter "push": every rank sends slice r of its input to rank r's inbox."""
    ws, flags, e = _push_enter(WS, FLAGS, EPOCHS, world_size, BLOCK, PDL)
    offs, m = _span(tl.program_id(0), n, BLOCK)
    acc = tile.reduce_scatter_strided(X, tl.program_id(0) * BLOCK, n, world_size * n, ws, flags, e, cur_rank,
                                      world_size, heap_bases, OP, BLOCK)
    tl.store(Y + offs, acc, mask=m)
    tile.end(EPOCHS, tl.program_id(0), e)

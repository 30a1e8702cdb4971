"""Device pieces shared by the iris variants of moe_ffn (fused_ops/moe/__init__.py has the layout and protocol).

Heap workspace of one shape (every rank allocates the same): XBUF (E_local*cap x H) and META (E_local*cap, the source of
each row: src_rank * T*k + t*k + j) receive the token rows pushed by every rank; COUNTS (E_local) are the per-expert
reservation counters; BLOCKREADY (E_local * ceil(cap/BLOCK_M)) count the rows landed per row block (fused); RET (T*k x
H) and RETREADY (T*k) receive the expert outputs of this rank's assignments; FLAGS hold [ENTRIES + r] (calls rank r
has entered), [ANNOUNCE], [DISPATCHED], [COMBINED] (each raised by every rank once per call). Every counter is either
monotone (a wait for >= world * epoch, or >= epoch, never sees an older call's value) or reset by its owner at the
end of the call (COUNTS, BLOCKREADY), before the owner announces its entry into the next call, which every writer
waits for."""

import triton
import triton.language as tl

import iris

from ..gemm import c_tile, gemm_tile

ANNOUNCE = tl.constexpr(0)
DISPATCHED = tl.constexpr(1)
COMBINED = tl.constexpr(2)


def flag_words(world):
    return world + 3


@triton.jit
def at_rank(ptr, ranks, cur_rank, heap_bases):
    """ptr (an address in this rank's heap, any shape) translated to each element's rank in `ranks` (broadcast)."""
    elem: tl.constexpr = ptr.dtype.element_ty.primitive_bitwidth // 8
    delta = tl.load(heap_bases + ranks) - tl.load(heap_bases + cur_rank)
    return ptr + delta // elem


@triton.jit
def _all_ranks_add(flag, cur_rank, world_size, heap_bases):
    """flag += 1 on every rank (release: what this program did before is visible first)."""
    for i in range(world_size):
        iris.signal(flag, 1, cur_rank, (cur_rank + i) % world_size, heap_bases, op="add")


@triton.jit
def _act(x, ACT: tl.constexpr):
    if ACT == "silu":
        x = x * tl.sigmoid(x)
    elif ACT == "relu":
        x = tl.maximum(x, 0.0)
    return x


@triton.jit
def _schedule(COUNTS, cap, E_local, BLOCK_M: tl.constexpr, EL_P2: tl.constexpr, nn):
    """Device-side tile schedule of a grouped GEMM with ragged M: per expert min(count, cap) rows, cdiv(rows, BLOCK_M)
    row blocks of nn tiles each. Returns (rows, tiles per expert, inclusive prefix of tiles, total tiles)."""
    ex = tl.arange(0, EL_P2)
    rows = tl.minimum(tl.load(COUNTS + ex, mask=ex < E_local, other=0), cap)
    tiles = tl.cdiv(rows, BLOCK_M) * nn
    cum = tl.cumsum(tiles, 0)
    return rows, tiles, cum, tl.sum(tiles)


@triton.jit
def _locate(tile, rows, tiles, cum, nn, EL_P2: tl.constexpr):
    """(expert, its rows, row block, column block) of schedule tile `tile`."""
    ex = tl.arange(0, EL_P2)
    el = tl.sum((cum <= tile).to(tl.int32))
    start = tl.sum(tl.where(ex == el, cum - tiles, 0))
    m = tl.sum(tl.where(ex == el, rows, 0))
    local = tile - start
    return el, m, local // nn, local % nn


@triton.jit
def reserve_kernel(
    HIST, BASES,                        # this rank's rows per expert; out: its first slot in each owner's buffer
    COUNTS, FLAGS, EPOCH,               # owners' reservation counters, flag words, the call's epoch
    E_local, E,                         # experts per rank, in all
    cur_rank, world_size, heap_bases,   # this rank, the ranks, the symmetric heap
    E_P2: tl.constexpr,                 # E rounded up to 2^n
):
    """One program. Entry handshake (no rank writes into a peer before the peer has entered this call, i.e. finished
    the previous one), then one atomic per expert reserves this rank's rows in the owner's buffer (BASES[e]: the
    first slot), then ANNOUNCE += 1 on every rank: the owners' counts are final once all ranks announced."""
    e = tl.load(EPOCH)
    for i in range(1, world_size):
        iris.signal(FLAGS + cur_rank, 1, cur_rank, (cur_rank + i) % world_size, heap_bases, op="add")
    for i in range(1, world_size):
        iris.wait(FLAGS + (cur_rank + i) % world_size, e, cur_rank, heap_bases, cmp="ge")
    ex = tl.arange(0, E_P2)
    m = ex < E
    h = tl.load(HIST + ex, mask=m, other=0)
    owner = tl.where(m, ex // E_local, cur_rank)
    base = tl.atomic_add(at_rank(COUNTS + ex % E_local, owner, cur_rank, heap_bases), h, mask=m,
                         sem="acq_rel", scope="sys")
    tl.store(BASES + ex, base, mask=m)
    _all_ranks_add(FLAGS + world_size + ANNOUNCE, cur_rank, world_size, heap_bases)


@triton.jit
def push_kernel(
    X, IDX, POS, BASES,                 # token rows, expert per assignment, its position, first slots
    XBUF, META,                         # owners' expert buffers: rows, their sources (heap)
    BLOCKREADY, SLOT_OF, STATUS, DONE, FLAGS, RETREADY,  # counters, slots, status (module doc)
    n_assign, k, H,                     # assignments (T*k), experts per token, hidden size
    cap, E_local, E,                    # rows per expert buffer; experts per rank, in all
    nblk, per_row,                      # row blocks per expert, column tiles per returned row
    cur_rank, world_size, heap_bases,   # this rank, the ranks, the symmetric heap
    BLOCK_A: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_M: tl.constexpr,  # assignments, columns, rows per block
    FUSED: tl.constexpr,                # raise BLOCKREADY / RETREADY (the fused variant)
):
    """Dispatch: assignment a = t*k + j (expert IDX[a], E = invalid) goes to slot BASES[e] + POS[a] of its owner's
    expert buffer: the token row into XBUF, its source into META. Slots past the capacity are dropped: SLOT_OF[a] = -1
    (the combine writes NaN for the token) and STATUS[0] records the capacity needed. FUSED: each landed row raises
    its row block's BLOCKREADY count on the owner, and a dropped assignment's RETREADY count here is raised by the
    per_row tiles that will never come (every assignment's count grows by per_row per call, so a wait for
    per_row * epoch never goes stale). The last program to finish raises DISPATCHED on every rank."""
    for blk in range(tl.program_id(0), tl.cdiv(n_assign, BLOCK_A), tl.num_programs(0)):
        a = blk * BLOCK_A + tl.arange(0, BLOCK_A)
        am = a < n_assign
        ex = tl.load(IDX + a, mask=am, other=E)
        valid = am & (ex < E)
        slot = tl.load(BASES + ex, mask=valid, other=0) + tl.load(POS + a, mask=valid, other=0)
        ok = valid & (slot < cap)
        owner = tl.where(valid, ex // E_local, cur_rank)
        row = ((ex % E_local) * cap + slot).to(tl.int64)
        t = (a // k).to(tl.int64)
        for h0 in range(0, H, BLOCK_H):
            cols = h0 + tl.arange(0, BLOCK_H)
            m = ok[:, None] & (cols < H)[None, :]
            v = tl.load(X + t[:, None] * H + cols[None, :], mask=m)
            tl.store(at_rank(XBUF + row[:, None] * H + cols[None, :], owner[:, None], cur_rank, heap_bases), v, mask=m)
        tl.store(at_rank(META + row, owner, cur_rank, heap_bases), cur_rank * n_assign + a, mask=ok)
        tl.store(SLOT_OF + a, tl.where(ok, slot, -1), mask=am)
        over = valid & (slot >= cap)
        if tl.sum(over.to(tl.int32)) > 0:
            tl.atomic_max(STATUS, tl.max(tl.where(over, slot + 1, 0)))
        if FUSED:
            dropped = am & ((ex >= E) | (slot >= cap))
            tl.atomic_add(RETREADY + a, per_row, mask=dropped, sem="relaxed", scope="gpu")
            tl.debug_barrier()  # every thread's row stores before the releases
            tl.atomic_add(at_rank(BLOCKREADY + (ex % E_local) * nblk + slot // BLOCK_M, owner, cur_rank, heap_bases),
                          1, mask=ok, sem="release", scope="sys")
    tl.debug_barrier()
    ticket = tl.atomic_add(DONE, 1, sem="acq_rel", scope="gpu")
    if ticket == tl.num_programs(0) - 1:
        tl.store(DONE, 0)
        _all_ranks_add(FLAGS + world_size + DISPATCHED, cur_rank, world_size, heap_bases)


@triton.jit
def grouped_gemm_kernel(
    A, B, C,                                 # A E_local x cap x K, B E_local x K x N, C E_local x cap x N (or RET)
    COUNTS, FLAGS, EPOCH,                    # rows per expert, flag words, the call's epoch
    cap, N, K, E_local,                      # problem size
    BLOCKREADY, nblk,                        # rows landed per row block, row blocks per expert
    META, RETREADY, n_assign,                # MODE "push": each row's source, return counts
    cur_rank, world_size, heap_bases,        # this rank, the ranks, the symmetric heap
    MODE: tl.constexpr, ACT: tl.constexpr,   # waits and epilogue (docstring), activation
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # tiles
    EL_P2: tl.constexpr,                     # E_local rounded up to 2^n
):
    """The catalog's grouped GEMM with ragged M: C[e][:rows_e] = act(A[e][:rows_e] @ B[e]) for every local expert e,
    A: E_local x cap x K, B: E_local x K x N, rows_e = min(COUNTS[e], cap); tiles scheduled on the device over all
    experts (the shared tile loop: fused_ops.gemm.gemm_tile). MODE:
      "dispatched": first wait until every rank has dispatched (bulk_sync's barrier);
      "plain": no wait (the rows are complete: an earlier launch on this stream made them);
      "arrivals": wait until every rank has announced (the counts are final), then per tile only until its row
                  block's rows have landed (BLOCKREADY), so tiles start as their rows arrive (fused);
      "push": the epilogue stores each row straight into its source rank's RET row (C is RET, META says where) and
              adds 1 to that row's RETREADY there: a row is complete at cdiv(N, BLOCK_N) per call (fused)."""
    e = tl.load(EPOCH)
    if MODE == "dispatched":
        iris.wait(FLAGS + world_size + DISPATCHED, world_size * e, cur_rank, heap_bases, cmp="ge")
    if MODE == "arrivals":
        iris.wait(FLAGS + world_size + ANNOUNCE, world_size * e, cur_rank, heap_bases, cmp="ge")
    nn = tl.cdiv(N, BLOCK_N)
    rows, tiles, cum, total = _schedule(COUNTS, cap, E_local, BLOCK_M, EL_P2, nn)
    for tile in range(tl.program_id(0), total, tl.num_programs(0)):
        el, m, pid_m, pid_n = _locate(tile, rows, tiles, cum, nn, EL_P2)
        if MODE == "arrivals":
            iris.wait(BLOCKREADY + el * nblk + pid_m, tl.minimum(BLOCK_M, m - pid_m * BLOCK_M), cur_rank, heap_bases,
                      cmp="ge")
        el = el.to(tl.int64)
        acc = gemm_tile(A + el * cap * K, B + el * K * N, pid_m, pid_n, m, N, K, K, 1, N, 1, BLOCK_M, BLOCK_N,
                        BLOCK_K, 0)
        acc = _act(acc, ACT).to(C.dtype.element_ty)
        if MODE == "push":
            r = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
            rm = r < m
            ids = tl.load(META + el * cap + r, mask=rm, other=0)
            src = ids // n_assign
            pos = (ids % n_assign).to(tl.int64)
            cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
            mk = rm[:, None] & (cols < N)[None, :]
            tl.store(at_rank(C + pos[:, None] * N + cols[None, :], src[:, None], cur_rank, heap_bases), acc, mask=mk)
            tl.debug_barrier()  # every thread's stores of the tile before the releases
            tl.atomic_add(at_rank(RETREADY + pos, src, cur_rank, heap_bases), 1, mask=rm, sem="release", scope="sys")
        else:
            ptrs, mask = c_tile(C + el * cap * N, pid_m, pid_n, m, N, N, 1, 0, BLOCK_M, BLOCK_N)
            tl.store(ptrs, acc, mask=mask)


@triton.jit
def return_kernel(
    OBUF, META, RET,                                # expert outputs, their sources, the sources' return rows (heap)
    COUNTS, DONE, FLAGS,                            # rows per expert, programs done, flag words
    cap, H, n_assign, E_local,                      # problem size
    cur_rank, world_size, heap_bases,               # this rank, the ranks, the symmetric heap
    BLOCK_M: tl.constexpr, BLOCK_H: tl.constexpr,   # rows, columns per block
    EL_P2: tl.constexpr,                            # E_local rounded up to 2^n
):
    """bulk_sync combine, first half: every expert output row goes back to its source's RET row; the last program
    raises COMBINED on every rank."""
    rows, tiles, cum, total = _schedule(COUNTS, cap, E_local, BLOCK_M, EL_P2, 1)
    for tile in range(tl.program_id(0), total, tl.num_programs(0)):
        el, m, pid_m, _ = _locate(tile, rows, tiles, cum, 1, EL_P2)
        r = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rm = r < m
        slot = el.to(tl.int64) * cap + r
        ids = tl.load(META + slot, mask=rm, other=0)
        src = ids // n_assign
        pos = (ids % n_assign).to(tl.int64)
        for h0 in range(0, H, BLOCK_H):
            cols = h0 + tl.arange(0, BLOCK_H)
            mk = rm[:, None] & (cols < H)[None, :]
            v = tl.load(OBUF + slot[:, None] * H + cols[None, :], mask=mk)
            tl.store(at_rank(RET + pos[:, None] * H + cols[None, :], src[:, None], cur_rank, heap_bases), v, mask=mk)
    tl.debug_barrier()
    ticket = tl.atomic_add(DONE, 1, sem="acq_rel", scope="gpu")
    if ticket == tl.num_programs(0) - 1:
        tl.store(DONE, 0)
        _all_ranks_add(FLAGS + world_size + COMBINED, cur_rank, world_size, heap_bases)


@triton.jit
def _wait_rows(RETREADY, SLOT_OF, lo, hi, target, cur_rank, heap_bases, BLOCK: tl.constexpr, SPIN: tl.constexpr):
    """Until RETREADY[i] >= target for every i in [lo, hi) whose row was not dropped. SPIN > 0 (GPUs): first poll
    the whole range at once (one acquire read per element, all threads in parallel) up to SPIN rounds; whatever is
    still missing then goes through iris.wait one row at a time (bounded; a timeout is recorded and names the flag;
    under the interpreter its waits yield the core, so the CPU backend spins only a couple of rounds)."""
    offs = lo + tl.arange(0, BLOCK)
    live = (offs < hi) & (tl.load(SLOT_OF + offs, mask=offs < hi, other=-1) >= 0)
    missing = tl.sum(live.to(tl.int32))
    if SPIN > 0:
        rounds = 0
        while (missing > 0) & (rounds < SPIN):
            v = tl.atomic_add(RETREADY + offs, 0, mask=live, sem="acquire", scope="sys")
            missing = tl.sum((live & (v < target)).to(tl.int32))
            rounds += 1
    if missing > 0:
        for i in range(lo, hi):
            if tl.load(SLOT_OF + i) >= 0:
                iris.wait(RETREADY + i, target, cur_rank, heap_bases, cmp="ge")


@triton.jit
def combine_kernel(
    RET, RETREADY, SLOT_OF, WEIGHTS, Y,   # returned rows, their counts, slots, weights; output
    COUNTS, BLOCKREADY, FLAGS, EPOCH,     # counters reset here, flag words, the call's epoch
    T, k, H, E_local,                     # tokens, experts per token, hidden size, experts per rank
    n_ready, per_row,                     # BLOCKREADY words; column tiles per returned row
    cur_rank, world_size, heap_bases,     # this rank, the ranks, the symmetric heap
    FUSED: tl.constexpr,                  # wait per assignment (fused) or for COMBINED (bulk_sync)
    BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr, KP2: tl.constexpr,  # tokens, columns per block; k rounded up
    SPIN: tl.constexpr,                   # polling rounds before iris.wait (_wait_rows)
):
    """Y[t] = sum_j WEIGHTS[t, j] * RET[t*k + j] in fp32, in j order (the result does not depend on arrival order);
    NaN for a token with a dropped assignment. Waits: bulk_sync, until every rank has returned its rows (COMBINED);
    fused, for each of the token's assignments (RETREADY >= per_row * epoch: all its row's column tiles landed). Also
    resets this rank's COUNTS and BLOCKREADY for the next call (every writer of this call is done with them; the next
    call's writers wait for this rank's entry)."""
    pid, programs = tl.program_id(0), tl.num_programs(0)
    e = tl.load(EPOCH)
    if not FUSED:
        iris.wait(FLAGS + world_size + COMBINED, world_size * e, cur_rank, heap_bases, cmp="ge")
    for i in range(pid, E_local, programs):
        tl.store(COUNTS + i, 0)
    if FUSED:
        for i in range(pid * 256, n_ready, programs * 256):
            z = i + tl.arange(0, 256)
            tl.store(BLOCKREADY + z, tl.zeros((256,), tl.int32), mask=z < n_ready)
    for tb in range(pid, tl.cdiv(T, BLOCK_T), programs):
        t = tb * BLOCK_T + tl.arange(0, BLOCK_T)
        tm = t < T
        if FUSED:
            _wait_rows(RETREADY, SLOT_OF, tb * BLOCK_T * k, tl.minimum(tb * BLOCK_T + BLOCK_T, T) * k, per_row * e,
                       cur_rank, heap_bases, BLOCK_T * KP2, SPIN)
        for h0 in range(0, H, BLOCK_H):
            cols = h0 + tl.arange(0, BLOCK_H)
            mk = tm[:, None] & (cols < H)[None, :]
            acc = tl.zeros((BLOCK_T, BLOCK_H), tl.float32)
            dropped = tl.zeros((BLOCK_T,), tl.int32)
            for j in range(k):
                a = (t * k + j).to(tl.int64)
                s = tl.load(SLOT_OF + a, mask=tm, other=0)
                w = tl.load(WEIGHTS + a, mask=tm, other=0).to(tl.float32)
                v = tl.load(RET + a[:, None] * H + cols[None, :], mask=mk & (s >= 0)[:, None], other=0).to(tl.float32)
                acc += w[:, None] * v
                dropped |= (s < 0).to(tl.int32)
            acc = tl.where(dropped[:, None] != 0, float("nan"), acc)
            tl.store(Y + t[:, None] * H + cols[None, :], acc.to(Y.dtype.element_ty), mask=mk)

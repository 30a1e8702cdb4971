"""all_to_all_v: uneven all-to-all whose split sizes may be known only on the device (MoE token exchange).

    out, out_splits = iris.collectives.all_to_all_v(ctx, out, x, in_splits)          # variant="auto"
    out, out_splits = iris.collectives.all_to_all_v(ctx, out, x, in_splits, variant="nccl")

x: (rows, *row_shape); rank r sends rows [sum(in_splits[:d]), sum(in_splits[:d+1])) to rank d, like torch's
all_to_all_single with input_split_sizes. in_splits: `world` row counts, an int tensor on the device (computed by an
earlier kernel: no host synchronization) or a list of ints. out: (capacity, *row_shape) receives the rows from rank 0,
then rank 1, ... packed from row 0; out_splits (int64, `world`, on the device) says how many rows came from each rank.

How (variant "pull", the default): one kernel. Every rank copies its in_splits into a heap workspace (and x too when
x is not on the heap); after an entry handshake, rank r reads every rank's split array from its heap (world small
loads), computes where its rows start in each sender's x and where they go in `out`, and pulls them, from senders
r, r + 1, ... in turn. An exit handshake keeps a sender from overwriting x or its splits while a peer still reads
them. The handshakes are per-program flags set to the call's epoch (as iris.collectives): nothing is re-zeroed,
repeated calls and CUDA-graph replays never see stale flags. Collective: every rank calls with the same x shape,
capacity and dtype.

Capacity: `out` has a fixed number of rows (the caller chooses it: world x rows is the worst case, when every rank
sends everything to one rank). That fixed size is what makes the call capturable in a CUDA graph. Overflow (more rows
arriving than out holds) or bad splits (negative, or summing past x's rows) are never silent: the rows that fit are
copied in order, out_splits still reports the true counts, and the rank's status words record the demand. On the CPU
backend the call raises AllToAllVError at once; on GPUs (where reading the status would synchronize the host)
`check(ctx)` raises it, and sum(out_splits) > capacity tells the caller on the device.

Cost: total bytes moved = rows received x row bytes per rank, read over NVLink; 2 flag rounds.
"nccl": torch.distributed.all_to_all_single after exchanging the splits with another all_to_all_single (a host
synchronization: NCCL needs the split sizes on the host).
"""

import torch
import torch.distributed as dist
import triton
import triton.language as tl

from . import consistency
from . import device as iris
from .collectives.kernels import _enter, _exit
from .collectives.plan import CollConfig, _block, _cdiv, _check_tensor, _programs, _warps

VARIANTS = ("auto", "pull", "nccl")
STATUS_WORDS = 2  # [0] largest total demanded beyond capacity (0: none), [1] 1 if a sender's splits were invalid


class AllToAllVError(RuntimeError):
    """all_to_all_v received more rows than the output holds, or a rank's splits were invalid."""


@triton.jit
def _a2av_kernel(X, SPLITS, OUT, OUT_SPLITS, STATUS, rows_in, row_len, capacity, FLAGS, EPOCHS, cur_rank, world_size,
                 heap_bases, WORLD_P2: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_W: tl.constexpr,
                 PDL: tl.constexpr = tl.constexpr(False)):
    """Program p of every rank: entry handshake, pull row blocks p, p + programs, ... of every sender, exit handshake.
    SPLITS and X are heap addresses (read on peers). Rank r pulls from sender r, r + 1, ... in turn (rotated, as
    NCCL orders its peers), so that at each step every sender serves one receiver instead of all of them at once."""
    e = _enter(FLAGS, EPOCHS, cur_rank, world_size, heap_bases, PDL)  # every rank's x and splits staged
    pid, programs = tl.program_id(0), tl.num_programs(0)
    ranks = tl.arange(0, WORLD_P2)
    # what each sender sends this rank (counts) and where its rows start in the sender's x
    counts = tl.zeros((WORLD_P2,), tl.int64)
    starts = tl.zeros((WORLD_P2,), tl.int64)
    for s in range(world_size):
        sp = iris.load(SPLITS + ranks, cur_rank, s, heap_bases, mask=ranks < world_size, other=0).to(tl.int64)
        bad = (tl.min(tl.where(ranks < world_size, sp, 0)) < 0) | (tl.sum(sp) > rows_in)
        cnt = tl.where(bad, 0, tl.sum(tl.where(ranks == cur_rank, sp, 0)))  # invalid splits: sends nothing
        counts = tl.where(ranks == s, cnt, counts)
        starts = tl.where(ranks == s, tl.sum(tl.where(ranks < cur_rank, sp, 0)), starts)
        if pid == 0:
            tl.store(OUT_SPLITS + s, cnt)
            if bad:
                tl.atomic_max(STATUS + 1, 1)
    for i in range(world_size):
        s = (cur_rank + i) % world_size
        cnt = tl.sum(tl.where(ranks == s, counts, 0))
        src_off = tl.sum(tl.where(ranks == s, starts, 0))
        dst_off = tl.sum(tl.where(ranks < s, counts, 0))  # out holds rank 0's rows, then rank 1's, ...
        n = tl.minimum(cnt, tl.maximum(capacity - dst_off, 0))  # rows that fit
        for b in range(pid, tl.cdiv(n, BLOCK_R), programs):
            r = b * BLOCK_R + tl.arange(0, BLOCK_R)
            rm = r < n
            src_rows = (src_off + r) * row_len
            dst_rows = (dst_off + r) * row_len
            for c0 in range(0, row_len, BLOCK_W):
                cols = c0 + tl.arange(0, BLOCK_W)
                m = rm[:, None] & (cols < row_len)[None, :]
                v = iris.load(X + src_rows[:, None] + cols[None, :], cur_rank, s, heap_bases, mask=m)
                tl.store(OUT + dst_rows[:, None] + cols[None, :], v, mask=m)
    total = tl.sum(counts)
    if pid == 0 and total > capacity:
        tl.atomic_max(STATUS, total.to(tl.int32))
    _exit(FLAGS, EPOCHS, e, cur_rank, world_size, heap_bases)  # all reads of x done


def _workspace(ctx, programs, x_shape, dtype, stage):
    w = ctx.get_num_ranks()

    def make(c):
        ws = {"flags": c.zeros(2 * programs * w, dtype=torch.int32), "epochs": c.zeros(programs, dtype=torch.int32),
                  "splits": c.zeros(w, dtype=torch.int64)}
        if stage:
            ws["x"] = c.zeros(*x_shape, dtype=dtype)
        return ws

    return ctx.workspace(("all_to_all_v", programs, tuple(x_shape) if stage else None, dtype if stage else None),
                         make)


def _status(ctx):
    return ctx.workspace(("all_to_all_v", "status"), lambda c: c.zeros(STATUS_WORDS, dtype=torch.int32))


def check(ctx, capacity=None):
    """Raise AllToAllVError if any pull-variant call since the last check overflowed its output or met invalid
    splits on this rank; clears the record. Synchronizes the host with the device (reads two words)."""
    need, bad = iris.take_record(_status(ctx))
    if need or bad:
        what = []
        if need:
            what.append(f"{need} rows arrived for an output of {capacity if capacity is not None else 'fewer'} rows "
                        f"(only the rows that fit were copied; give `out` at least {need} rows)")
        if bad:
            what.append("a sender's in_splits were negative or summed past its x's rows (it sent nothing)")
        raise AllToAllVError(f"all_to_all_v on rank {ctx.get_rank()}: " + "; ".join(what))


def _check_args(ctx, output, input, in_splits, out_splits, variant):
    w = ctx.get_num_ranks()
    if variant not in VARIANTS:
        raise ValueError(f"all_to_all_v: unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    for name, t in (("output", output), ("input", input)):
        _check_tensor(ctx, "all_to_all_v", name, t)
        if t.dim() < 1:
            raise ValueError(f"all_to_all_v: {name} must have a row dimension, got a 0-d tensor")
    if output.dtype != input.dtype:
        raise TypeError(f"all_to_all_v: output and input must share one dtype, got {output.dtype} and {input.dtype}")
    if tuple(output.shape[1:]) != tuple(input.shape[1:]):
        raise ValueError(f"all_to_all_v: output rows {tuple(output.shape[1:])} differ from input rows "
                         f"{tuple(input.shape[1:])}")
    if isinstance(in_splits, torch.Tensor):
        if in_splits.dtype not in (torch.int32, torch.int64) or in_splits.numel() != w:
            raise ValueError(f"all_to_all_v: in_splits must hold {w} int32/int64 row counts (one per rank), got "
                             f"{in_splits.numel()} of {in_splits.dtype}")
        if in_splits.device.type != ctx.get_device().type:
            raise ValueError(f"all_to_all_v: in_splits is on {in_splits.device}, the heap is on {ctx.get_device()}")
    else:
        in_splits = [int(s) for s in in_splits]
        if len(in_splits) != w or min(in_splits) < 0 or sum(in_splits) > input.shape[0]:
            raise ValueError(f"all_to_all_v: in_splits {in_splits}: expected {w} non-negative counts summing to at "
                             f"most input's {input.shape[0]} rows")
        in_splits = torch.tensor(in_splits, dtype=torch.int64, device=ctx.get_device())
    if out_splits is not None and (not isinstance(out_splits, torch.Tensor) or out_splits.dtype != torch.int64 or
                                   out_splits.numel() != w):
        raise ValueError(f"all_to_all_v: out_splits must be an int64 tensor of {w} elements")
    return in_splits


def all_to_all_v(ctx, output, input, in_splits, out_splits=None, variant="auto", config=None):
    """Uneven all-to-all (module docstring). Returns (output, out_splits). Collective; no host synchronization for
    "pull" (CPU backend: raises AllToAllVError after an overflow), capturable once its workspace exists (call it once
    before capturing). The first call of each signature (variant, config, output and input shapes and dtype) compares
    it across ranks: ConsistencyError on every rank if they differ (iris/consistency.py)."""
    output, out_splits, pulled = _call(ctx, output, input, in_splits, out_splits, variant, config)
    if pulled and ctx.backend != "cuda":
        check(ctx, output.shape[0])  # after the call, outside the health guard: an overflow leaves the ranks in step
    return output, out_splits


@consistency.guarded("all_to_all_v")
def _call(ctx, output, input, in_splits, out_splits, variant, config):
    """The call under the context's health checks (iris/health.py): (output, out_splits, whether "pull" ran)."""
    in_splits = _check_args(ctx, output, input, in_splits, out_splits, variant)
    if ctx.get_num_ranks() > 1:  # in_splits differ by rank by design; the rest must agree
        consistency.first_call(ctx, ("all_to_all_v", variant, repr(config),
                                     *map(consistency.describe, (output, input))))
    w, dev = ctx.get_num_ranks(), ctx.get_device()
    if out_splits is None:
        out_splits = torch.zeros(w, dtype=torch.int64, device=dev)
    if variant == "nccl":
        group = getattr(ctx, "group", None)
        counts = torch.empty_like(out_splits)
        dist.all_to_all_single(counts, in_splits.to(torch.int64), group=group)
        send, recv = in_splits.tolist(), counts.tolist()  # NCCL needs the sizes on the host
        if sum(recv) > output.shape[0]:
            raise AllToAllVError(f"all_to_all_v/nccl on rank {ctx.get_rank()}: {sum(recv)} rows arrive for an "
                                 f"output of {output.shape[0]} rows")
        out_splits.copy_(counts)
        src = input.reshape(input.shape[0], -1)[:sum(send)]
        dst = output.reshape(output.shape[0], -1)[:sum(recv)]
        dist.all_to_all_single(dst, src, output_split_sizes=recv, input_split_sizes=send, group=group)
        return output, out_splits, False
    cfg = config or CollConfig()
    rows_in = input.shape[0]
    row_len = input[0].numel() if input.dim() > 1 else 1
    stage = not ctx.is_symmetric(input)
    cuda = ctx.backend == "cuda"
    block = _block(cfg, 1024 if not cuda else 4096)
    block_w = min(block, triton.next_power_of_2(max(row_len, 1)))
    block_r = max(1, block // block_w)
    programs = _programs(ctx, cfg, _cdiv(output.shape[0], block_r))
    ws = _workspace(ctx, programs, input.shape, input.dtype, stage)
    status = _status(ctx)
    ws["splits"].copy_(in_splits)
    x = input
    if stage:
        ws["x"].copy_(input)
        x = ws["x"]
    _a2av_kernel[(programs,)](x, ws["splits"], output, out_splits, status, rows_in, row_len, output.shape[0],
                              ws["flags"], ws["epochs"], ctx.get_rank(), w, ctx.get_heap_bases(),
                              WORLD_P2=triton.next_power_of_2(w), BLOCK_R=block_r, BLOCK_W=block_w,
                              num_warps=_warps(cfg, block), **iris.pdl_launch())
    return output, out_splits, True

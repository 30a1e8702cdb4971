"""Timing harness, run on every rank; each rank takes the median over iterations and the row reports the max over
ranks (the op is done when the slowest rank is). Two timings, the same for every variant and baseline of a run:
- "eager": one timed call = L2 flush (a 256 MiB buffer rewritten), host barrier, device barrier, start event, the
  op, end event. The device barrier lines the ranks' GPUs up, so how far apart the hosts leave the host barrier
  (up to ~0.5 ms, measured in traces) is not timed; the host's launch cost of the call is, as in an eager step.
- "graph": ROTATE calls captured in one CUDA graph, replayed back to back; a sample is one replay's events divided
  by ROTATE. GPU time only: what a captured step (or a host that runs far enough ahead) sees.
Inputs rotate among three sets, so no call starts with its operands in L2 from the previous one. torch.matmul alone
and the library collective alone are timed the same way in the same run, giving every row its overlap limit
max(t_gemm, t_comm) and its no-overlap sum.

FP8 (Data, dtype float8_e4m3fn or float8_e4m3fn/row): e4m3 operands, each rank's shards quantized with fp32 scales
of its own (per tensor, or per row of a and per column of b), b column-major, c in bfloat16 (float16 on the CPU
backend, whose interpreter computes bfloat16 wrongly); checked against the float64 product of the dequantized
operands (fp8_inputs). The GEMM alone is then torch._scaled_mm with the same kind of scales (fused_ops.fp8.matmul,
the baselines' local GEMM), and the collective alone moves what the baselines move: the bfloat16 result, or for
all_gather_gemm the FP8 rows of A (as bytes) and their row scales."""

import dataclasses
import math
import statistics
import time

import torch
import torch.distributed as dist

import fused_ops
from iris.distributed import all_gather_single
from fused_ops import fp8, reference

PEERS = ("torch_nccl", "torch_symm_mem", "torch_async_tp")
ROTATE = 3


TIMINGS = ("eager", "graph")


class Timer:
    def __init__(self, ctx, timing="eager"):
        if timing not in TIMINGS:
            raise ValueError(f"timing={timing!r}: expected one of {', '.join(TIMINGS)}")
        self.ctx, self.cuda, self.timing = ctx, ctx.backend == "cuda", timing
        self.flush = torch.empty(64 << 20, dtype=torch.int32, device=ctx.get_device()) if self.cuda else None

    def __call__(self, fn, iters, warmup):
        """Max over ranks of each rank's median time of fn(i) in microseconds. Eager, every input set is called
        twice before the timing: catalog calls capture their launch replay at an operand set's second sighting, and a
        median over first calls, captures and replays together measured none of them (auto rows ran at 0.6-2x of
        the identical variant's row in the 37bf974 eager sweep)."""
        if self.timing == "eager" and self.cuda:
            warmup = max(warmup, 2 * ROTATE)
        for i in range(warmup):
            fn(i)
        samples = self._graph(fn, iters) if self.timing == "graph" and self.cuda else self._eager(fn, iters)
        self.ctx.barrier()
        medians = [None] * self.ctx.get_num_ranks()
        dist.all_gather_object(medians, statistics.median(samples), group=self.ctx.group)
        return max(medians)

    def _graph(self, fn, iters):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for i in range(ROTATE):
                fn(i)
        graph.replay()
        self.ctx.barrier()
        events = [torch.cuda.Event(enable_timing=True) for _ in range(max(2, -(-iters // ROTATE)) + 1)]
        events[0].record()
        for e in events[1:]:
            graph.replay()
            e.record()
        events[-1].synchronize()
        del graph
        return [a.elapsed_time(b) * 1e3 / ROTATE for a, b in zip(events, events[1:])]

    def _eager(self, fn, iters):
        samples = []
        for i in range(iters):
            if self.cuda:
                self.flush.zero_()
            self.ctx.barrier()
            if self.cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                self.ctx.device_barrier()  # the ranks' GPUs start together: host release skew is not timed
                start.record()
                fn(i)
                end.record()
                end.synchronize()
                samples.append(start.elapsed_time(end) * 1e3)
            else:
                t0 = time.perf_counter()
                fn(i)
                samples.append((time.perf_counter() - t0) * 1e6)
        return samples


FP8 = fp8.FP8
FP8_K_N = 16  # torch._scaled_mm on GPUs: the local GEMM's K and N multiples of 16


@dataclasses.dataclass(frozen=True)
class Data:
    """The data of a row (its CSV dtype column): the operands' dtype, c's, and for FP8 which scales."""
    name: str  # float16, bfloat16, float32; float8_e4m3fn (per-tensor scales) or float8_e4m3fn/row (row-wise)
    operand: torch.dtype  # a and b
    out: torch.dtype  # c
    row_wise: bool = False  # FP8: scale_a one per row of a, scale_b one per column of b (else one fp32 each)

    @property
    def fp8(self):
        return self.operand == FP8


def data(name, backend):
    """Data of a dtype column value on this backend: FP8 writes bfloat16 on GPUs and float16 on the CPU."""
    base, _, scales = name.partition("/")
    operand = getattr(torch, base, None)
    if not isinstance(operand, torch.dtype) or scales not in ("", "row") or (scales and operand != FP8):
        raise ValueError(f"dtype {name!r}: expected float16, bfloat16, float32, float8_e4m3fn or float8_e4m3fn/row")
    if operand != FP8:
        return Data(name, operand, operand)
    return Data(name, FP8, torch.bfloat16 if backend == "cuda" else torch.float16, scales == "row")


def check_shape(op, m, n, k, world, name):
    """Host check of a shape before anything launches (ValueError naming the shape and the rule): divisible by the
    world size where the op shards it, and with FP8 operands each rank's GEMM K and N multiples of 16, which
    torch._scaled_mm (the baselines' local GEMM) requires on GPUs. Checked on every backend, so that a CPU run
    refuses what a GPU sweep could not run either."""
    reference.check_divisible(op, m, n, k, world)
    if not name.startswith("float8"):
        return
    (_, k_local), (_, n_local), _ = reference.local_shapes(op, m, n, k, world)
    bad = [f"{dim}{'/world' if local != size else ''} = {local}" for dim, size, local in (("K", k, k_local),
                                                                                          ("N", n, n_local))
           if local % FP8_K_N]
    if bad:
        raise ValueError(f"{op} {m}x{n}x{k} in FP8 on {world} ranks: each rank's GEMM is {m} x {n_local} x "
                         f"{k_local} (M x N x K), and torch._scaled_mm (the baselines' local GEMM on GPUs) needs K and "
                         f"N multiples of {FP8_K_N}: {' and '.join(bad)} {'are' if len(bad) > 1 else 'is'} not")


def _quantize(x, row_wise, headroom):
    """(q, scale, dequantized): x in e4m3 with an fp32 scale of its own, one per tensor or one per row, its largest
    magnitude mapped to e4m3's largest (448) divided by `headroom` (1, 2 or 4: ranks' scales then differ by up to 4x,
    so a scale applied to another rank's data shows in the error); q.double() * scale, what the float64 reference
    multiplies."""
    amax = x.abs().amax(dim=1, keepdim=True) if row_wise else x.abs().amax().reshape(1)
    s = (amax * headroom / torch.finfo(FP8).max).clamp_min(1e-12).float()
    q = (x / s).to(FP8)
    return q, s, q.double() * s.double()


def fp8_inputs(op, seed, world, rank, m, n, k, row_wise, device, with_reference=True):
    """This rank's FP8 (a, b, scale_a, scale_b) and the float64 reference of its c (or None): the layouts of
    reference.make_inputs, C = A @ W.t() of a global A (M x K) and weight W (N x K, so b = this rank's block of W
    transposed: column-major, as torch._scaled_mm wants it). Each rank quantizes its own shards with scales of its own
    (gemm_all_scatter's A is the same on every rank, and so is its scale); row-wise, scale_a is a.shape[0] x 1 and
    scale_b 1 x b.shape[1]. The reference multiplies every rank's dequantized shards in float64."""
    reference.check_divisible(op, m, n, k, world)
    gen = torch.Generator(device=device).manual_seed(seed)
    big_a = torch.randn(m, k, generator=gen, dtype=torch.float32, device=device) / math.sqrt(k)
    big_w = torch.randn(n, k, generator=gen, dtype=torch.float32, device=device)
    whole = slice(None)
    ml, nl, kl = m // world, n // world, k // world

    def part(size, r):
        return slice(size * r, size * (r + 1))

    # each rank's block of A and of W, and the dimension the blocks are joined along (None: one block, everyone's)
    a_of, a_dim, w_of, w_dim = {
        "gemm_all_scatter": (lambda r: (whole, whole), None, lambda r: (part(nl, r), whole), 0),
        "all_gather_gemm": (lambda r: (part(ml, r), whole), 0, lambda r: (part(nl, r), whole), 0),
        "gemm_all_reduce": (lambda r: (whole, part(kl, r)), 1, lambda r: (whole, part(kl, r)), 1),
        "gemm_reduce_scatter": (lambda r: (whole, part(kl, r)), 1, lambda r: (whole, part(kl, r)), 1),
    }[op]
    a_rank = 0 if a_dim is None else rank  # whose block of A this rank holds (rank 0's: everyone's)

    def quantize_a(r):
        return _quantize(big_a[a_of(r)], row_wise, 2 ** (r % 3))

    def quantize_w(r):
        return _quantize(big_w[w_of(r)], row_wise, 2 ** ((r + 1) % 3))

    qa, sa, _ = quantize_a(a_rank)
    qw, sw, _ = quantize_w(rank)
    ref = None
    if with_reference:
        deq_a = torch.cat([quantize_a(r)[2] for r in range(1 if a_dim is None else world)], dim=a_dim or 0)
        deq_w = torch.cat([quantize_w(r)[2] for r in range(world)], dim=w_dim)
        ref = deq_a @ deq_w.t()
        del deq_a, deq_w
        if op == "all_gather_gemm":
            ref = ref[:, part(nl, rank)]
        elif op == "gemm_reduce_scatter":
            ref = ref[part(ml, rank)]
    return qa, qw.t(), sa, sw.reshape(1, -1), ref


def inputs(ctx, op, seed, m, n, k, data, with_reference=True):
    """This rank's (a, b, {scale_a, scale_b} or {}, float64 reference of its c or None) in `data`'s dtypes."""
    world, rank, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    if not data.fp8:
        a, b, ref = reference.make_inputs(op, seed, world, rank, m, n, k, data.operand, dev, reference=with_reference)
        return a, b, {}, ref
    a, b, sa, sb, ref = fp8_inputs(op, seed, world, rank, m, n, k, data.row_wise, dev, with_reference)
    return a, b, dict(scale_a=sa, scale_b=sb), ref


def tolerance(data):
    """Largest relative error a correct row may have: reference.TOLERANCE of its operands' dtype."""
    return reference.TOLERANCE[data.operand]


def _inputs(ctx, op, m, n, k, data, seed):
    return [inputs(ctx, op, seed + s, m, n, k, data, with_reference=False)[:3] for s in range(ROTATE)]


def _library_parts(op, m, n, k, world):
    """(GEMM operand shapes, collective, collective input shape) of the library-alone timings for each op."""
    return {
        "gemm_all_scatter": (((m, k), (k, n // world)), "all_gather", (m, n // world)),
        "gemm_all_reduce": (((m, k // world), (k // world, n)), "all_reduce", (m, n)),
        "all_gather_gemm": (((m, k), (k, n // world)), "all_gather", (m // world, k)),
        "gemm_reduce_scatter": (((m, k // world), (k // world, n)), "reduce_scatter", (m, n)),
    }[op]


def _fp8_gemm(op, a_shape, b_shape, row_wise, dev):
    """FP8 operands and scales of the GEMM alone, as the baselines pass them to torch._scaled_mm: b column-major;
    all_gather_gemm's torch_nccl multiplies the gathered A with its gathered row scales (M x 1) whatever the kind."""
    a = torch.randn(a_shape, device=dev).to(FP8)
    b = torch.randn(b_shape[::-1], device=dev).to(FP8).t()
    rows_a = row_wise or op == "all_gather_gemm"
    sa = torch.rand((a_shape[0], 1) if rows_a else (1,), device=dev) + 0.5
    sb = torch.rand((1, b_shape[1]) if row_wise else (1,), device=dev) + 0.5
    return a, b, sa, sb


def library_times(ctx, op, m, n, k, data, iters, warmup, timing="eager"):
    """This rank's GEMM alone (torch.matmul; torch._scaled_mm for FP8, as fused_ops.fp8.matmul runs it for the
    baselines) and the library collective alone, on the op's shapes: the collective moves c's dtype, or for
    all_gather_gemm A's (FP8: A's bytes, then its row scales, as the torch_nccl baseline gathers them)."""
    timer, world, dev = Timer(ctx, timing), ctx.get_num_ranks(), ctx.get_device()
    (a_shape, b_shape), collective, c_shape = _library_parts(op, m, n, k, world)
    if data.fp8:
        sets = [_fp8_gemm(op, a_shape, b_shape, data.row_wise, dev) for _ in range(ROTATE)]
        gemm = timer(lambda i: fp8.matmul(*sets[i % ROTATE], data.out), iters, warmup)
    else:
        sets = [(torch.randn(a_shape, device=dev).to(data.operand), torch.randn(b_shape, device=dev).to(data.operand))
                for _ in range(ROTATE)]
        out = torch.empty(a_shape[0], b_shape[1], dtype=data.out, device=dev)
        gemm = timer(lambda i: torch.matmul(*sets[i % ROTATE], out=out), iters, warmup)
    moved = data.operand if collective == "all_gather" and op == "all_gather_gemm" else data.out
    x = torch.randn(c_shape, device=dev).to(moved)
    if moved == FP8:  # e4m3 as bytes (which NCCL and gloo move), then the row scales
        x, y = x.view(torch.uint8), torch.empty(world * c_shape[0], c_shape[1], dtype=torch.uint8, device=dev)
        rows, gathered = torch.ones(c_shape[0], 1, device=dev), torch.empty(world * c_shape[0], 1, device=dev)
        comm = timer(lambda i: (all_gather_single(y, x, group=ctx.group),
                                all_gather_single(gathered, rows, group=ctx.group)), iters, warmup)
    elif collective == "all_gather":
        y = torch.empty(world * c_shape[0], c_shape[1], dtype=moved, device=dev)
        comm = timer(lambda i: all_gather_single(y, x, group=ctx.group), iters, warmup)
    elif collective == "reduce_scatter" and ctx.backend == "cuda":
        y = torch.empty(c_shape[0] // world, c_shape[1], dtype=moved, device=dev)
        comm = timer(lambda i: dist.reduce_scatter_tensor(y, x, group=ctx.group), iters, warmup)
    else:  # all_reduce (gloo has no reduce-scatter: its all-reduce stands in on the CPU)
        comm = timer(lambda i: dist.all_reduce(x, group=ctx.group), iters, warmup)
    return gemm, comm


def measure(ctx, op, variant, m, n, k, data, config, iters, warmup, validate=True, timing="eager"):
    """Time one variant on one shape; with validate, check it against the float64 reference before the timing and
    again after it (on GPUs the second check is a launch replay: the operands' second sighting). data: Data."""
    world = ctx.get_num_ranks()
    run = getattr(fused_ops, op)
    with ctx.scratch():
        c = ctx.zeros(*reference.local_shapes(op, m, n, k, world)[2], dtype=data.out)
        ran = None
        if validate:
            a, b, extra, ref = inputs(ctx, op, 1, m, n, k, data)
            ran = _ran(ctx, op, a, b, c, variant, config, extra, timing)

            def check():
                c.fill_(float("nan"))
                ctx.barrier()
                run(ctx, a, b, c, variant=variant, config=config, **extra)
                ctx.barrier()
                errs = [None] * world
                dist.all_gather_object(errs, reference.rel_error(c, ref), group=ctx.group)
                return max(errs) if all(e == e for e in errs) else float("nan")

            err = check()
        t = None
        if iters:
            sets = _inputs(ctx, op, m, n, k, data, seed=20_000)
            ran = ran or _ran(ctx, op, *sets[0][:2], c, variant, config, sets[0][2], timing)

            def call(i):
                a_i, b_i, extra_i = sets[i % ROTATE]
                run(ctx, a_i, b_i, c, variant=variant, config=config, **extra_i)

            t = Timer(ctx, timing)(call, iters, warmup)
            del sets
        if validate:
            again = check()
            err = float("nan") if err != err or again != again else max(err, again)
            del ref
    correct = bool(err <= tolerance(data)) if validate else None
    return dict(time_us=t, max_rel_error=err if validate else float("nan"), correct=correct, ran=ran)


def _ran(ctx, op, a, b, c, variant, config, extra, timing):
    """What the timed calls run, for the CSV: the variant (auto's pick in that timing mode) and its launch
    configuration."""
    graph = timing == "graph" and ctx.backend == "cuda"  # what Timer captures (CPU: eager calls)
    name, cfg = fused_ops.plan(ctx, op, a, b, c, variant, config, timing="graph" if graph else "eager",
                               **extra)
    return name if cfg is None else f"{name}: {cfg.describe()}"

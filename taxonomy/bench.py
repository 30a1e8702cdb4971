"""Timing harness, run on every rank; each rank takes the median over iterations and the row reports the max over
ranks (the op is done when the slowest rank is). Two timings, the same for every variant and baseline of a run:
- "eager": one timed call = L2 flush (a 256 MiB buffer rewritten), host barrier, device barrier, start event, the
  op, end event. The device barrier lines the ranks' GPUs up, so how far apart the hosts leave the host barrier
  (up to ~0.5 ms, measured in traces) is not timed; the host's launch cost of the call is, as in an eager step.
- "graph": ROTATE calls captured in one CUDA graph, replayed back to back; a sample is one replay's events divided
  by ROTATE. GPU time only: what a captured step (or a host that runs far enough ahead) sees.
Inputs rotate among three sets, so no call starts with its operands in L2 from the previous one. torch.matmul alone
and the library collective alone are timed the same way in the same run, giving every row its overlap limit
max(t_gemm, t_comm) and its no-overlap sum."""

import statistics
import time

import torch
import torch.distributed as dist

import fused_ops
from iris.distributed import all_gather_single
from fused_ops import reference

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


def _inputs(ctx, op, m, n, k, dtype, seed):
    world, rank, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    return [reference.make_inputs(op, seed + s, world, rank, m, n, k, dtype, dev, reference=False)[:2]
            for s in range(ROTATE)]


def _library_parts(op, m, n, k, world):
    """(GEMM operand shapes, collective, collective input shape) of the library-alone timings for each op."""
    return {
        "gemm_all_scatter": (((m, k), (k, n // world)), "all_gather", (m, n // world)),
        "gemm_all_reduce": (((m, k // world), (k // world, n)), "all_reduce", (m, n)),
        "all_gather_gemm": (((m, k), (k, n // world)), "all_gather", (m // world, k)),
        "gemm_reduce_scatter": (((m, k // world), (k // world, n)), "reduce_scatter", (m, n)),
    }[op]


def library_times(ctx, op, m, n, k, dtype, iters, warmup, timing="eager"):
    """torch.matmul of this rank's GEMM alone, and the library collective alone, on the op's shapes."""
    timer, world, dev = Timer(ctx, timing), ctx.get_num_ranks(), ctx.get_device()
    (a_shape, b_shape), collective, c_shape = _library_parts(op, m, n, k, world)
    sets = [(torch.randn(a_shape, device=dev).to(dtype), torch.randn(b_shape, device=dev).to(dtype))
            for _ in range(ROTATE)]
    out = torch.empty(a_shape[0], b_shape[1], dtype=dtype, device=dev)
    gemm = timer(lambda i: torch.matmul(*sets[i % ROTATE], out=out), iters, warmup)
    x = torch.randn(c_shape, device=dev).to(dtype)
    if collective == "all_gather":
        y = torch.empty(world * c_shape[0], c_shape[1], dtype=dtype, device=dev)
        comm = timer(lambda i: all_gather_single(y, x, group=ctx.group), iters, warmup)
    elif collective == "reduce_scatter" and ctx.backend == "cuda":
        y = torch.empty(c_shape[0] // world, c_shape[1], dtype=dtype, device=dev)
        comm = timer(lambda i: dist.reduce_scatter_tensor(y, x, group=ctx.group), iters, warmup)
    else:  # all_reduce (gloo has no reduce-scatter: its all-reduce stands in on the CPU)
        comm = timer(lambda i: dist.all_reduce(x, group=ctx.group), iters, warmup)
    return gemm, comm


def measure(ctx, op, variant, m, n, k, dtype, config, iters, warmup, validate=True, timing="eager"):
    """Time one variant on one shape; with validate, check it against the float64 reference before the timing and
    again after it (on GPUs the second check is a launch replay: the operands' second sighting)."""
    world, rank, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    run = getattr(fused_ops, op)
    with ctx.scratch():
        c = ctx.zeros(*reference.local_shapes(op, m, n, k, world)[2], dtype=dtype)
        ran = None
        if validate:
            a, b, ref = reference.make_inputs(op, 1, world, rank, m, n, k, dtype, dev)
            ran = _ran(ctx, op, a, b, c, variant, config)

            def check():
                c.fill_(float("nan"))
                ctx.barrier()
                run(ctx, a, b, c, variant=variant, config=config)
                ctx.barrier()
                errs = [None] * world
                dist.all_gather_object(errs, reference.rel_error(c, ref), group=ctx.group)
                return max(errs) if all(e == e for e in errs) else float("nan")

            err = check()
        t = None
        if iters:
            sets = _inputs(ctx, op, m, n, k, dtype, seed=20_000)
            ran = ran or _ran(ctx, op, *sets[0], c, variant, config)
            t = Timer(ctx, timing)(lambda i: run(ctx, *sets[i % ROTATE], c, variant=variant, config=config), iters,
                                   warmup)
            del sets
        if validate:
            again = check()
            err = float("nan") if err != err or again != again else max(err, again)
            del ref
    correct = bool(err <= reference.TOLERANCE[dtype]) if validate else None
    return dict(time_us=t, max_rel_error=err if validate else float("nan"), correct=correct, ran=ran)


def _ran(ctx, op, a, b, c, variant, config):
    """What the call runs, for the CSV: the variant (auto's pick) and its launch configuration."""
    name, cfg = fused_ops.plan(ctx, op, a, b, c, variant, config)
    return name if cfg is None else f"{name}: {cfg.describe()}"

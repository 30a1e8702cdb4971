"""`variant="auto"`: the fastest variant for a shape, from a tuned table or from a tuning pass cached in memory.

Lookup order:
1. `tune(ctx, op, ...)` results for this exact shape (collective; measured here, so they win);
2. the table in `tuned.csv` (built by scripts/tune_table.py from the sweep CSVs in results/) for this GPU model,
   world size, dtype and timing mode: the shape's own row where it was swept, else the two nearest swept shapes'
   rows blended (distance in log2 of M, N and K; `blend`). The mode is
   "graph" while the stream is being captured into a CUDA graph and "eager" otherwise: eager calls pay each
   library op's launch path, which graphs do not, so the two rank variants differently (PyTorch's fused
   AllGather+GEMM wins in graphs at large M and loses eagerly). A mode with no rows borrows the other's;
3. otherwise torch_nccl on GPUs (nothing measured: the baseline is the safe choice), and the op's default fused
   variant where torch_nccl cannot run (the CPU backend, ranks sharing a GPU).
Rows in the table rank every variant of a swept shape, fastest first; a fused variant only ranks above
`torch_nccl` where it won by a margin (see scripts/tune_table.py), so noise does not pick a loser. Variants that
cannot run here (backend, dtype, baselines when ranks share a GPU, in graph mode the variants a CUDA graph may not
capture) are skipped in rank order.
"""

import csv
import math
import os

import torch

from . import registry

DEFAULT = {"gemm_all_scatter": "fused_sequential", "gemm_all_reduce": "one_shot", "all_gather_gemm": "push",
           "gemm_reduce_scatter": "fused"}
TABLE = os.path.join(os.path.dirname(__file__), "tuned.csv")
_table = None
_tuned = {}  # (op, m, n, k, dtype, world, backend, context handle) -> variant name, from tune() (per context:
# a pick tuned in one context must not leak into another context of the same world size, whose ranks never tuned)
_tuned_config = {}  # the same keys -> the Config that won with that variant (None: its defaults), from tune()
_picked = {}  # the table's pick per call signature (a lookup per call costs more than the small calls it picks for)
_picked_from = [None]  # the table those picks came from (tests swap tables)
_set_up = set()  # shapes whose capture-mode pick has run eagerly (capture_pick_to_set_up)


def _load():
    global _table
    if _table is None:
        _table = {}
        if os.path.exists(TABLE):
            with open(TABLE, newline="") as f:
                for row in csv.DictReader(f):
                    key = (row["gpu"], int(row["world_size"]), row["op"], row["dtype"], row["timing"])
                    shape = (int(row["m"]), int(row["n"]), int(row["k"]))
                    _table.setdefault(key, []).append((shape, row["ranking"].split()))
    return _table


def _runnable(ctx, op, name, dtype, timing="eager"):
    v = registry.get(op, name)
    return (ctx.backend in v.backends and str(dtype).replace("torch.", "") in v.dtypes and
            not (v.one_gpu_per_rank and ctx.backend == "cuda" and ctx.ranks_per_device > 1) and
            (v.capture or timing != "graph"))


def _gpu(ctx):
    return torch.cuda.get_device_name(ctx.get_device()) if ctx.backend == "cuda" else "cpu"


def mode(ctx):
    """The timing mode a call runs in: "graph" under CUDA-graph capture, else "eager"."""
    return "graph" if ctx.backend == "cuda" and torch.cuda.is_current_stream_capturing() else "eager"


def ranking(ctx, op, m, n, k, dtype, timing="eager"):
    """The table's ranking for this shape (global M, N, K) in this timing mode (or the other mode's when this one has
    no rows), or [] when this GPU/world/dtype has none: `nearest(rows, shape)`. fp16 borrows bfloat16's rows (same
    tile shapes and bytes)."""
    name = str(dtype).replace("torch.", "")
    key = (_gpu(ctx), ctx.get_num_ranks(), op, "bfloat16" if name == "float16" else name)
    other = "eager" if timing == "graph" else "graph"
    return nearest(_load().get(key + (timing,)) or _load().get(key + (other,), []), (m, n, k))


def nearest(rows, shape):
    """The ranking for `shape` from swept rows [((m, n, k), ranking)]: the shape's own where it was swept, else the
    two nearest shapes' (log2 distance) blended. Host only."""
    if not rows:
        return []
    near = by_distance(rows, shape)
    if tuple(near[0][0]) == tuple(shape):
        return near[0][1]
    return blend([r[1] for r in near[:2]])


def by_distance(rows, shape):
    """Swept rows [((m, n, k), ranking)], nearest to `shape` first (distance in log2 of M, N and K)."""
    here = [math.log2(max(1, x)) for x in shape]
    return sorted(rows, key=lambda r: sum((math.log2(s) - h) ** 2 for s, h in zip(r[0], here)))


def blend(rankings):
    """One ranking from the rankings of the nearest swept shapes (nearest first): the nearest's variants, first
    those that beat torch_nccl at every one of them (a table ranks a fused variant above torch_nccl only where it won
    by a margin), then by their summed places. Left out of their table one at a time, the 304 swept shapes of the
    committed sweeps got a pick over 5% slower than torch_nccl at 16 from the nearest shape alone and at 9 from the
    two nearest, at the same geometric mean (`python scripts/tune_table.py --holdout`)."""
    def lost(ranked, v):  # not ahead of the baseline there (absent counts as lost)
        return v not in ranked or ("torch_nccl" in ranked and ranked.index(v) > ranked.index("torch_nccl"))

    def place(ranked, v):
        return ranked.index(v) if v in ranked else len(ranked)

    return sorted(rankings[0], key=lambda v: (sum(lost(r, v) for r in rankings), sum(place(r, v) for r in rankings),
                                              place(rankings[0], v)))


def choose(ctx, op, m, n, k, dtype, exclude=(), timing=None):
    """The variant `auto` runs for this rank's call (global M, N, K: the same on every rank, so all agree), in this
    timing mode (default: the call's, mode(ctx))."""
    world = ctx.get_num_ranks()
    key = (op, m, n, k, dtype, world, ctx.backend, ctx.handle)
    timing = timing or mode(ctx)
    if _tuned.get(key) not in (None, *exclude) and _runnable(ctx, op, _tuned[key], dtype, timing):
        return _tuned[key]
    if _picked_from[0] is not _load():
        _picked.clear()
        _picked_from[0] = _load()
    sig = (key, exclude, ctx.ranks_per_device, timing)
    if sig not in _picked:
        ranked = [name for name in ranking(ctx, op, m, n, k, dtype, timing) if name in registry.OPS[op].variants and
                  name not in exclude and _runnable(ctx, op, name, dtype, timing) and
                  not registry.OPS[op].variants[name].refusal(m, n, k, world, dtype)]  # e.g. FP8 rows per rank
        _picked[sig] = ranked[0] if ranked else _fallback(ctx, op, dtype, exclude)
    return _picked[sig]


def refused(ctx, op, a, b, c):
    """The variants of `op` that refuse this call on the host (registry: Variant.refuses; with c's dtype, which
    choose() does not see), for auto to pass over. Host only."""
    takes = [v for v in registry.OPS[op].variants.values() if v.refuses]
    if not takes:
        return ()
    m, n, k = global_shape(ctx, op, a, b)
    return tuple(v.name for v in takes if v.refusal(m, n, k, ctx.get_num_ranks(), a.dtype, c.dtype))


def capture_pick_to_set_up(ctx, op, m, n, k, dtype, exclude=()):
    """The variant `auto` would run for this call under CUDA-graph capture, when that is not the variant this eager
    call runs and this shape has not been set up for it yet; else None. Capture forbids creating workspaces, so for
    "call the op once before capturing it" to hold for auto too, the first eager auto call on a shape also runs that
    variant once (fused_ops/ops.py). Every rank decides alike: same global shape, same table."""
    if not _can_capture(ctx) or mode(ctx) == "graph":
        return None
    sig = (op, m, n, k, dtype, ctx.get_num_ranks(), exclude, ctx.handle)
    if sig in _set_up:
        return None
    _set_up.add(sig)
    graph = choose(ctx, op, m, n, k, dtype, exclude, timing="graph")
    return graph if graph != choose(ctx, op, m, n, k, dtype, exclude, timing="eager") else None


def _can_capture(ctx):
    return ctx.backend == "cuda"


def _fallback(ctx, op, dtype, exclude):
    """Nothing measured for this GPU, world size and dtype: torch_nccl where it runs (on 8 GPUs, for instance, the
    default fused all-reduce is 0.26x of it), else the op's default fused variant (CPU, ranks sharing a GPU)."""
    if ctx.backend == "cuda" and "torch_nccl" not in exclude and _runnable(ctx, op, "torch_nccl", dtype):
        return "torch_nccl"
    return DEFAULT[op]


def tune(ctx, op, a, b, c, variants=None, iters=10, configs=(), **kwargs):
    """Collective: time every runnable variant on these operands (CUDA events, the slowest rank counts), each with
    its defaults and with each of `configs` it accepts (Configs; "search": config.candidates, the tiles and splits
    the defaults choose among), remember the fastest variant and config for this shape, and return {variant:
    microseconds} (its best config's). `auto` calls on this shape then run that variant with that config, unless
    they pass a config of their own. `kwargs`: the op's optional operands, as its calls take them; variants they
    rule out (all_gather_gemm's pull with a_gathered) are skipped. Call it once per shape before a long run."""
    from . import config as _config, ops

    m, n, k = global_shape(ctx, op, a, b)
    if isinstance(configs, str):
        configs = _config.candidates(ctx, a.dtype)
    spec = ops._spec(op)
    skip = spec.exclude(spec.values(kwargs))
    names = [v for v in (variants or registry.list_variants(op)) if _runnable(ctx, op, v, a.dtype) and v not in skip]
    times, best = {}, {}
    for name in names:
        for cfg in (None, *(() if registry.get(op, name).pattern == "baseline" else configs)):
            try:  # a config the variant refuses is refused on the host, on every rank alike
                ops.plan(ctx, op, a, b, c, name, cfg, **kwargs)
            except ValueError:
                continue
            t = _time_calls(ctx, lambda: getattr(ops, op)(ctx, a, b, c, variant=name, config=cfg, **kwargs), iters)
            if t < times.get(name, float("inf")):
                times[name], best[name] = t, cfg
    key = (op, m, n, k, a.dtype, ctx.get_num_ranks(), ctx.backend, ctx.handle)
    _tuned[key] = min(times, key=times.get)
    _tuned_config[key] = best[_tuned[key]]
    ctx.replay.forget_prepared()  # prepared auto calls would keep their old pick
    return times


def tuned_config(ctx, op, m, n, k, dtype, variant):
    """The config tune() found best for `variant` on this shape (global M, N, K), or None."""
    key = (op, m, n, k, dtype, ctx.get_num_ranks(), ctx.backend, ctx.handle)
    return _tuned_config.get(key) if _tuned.get(key) == variant else None


def _time_calls(ctx, call, iters):
    """Microseconds per call, after two warm-up calls, the slowest rank's (collective)."""
    import time

    import torch.distributed as dist

    for _ in range(2):
        call()
    ctx.barrier()
    if ctx.backend == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            call()
        end.record()
        end.synchronize()
        t = torch.tensor([start.elapsed_time(end) * 1e3 / iters], dtype=torch.float64, device=ctx.get_device())
    else:
        t0 = time.perf_counter()
        for _ in range(iters):
            call()
        t = torch.tensor([(time.perf_counter() - t0) * 1e6 / iters], dtype=torch.float64)
    ctx.barrier()
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=ctx.group)
    return t.item()


def global_shape(ctx, op, a, b):
    """Global (M, N, K) of a call from this rank's operands (the table and the tuning cache are keyed by it)."""
    w = ctx.get_num_ranks()
    (ma, ka), (_, nb) = a.shape, b.shape
    return {"gemm_all_scatter": (ma, nb * w, ka), "gemm_all_reduce": (ma, nb, ka * w),
            "all_gather_gemm": (ma * w, nb * w, ka), "gemm_reduce_scatter": (ma, nb, ka * w)}[op]

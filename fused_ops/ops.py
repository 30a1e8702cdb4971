"""The catalog's front doors: one call signature per op, validated on the host before any launch.

    gemm_all_scatter(ctx, a, b, c, variant="auto", config=None)
        a: M x K (the same on every rank); b: this rank's K x N/world column block of B;
        c: M x N on the symmetric heap. Every rank ends with the full C; rank r computes C[:, r*N/w:(r+1)*N/w].
    gemm_all_reduce(ctx, a, b, c, variant="auto", config=None)
        a: M x K/world (this rank's columns of A); b: K/world x N (the matching rows of B);
        c: M x N on the symmetric heap. Every rank ends with C = sum over ranks of a_r @ b_r.

    all_gather_gemm(ctx, a, b, c, variant="auto", config=None, a_gathered=None)
        a: this rank's M/world x K rows of A; b: K x N/world (this rank's columns of a column-parallel weight);
        c: M x N/world, this rank's block of gather(A) @ B. a_gathered (M x K), if given, receives the gathered A
        (the backward pass needs it); `pull` never materializes it and refuses.
    gemm_reduce_scatter(ctx, a, b, c, variant="auto", config=None)
        a: M x K/world; b: K/world x N (a row-parallel weight's rows); c: M/world x N, this rank's rows of the sum.

`variant` picks an overlap pattern by name (`fused_ops.list_variants(op)`), or "auto" (the default): the fastest
variant measured for the nearest shape on this GPU model, or one measured by `fused_ops.tune` (fused_ops/auto.py);
`config` (fused_ops.Config) overrides
tile sizes, the GEMM/communication SM split, stages and warps. Every rank must make the same calls with the same
shapes: workspaces are allocated collectively on first use and reused afterwards. Variants that write into peers'
outputs wait for every rank to have entered the call (finished with the previous call's output) before they write
into it, and end once every peer's writes have landed (this rank's output is complete when the call's stream work
is): inside their kernels (fused_ops/sync.py), except the copy_engine variants, which use device barriers. On GPUs, a
call repeated on the same operands (addresses, shapes, strides) replays a CUDA graph of its launches (iris/replay.py;
IRIS_REPLAY=0 turns that off).

Ranks out of step (iris/consistency.py, iris/health.py): the first call of each signature (op, variant, config,
shapes, dtypes, heap offset of the operands peers reach) compares it across ranks and raises ConsistencyError on every
rank when they differ (IRIS_DEBUG_CHECKS=1: every call, prepared ones included). A mismatch, a device wait timeout or
a failed peer breaks the context: every later call raises ContextBroken at once.
"""

import torch

from iris import consistency, health
from iris.replay import tensor_key

from . import auto, fp8, registry
from .problem import DTYPES, Problem

registry.define_op("gemm_all_scatter", "A (M x K) everywhere, B split by columns; every rank ends with C (M x N)")
registry.define_op("gemm_all_reduce", "A split by columns, B split by rows (K sharded); every rank ends with the "
                                      "sum C (M x N)")
registry.define_op("all_gather_gemm", "A split by rows, B split by columns; every rank ends with its M x N/world "
                                      "block of gather(A) @ B (and optionally the gathered A)")
registry.define_op("gemm_reduce_scatter", "A split by columns, B split by rows (K sharded); every rank ends with its "
                                          "M/world rows of the sum")


def _check(ctx, op, a, b, c, heap_output=True, scale_a=None, scale_b=None):
    where = f"{op}:"
    for name, t in (("a", a), ("b", b), ("c", c)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{where} {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2:
            raise ValueError(f"{where} {name} must be 2-D, got shape {tuple(t.shape)}")
        if t.dtype not in DTYPES and not (t.dtype == fp8.FP8 and name != "c"):
            raise TypeError(f"{where} {name} has dtype {t.dtype}; expected one of float16, bfloat16, float32")
        if t.device.type != ctx.get_device().type:
            raise ValueError(f"{where} {name} is on {t.device}, the heap is on {ctx.get_device()}")
    fp8_scales = fp8.check_catalog(ctx, op, a, b, c, scale_a, scale_b)
    if not fp8_scales and not (a.dtype == b.dtype == c.dtype):
        raise TypeError(f"{where} a, b, c must share one dtype, got {a.dtype}, {b.dtype}, {c.dtype}")
    if c.dtype == torch.bfloat16 and ctx.backend == "cpu":
        raise TypeError(f"{where} bfloat16 is not supported on the CPU backend (the Triton interpreter computes it "
                        f"wrongly); use float16 or float32")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"{where} inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)}")
    if min(a.shape[0], a.shape[1], b.shape[1]) < 1:
        raise ValueError(f"{where} empty operands: a {tuple(a.shape)}, b {tuple(b.shape)}")
    if heap_output:
        ctx.require_symmetric(c, f"{where} c")
    if not c.is_contiguous():
        raise ValueError(f"{where} c must be contiguous")


def _variant(ctx, op, variant, a, b, c, config, heap_output=True, exclude=(), scales=(None, None)):
    """(the variant to run, its config): auto's pick, with the config tune() found for it here when the caller
    gave none."""
    registry.check_op(op)
    _check(ctx, op, a, b, c, heap_output, *scales)
    if variant == "auto":
        shape = auto.global_shape(ctx, op, a, b)
        variant = auto.choose(ctx, op, *shape, a.dtype, exclude)
        config = config if config is not None else auto.tuned_config(ctx, op, *shape, a.dtype, variant)
    v = registry.get(op, variant, ctx.backend)
    allowed = v.dtypes_on(ctx.backend)
    if str(a.dtype).replace("torch.", "") not in allowed:
        note = f" ({v.cpu_note})" if ctx.backend == "cpu" and v.cpu_note else ""
        can = registry.list_variants(op, ctx.backend, a.dtype)
        raise TypeError(f"{op}/{variant} supports {', '.join(allowed)} on the {ctx.backend} backend, not "
                        f"{a.dtype}{note}; variants of {op} that take {a.dtype} here: {', '.join(can) or 'none'}")
    if v.one_gpu_per_rank and ctx.backend == "cuda" and ctx.ranks_per_device > 1:
        why = ("NCCL and SymmetricMemory refuse two ranks on one device" if v.pattern == "baseline" else
               "its kernels wait on what the peers' copy engines deliver (flags, barriers), and kernels of two "
               "processes on one GPU only take turns")
        raise ValueError(f"{op}/{variant} needs one GPU per rank: {why} ({ctx.ranks_per_device} ranks share each GPU "
                         f"here)")
    check_capture(ctx.backend, v)
    return v, config


# Operands that peers read or write in place, by op: their heap offsets must agree across ranks.
_SHARED = {"gemm_all_scatter": "c", "gemm_all_reduce": "c", "all_gather_gemm": "a"}


def _agree(ctx, op, variant, v, cfg, a, b, c, a_gathered=None, scales=(None, None)):
    """Collective on the first call of this signature: compare it across ranks (iris/consistency.py); FP8 scales
    included (per-tensor on one rank and row-wise on another is a mismatch)."""
    if ctx.get_num_ranks() > 1:
        shared = {"a": a, "c": c}.get(_SHARED.get(op))
        consistency.first_call(ctx, (op, variant, v.name, repr(cfg), consistency.describe(a), consistency.describe(b),
                                     consistency.describe(c), consistency.describe(a_gathered),
                                     *map(consistency.describe, scales), consistency.offset(ctx, shared)))


def _guarded(op, ctx, call, *args):
    """call(*args) with the context's fault state: raise at once if broken; break it on a fault (iris/health.py).
    With IRIS_DEBUG_CHECKS=1, compare the call's arguments across ranks first (prepared calls included)."""
    if getattr(ctx, "_broken", None) is not None:
        health.raise_broken(ctx, op)
    try:
        if consistency.EVERY_CALL and ctx.get_num_ranks() > 1:
            a, b, c, variant, config, *extra = args
            shared = {"a": a, "c": c}.get(_SHARED.get(op))
            consistency.agree(ctx, "the call's arguments", (op, variant, repr(config), *map(consistency.describe, (
                a, b, c, *extra)), consistency.offset(ctx, shared)), op)
        return call(ctx, *args)
    except BaseException as e:
        health.on_error(ctx, op, e)
        raise


def check_capture(backend, v):
    """Refuse a variant that a CUDA graph may not capture (registry: capture=False) while the stream is capturing."""
    if not v.capture and backend == "cuda" and torch.cuda.is_current_stream_capturing():
        raise ValueError(f"{v.op}/{v.name} cannot be captured into a CUDA graph: work on one of its streams waits on "
                         f"flags raised on another, which needs both to run at once, and CUDA does not promise that "
                         f"for the branches of a graph (a captured tensor-parallel MLP step with copy-engine variants "
                         f"deadlocked on two H200s). Call it outside capture, or pick another variant for graphs "
                         f"(variant='auto' does)")


def _run(ctx, v, config, make, *tensors, prepare=None):
    """v.run(make()), replayed from a captured graph when these operands were seen before (iris/replay.py): one
    graph launch instead of the host work and the 2-5 Triton launches of a call. Baselines run as users run them, and
    variants a graph may not hold (registry: Variant.capture) launch straight to their streams. prepare=(signature,
    result, call) offers the call for preparing (_prepared)."""
    if v.pattern == "baseline" or ctx.tracer is not None or not v.capture:
        return v.run(make())
    key = (v.op, v.name, config, *map(tensor_key, tensors))
    if prepare is not None and prepare[0] is not None:
        sig, result, call = prepare
        ctx.replay.prepare(sig, call, key=key, result=result)
    ctx.replay(key, lambda: v.run(make()))


def _prepared(ctx, op, a, b, c, variant, config, *extra):
    """(signature, prepared call) of a front-door call: from the third call on the same operands (addresses,
    shapes, strides, dtypes: all the checks look at) with the same variant and config, the call is its graph's
    launch alone, without the checks, auto's pick and the problem set-up (24-53 against 8-16 µs of host time per
    call on an H100 VM, results/current/host/eager_launch/eager_97fa10e/). Under an outer capture, a prepared call runs
    in full (auto picks per mode); none is used while an iris.Tracer records, and fused_ops.tune drops them (auto's
    picks change)."""
    if ctx.tracer is not None:
        return None, None
    return ctx.replay.lookup((op, tensor_key(a), tensor_key(b), tensor_key(c), variant, config,
                              *map(tensor_key, extra)))


def _set_up_capture_pick(ctx, op, variant, a, b, again, exclude=()):
    """After an eager auto call: run once more with the variant auto would pick under capture, if it is another one
    that has not run on this shape yet (auto.capture_pick_to_set_up), so that its workspace exists before a capture."""
    if variant == "auto":
        other = auto.capture_pick_to_set_up(ctx, op, *auto.global_shape(ctx, op, a, b), a.dtype, exclude)
        if other is not None:
            again(other)


def plan(ctx, op, a, b, c, variant="auto", config=None, scale_a=None, scale_b=None):
    """(variant, config) that `op` would run on these operands: auto's pick, and the launch configuration with the
    per-device defaults filled in (None for the baselines, which run torch's own kernels). Launches nothing; checks
    the operands and the variant as a call does, but not c's shape."""
    v, config = _variant(ctx, op, variant, a, b, c, config, heap_output=op in ("gemm_all_scatter", "gemm_all_reduce"),
                         scales=(scale_a, scale_b))
    return (v.name, None) if v.pattern == "baseline" else (v.name, _problem(ctx, op, v, a, b, c, config).cfg)


def _problem(ctx, op, v, a, b, c, config, a_gathered=None, scales=(None, None)):
    """The Problem of this rank's GEMM: (M x K) @ (K x N) over its operands' shapes, with the rows of one shard for
    the row-sharded ops."""
    world, m, n, k = ctx.get_num_ranks(), a.shape[0], b.shape[1], a.shape[1]
    m, m_local = {"all_gather_gemm": (m * world, m), "gemm_reduce_scatter": (m, m // world)}.get(op, (m, None))
    return Problem(ctx=ctx, op=op, variant=v, a=a, b=b, c=c, m=m, n=n, k=k, config=config, m_local=m_local,
                   a_gathered=a_gathered, scale_a=scales[0], scale_b=scales[1])


def gemm_all_scatter(ctx, a, b, c, variant="auto", config=None, scale_a=None, scale_b=None):
    return _guarded("gemm_all_scatter", ctx, _gemm_all_scatter_call, a, b, c, variant, config, scale_a, scale_b)


def _gemm_all_scatter_call(ctx, a, b, c, variant, config, *scales):
    sig, call = _prepared(ctx, "gemm_all_scatter", a, b, c, variant, config, *scales)
    return call() if call is not None else _gemm_all_scatter(ctx, a, b, c, variant, config, sig, scales)


def _gemm_all_scatter(ctx, a, b, c, variant, config, sig=None, scales=(None, None)):
    v, cfg = _variant(ctx, "gemm_all_scatter", variant, a, b, c, config, scales=scales)
    m, n_local, world = a.shape[0], b.shape[1], ctx.get_num_ranks()
    if tuple(c.shape) != (m, n_local * world):
        raise ValueError(f"gemm_all_scatter: c must be M x N = {m} x {n_local * world} (b holds N/world = {n_local} "
                         f"columns on each of {world} ranks), got {tuple(c.shape)}")
    _agree(ctx, "gemm_all_scatter", variant, v, cfg, a, b, c, scales=scales)
    _run(ctx, v, cfg, lambda: _problem(ctx, "gemm_all_scatter", v, a, b, c, cfg, scales=scales), a, b, c, *scales,
         prepare=(sig, c, lambda: _gemm_all_scatter(ctx, a, b, c, variant, config, scales=scales)))
    _set_up_capture_pick(ctx, "gemm_all_scatter", variant, a, b,
                         lambda v: gemm_all_scatter(ctx, a, b, c, v, config, *scales))
    return c


def gemm_all_reduce(ctx, a, b, c, variant="auto", config=None, scale_a=None, scale_b=None):
    return _guarded("gemm_all_reduce", ctx, _gemm_all_reduce_call, a, b, c, variant, config, scale_a, scale_b)


def _gemm_all_reduce_call(ctx, a, b, c, variant, config, *scales):
    sig, call = _prepared(ctx, "gemm_all_reduce", a, b, c, variant, config, *scales)
    return call() if call is not None else _gemm_all_reduce(ctx, a, b, c, variant, config, sig, scales)


def _gemm_all_reduce(ctx, a, b, c, variant, config, sig=None, scales=(None, None)):
    v, cfg = _variant(ctx, "gemm_all_reduce", variant, a, b, c, config, scales=scales)
    m, n = a.shape[0], b.shape[1]
    if tuple(c.shape) != (m, n):
        raise ValueError(f"gemm_all_reduce: c must be M x N = {m} x {n}, got {tuple(c.shape)}")
    _agree(ctx, "gemm_all_reduce", variant, v, cfg, a, b, c, scales=scales)
    _run(ctx, v, cfg, lambda: _problem(ctx, "gemm_all_reduce", v, a, b, c, cfg, scales=scales), a, b, c, *scales,
         prepare=(sig, c, lambda: _gemm_all_reduce(ctx, a, b, c, variant, config, scales=scales)))
    _set_up_capture_pick(ctx, "gemm_all_reduce", variant, a, b,
                         lambda v: gemm_all_reduce(ctx, a, b, c, v, config, *scales))
    return c


def all_gather_gemm(ctx, a, b, c, variant="auto", config=None, a_gathered=None, scale_a=None, scale_b=None):
    return _guarded("all_gather_gemm", ctx, _all_gather_gemm_call, a, b, c, variant, config, a_gathered, scale_a,
                    scale_b)


def _all_gather_gemm_call(ctx, a, b, c, variant, config, a_gathered, *scales):
    sig, call = _prepared(ctx, "all_gather_gemm", a, b, c, variant, config, a_gathered, *scales)
    return call() if call is not None else _all_gather_gemm(ctx, a, b, c, variant, config, a_gathered, sig, scales)


def _all_gather_gemm(ctx, a, b, c, variant, config, a_gathered, sig=None, scales=(None, None)):
    # c is written by this rank only: it may live anywhere on the device; `a` is read by peers (staged on the heap
    # when it is not there already).
    exclude = ("pull",) if a_gathered is not None else ()
    v, cfg = _variant(ctx, "all_gather_gemm", variant, a, b, c, config, heap_output=False, exclude=exclude,
                      scales=scales)
    world = ctx.get_num_ranks()
    m_local, k = a.shape
    m, n_local = m_local * world, b.shape[1]
    if tuple(c.shape) != (m, n_local):
        raise ValueError(f"all_gather_gemm: c must be M x N/world = {m} x {n_local} (a holds M/world = {m_local} rows "
                         f"on each of {world} ranks), got {tuple(c.shape)}")
    if a_gathered is not None:
        if tuple(a_gathered.shape) != (m, k) or a_gathered.dtype != a.dtype or not a_gathered.is_contiguous():
            raise ValueError(f"all_gather_gemm: a_gathered must be a contiguous {m} x {k} {a.dtype} tensor, got "
                             f"{tuple(a_gathered.shape)} {a_gathered.dtype}")
    if not a.is_contiguous():
        raise ValueError("all_gather_gemm: a must be contiguous (its rows are copied and read by peers)")
    _agree(ctx, "all_gather_gemm", variant, v, cfg, a, b, c, a_gathered, scales)
    make = lambda: _problem(ctx, "all_gather_gemm", v, a, b, c, cfg, a_gathered, scales)  # noqa: E731
    copy_out = a_gathered is not None and v.pattern != "baseline" and not ctx.is_symmetric(a_gathered)
    _run(ctx, v, cfg, make, a, b, c, a_gathered, *scales,  # a copy after the launches is not in their graph
         prepare=None if copy_out else (sig, c, lambda: _all_gather_gemm(ctx, a, b, c, variant, config, a_gathered,
                                                                         scales=scales)))
    if copy_out:
        a_gathered.copy_(make().gathered_buffer())
    _set_up_capture_pick(ctx, "all_gather_gemm", variant, a, b,
                         lambda v: all_gather_gemm(ctx, a, b, c, v, config, a_gathered, *scales), exclude)
    return c


def gemm_reduce_scatter(ctx, a, b, c, variant="auto", config=None, scale_a=None, scale_b=None):
    return _guarded("gemm_reduce_scatter", ctx, _gemm_reduce_scatter_call, a, b, c, variant, config, scale_a, scale_b)


def _gemm_reduce_scatter_call(ctx, a, b, c, variant, config, *scales):
    sig, call = _prepared(ctx, "gemm_reduce_scatter", a, b, c, variant, config, *scales)
    return call() if call is not None else _gemm_reduce_scatter(ctx, a, b, c, variant, config, sig, scales)


def _gemm_reduce_scatter(ctx, a, b, c, variant, config, sig=None, scales=(None, None)):
    v, cfg = _variant(ctx, "gemm_reduce_scatter", variant, a, b, c, config, scales=scales, heap_output=False)
    world = ctx.get_num_ranks()
    m, n = a.shape[0], b.shape[1]
    if m % world:
        raise ValueError(f"gemm_reduce_scatter: M={m} must be divisible by the world size {world}")
    if tuple(c.shape) != (m // world, n):
        raise ValueError(f"gemm_reduce_scatter: c must be M/world x N = {m // world} x {n}, got {tuple(c.shape)}")
    _agree(ctx, "gemm_reduce_scatter", variant, v, cfg, a, b, c, scales=scales)
    _run(ctx, v, cfg, lambda: _problem(ctx, "gemm_reduce_scatter", v, a, b, c, cfg, scales=scales), a, b, c, *scales,
         prepare=(sig, c, lambda: _gemm_reduce_scatter(ctx, a, b, c, variant, config, scales=scales)))
    _set_up_capture_pick(ctx, "gemm_reduce_scatter", variant, a, b,
                         lambda v: gemm_reduce_scatter(ctx, a, b, c, v, config, *scales))
    return c

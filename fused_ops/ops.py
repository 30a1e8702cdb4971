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

FP8: every op also takes scale_a=None, scale_b=None. With a and b float8_e4m3fn (b column-major, as torch._scaled_mm
wants it) they are fp32 scales, per-tensor (one element) or row-wise (scale_a: a.shape[0] x 1, this rank's rows of a;
scale_b: 1 x b.shape[1]); c is bfloat16, float16 or float32 and holds (a * scale_a) @ (b * scale_b), fp32-accumulated.
The communication moves that result; all_gather_gemm moves the FP8 rows of A and their row scales. Which variants take
FP8: fused_ops.list_variants(op, backend, "float8_e4m3fn") (fused_ops/fp8.py).

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

import functools
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import torch

from iris import consistency, health
from iris.replay import tensor_key

from . import auto, fp8, registry
from .problem import DTYPES, Problem


class Dims(NamedTuple):
    """This rank's GEMM, (m x k) @ (k x n), and for the row-sharded ops the rows of one shard (m_local)."""
    m: int
    n: int
    k: int
    m_local: int = None


@dataclass(frozen=True)
class Operand:
    """An optional operand beyond a, b, c, passed by keyword (all_gather_gemm's a_gathered). The call path treats
    them all alike: each is part of the call's signature (prepared-call and replay keys, the first-call agreement
    across ranks) and reaches Problem as the keyword of its name, so a new one is an entry in its ops' specs."""
    name: str
    check: Callable  # check(op, value, a, b, dims): raise on a bad value; called with None too ("given iff" rules)
    exclude: tuple = ()  # variants `auto` skips while it is given (a_gathered: pull never materializes it)
    # staged(problem): where the variants leave it on the heap, copied into the caller's tensor after the launches
    # when that one is not on the heap (such a call is not prepared: the copy is not in the launches' graph)
    staged: Callable = None


@dataclass(frozen=True)
class OpSpec:
    """What differs between the catalog's front doors; _call runs one sequence for all of them."""
    name: str
    layout: str  # the registry's one-line description of who holds what
    shared: str  # the operand peers read or write in place ("a" or "c"; None: neither): its heap offset must agree
    heap_output: bool  # c must be on the symmetric heap (peers write into it); False: c may live anywhere
    rows: Callable  # rows(m, world) -> (this rank's GEMM rows, rows of one shard or None), m: a's rows
    out: Callable  # out(m, n, world) -> (c's shape, how the message spells it), m, n: a's rows, b's columns; may raise
    extras: tuple = ()  # its Operands, in keyword order
    names: tuple = field(init=False)  # their names: the keywords of the public function, in this order

    def __post_init__(self):
        object.__setattr__(self, "names", tuple(x.name for x in self.extras))

    def dims(self, a, b, world):
        m, m_local = self.rows(a.shape[0], world)
        return Dims(m, b.shape[1], a.shape[1], m_local)

    def values(self, extra):
        """The extra operands' values in the spec's order (None where not given) from a mapping by name."""
        return tuple(map(extra.get, self.names)) if extra else ()

    def exclude(self, values):
        """Variants `auto` may not pick for a call given these extra operands."""
        return tuple(name for x, t in zip(self.extras, values) if t is not None for name in x.exclude)


def _check_gathered(op, g, a, b, dims):
    """a_gathered receives gather(A): M x K in a's dtype, contiguous (its rows are written whole)."""
    if g is None:
        return
    if not isinstance(g, torch.Tensor):
        raise TypeError(f"{op}: a_gathered must be a torch.Tensor or None, got {type(g).__name__}")
    if tuple(g.shape) != (dims.m, dims.k) or g.dtype != a.dtype or not g.is_contiguous():
        raise ValueError(f"{op}: a_gathered must be a contiguous {dims.m} x {dims.k} {a.dtype} tensor, got "
                         f"{tuple(g.shape)} {g.dtype}")


def _reduce_scatter_out(m, n, world):
    if m % world:
        raise ValueError(f"gemm_reduce_scatter: M={m} must be divisible by the world size {world}")
    return (m // world, n), f"M/world x N = {m // world} x {n}"


A_GATHERED = Operand("a_gathered", _check_gathered, exclude=("pull",), staged=lambda p: p.gathered_buffer())
# FP8 (fused_ops/fp8.py): given iff a and b are float8_e4m3fn; the GEMM loop applies them in its epilogue
SCALES = (Operand("scale_a", functools.partial(fp8.check_scale, "scale_a")),
          Operand("scale_b", functools.partial(fp8.check_scale, "scale_b")))

GEMM_ALL_SCATTER = OpSpec(
    "gemm_all_scatter", "A (M x K) everywhere, B split by columns; every rank ends with C (M x N)",
    shared="c", heap_output=True, rows=lambda m, w: (m, None),
    out=lambda m, n, w: ((m, n * w), f"M x N = {m} x {n * w} (b holds N/world = {n} columns on each of {w} ranks)"),
    extras=SCALES)
GEMM_ALL_REDUCE = OpSpec(
    "gemm_all_reduce", "A split by columns, B split by rows (K sharded); every rank ends with the sum C (M x N)",
    shared="c", heap_output=True, rows=lambda m, w: (m, None), out=lambda m, n, w: ((m, n), f"M x N = {m} x {n}"),
    extras=SCALES)
# c is written by this rank only: it may live anywhere on the device; `a` is read by peers (staged on the heap when
# it is not there already).
ALL_GATHER_GEMM = OpSpec(
    "all_gather_gemm", "A split by rows, B split by columns; every rank ends with its M x N/world block of "
                       "gather(A) @ B (and optionally the gathered A)",
    shared="a", heap_output=False, rows=lambda m, w: (m * w, m),
    out=lambda m, n, w: ((m * w, n), f"M x N/world = {m * w} x {n} (a holds M/world = {m} rows on each of {w} ranks)"),
    extras=(A_GATHERED, *SCALES))
GEMM_REDUCE_SCATTER = OpSpec(
    "gemm_reduce_scatter", "A split by columns, B split by rows (K sharded); every rank ends with its M/world rows "
                           "of the sum",
    shared=None, heap_output=False, rows=lambda m, w: (m, m // w), out=_reduce_scatter_out, extras=SCALES)

SPECS = {s.name: s for s in (GEMM_ALL_SCATTER, GEMM_ALL_REDUCE, ALL_GATHER_GEMM, GEMM_REDUCE_SCATTER)}
for _spec in SPECS.values():
    registry.define_op(_spec.name, _spec.layout)


def gemm_all_scatter(ctx, a, b, c, variant="auto", config=None, scale_a=None, scale_b=None):
    """Collective: every rank ends with C = A @ B, B split by columns (module docstring). Returns c."""
    return _call(GEMM_ALL_SCATTER, ctx, a, b, c, variant, config, scale_a, scale_b)


def gemm_all_reduce(ctx, a, b, c, variant="auto", config=None, scale_a=None, scale_b=None):
    """Collective: every rank ends with C = sum over ranks of a_r @ b_r (module docstring). Returns c."""
    return _call(GEMM_ALL_REDUCE, ctx, a, b, c, variant, config, scale_a, scale_b)


def all_gather_gemm(ctx, a, b, c, variant="auto", config=None, a_gathered=None, scale_a=None, scale_b=None):
    """Collective: this rank's N/world columns of gather(A) @ B (module docstring). Returns c."""
    return _call(ALL_GATHER_GEMM, ctx, a, b, c, variant, config, a_gathered, scale_a, scale_b)


def gemm_reduce_scatter(ctx, a, b, c, variant="auto", config=None, scale_a=None, scale_b=None):
    """Collective: this rank's M/world rows of sum over ranks of a_r @ b_r (module docstring). Returns c."""
    return _call(GEMM_REDUCE_SCATTER, ctx, a, b, c, variant, config, scale_a, scale_b)


def plan(ctx, op, a, b, c, variant="auto", config=None, timing=None, **extra):
    """(variant, config) that `op` would run on these operands: auto's pick, and the launch configuration with the
    per-device defaults filled in (None for the baselines, which run torch's own kernels). Launches nothing; checks
    the operands and the variant as a call does, but not c's shape. timing: "graph" or "eager", the mode auto picks
    for (default: this call's, auto.mode: a call under CUDA-graph capture may run another variant than an eager
    one). `extra`: the op's optional operands, as a call takes them (they can change auto's pick)."""
    spec = _spec(op)
    unknown = sorted(set(extra) - set(spec.names))
    if unknown:
        raise TypeError(f"plan: {op} takes no operand {', '.join(unknown)}; its optional operands: "
                        f"{', '.join(spec.names) or 'none'}")
    values = spec.values(extra)
    v, config = _variant(ctx, op, variant, a, b, c, config, spec.heap_output,
                         _exclude(spec, ctx, variant, a, b, c, values), timing)
    return (v.name, None) if v.pattern == "baseline" else (v.name, _problem(ctx, spec, v, a, b, c, config, values).cfg)


def _exclude(spec, ctx, variant, a, b, c, values):
    """The variants auto must pass over for this call: those its optional operands rule out, and those that refuse
    it on the host (auto.refused)."""
    return spec.exclude(values) + (auto.refused(ctx, spec.name, a, b, c) if variant == "auto" else ())


def _spec(op):
    """The spec of a GEMM op, raising registry.UnknownName (naming the valid ops) for an unknown name."""
    registry.check_op(op)
    if op not in SPECS:
        raise ValueError(f"{op} is not a GEMM+communication op; plan() covers {', '.join(SPECS)}")
    return SPECS[op]


def _call(spec, ctx, a, b, c, variant, config, *extra):
    """Every front-door call: raise at once on a broken context and break it on a fault (iris/health.py); with
    IRIS_DEBUG_CHECKS=1 compare the call's arguments across ranks (prepared calls included); then the prepared call
    of this signature if there is one (_prepared), else the call in full (_full). `extra`: the values of
    spec.extras, in their order (positional: packing them by name cost a prepared call 0.3 µs more)."""
    if getattr(ctx, "_broken", None) is not None:
        health.raise_broken(ctx, spec.name)
    try:
        if consistency.EVERY_CALL and ctx.get_num_ranks() > 1:
            consistency.agree(ctx, "the call's arguments", _fingerprint(ctx, spec, (variant, repr(config)), a, b, c,
                                                                        extra), spec.name)
        sig, call = _prepared(ctx, spec.name, a, b, c, variant, config, *extra)
        return call() if call is not None else _full(spec, ctx, a, b, c, variant, config, extra, sig)
    except BaseException as e:
        health.on_error(ctx, spec.name, e)
        raise


def _full(spec, ctx, a, b, c, variant, config, extra, sig=None):
    """A call in full: the variant (auto's pick) and its checks, the op's shape checks, the first-call agreement
    across ranks, the launches (replayed from a graph on repeated operands; offered for preparing under `sig`), the
    staged copy-out of extra operands, and after an eager auto call the set-up of auto's pick under capture."""
    exclude = _exclude(spec, ctx, variant, a, b, c, extra)
    v, cfg = _variant(ctx, spec.name, variant, a, b, c, config, spec.heap_output, exclude)
    _check_shapes(spec, ctx, a, b, c, extra)
    if ctx.get_num_ranks() > 1:  # collective on the first call of this signature (iris/consistency.py)
        consistency.first_call(ctx, _fingerprint(ctx, spec, (variant, v.name, repr(cfg)), a, b, c, extra))
    make = lambda: _problem(ctx, spec, v, a, b, c, cfg, extra)  # noqa: E731
    staged = [(x, t) for x, t in zip(spec.extras, extra) if x.staged is not None and t is not None and
              v.pattern != "baseline" and not ctx.is_symmetric(t)]
    again = lambda: _full(spec, ctx, a, b, c, variant, config, extra)  # noqa: E731
    _run(ctx, v, cfg, make, a, b, c, *extra, prepare=None if staged else (sig, c, again))
    for x, t in staged:
        t.copy_(x.staged(make()))
    _set_up_capture_pick(ctx, spec.name, variant, a, b, lambda other: _call(spec, ctx, a, b, c, other, config, *extra),
                         exclude)
    return c


def _fingerprint(ctx, spec, head, a, b, c, values):
    """(op, *head, shapes and dtypes of every operand, heap offset of the one peers reach): what ranks must agree
    on for their kernels to meet (iris/consistency.py)."""
    shared = {"a": a, "c": c}.get(spec.shared)
    return (spec.name, *head, *map(consistency.describe, (a, b, c, *values)), consistency.offset(ctx, shared))


def _check_shapes(spec, ctx, a, b, c, values):
    """The op's own rules, after those every op shares (_check): c's shape, the extra operands, and a contiguous
    `a` where peers read it."""
    world = ctx.get_num_ranks()
    shape, text = spec.out(a.shape[0], b.shape[1], world)
    if tuple(c.shape) != shape:
        raise ValueError(f"{spec.name}: c must be {text}, got {tuple(c.shape)}")
    dims = spec.dims(a, b, world)
    for x, t in zip(spec.extras, values):
        x.check(spec.name, t, a, b, dims)
    if spec.shared == "a" and not a.is_contiguous():
        raise ValueError(f"{spec.name}: a must be contiguous (its rows are copied and read by peers)")


def _problem(ctx, spec, v, a, b, c, config, extra):
    """The Problem of this rank's GEMM: (M x K) @ (K x N) over its operands' shapes, with the rows of one shard for
    the row-sharded ops, and the extra operands (their values in spec order) by name."""
    d = spec.dims(a, b, ctx.get_num_ranks())
    return Problem(ctx=ctx, op=spec.name, variant=v, a=a, b=b, c=c, m=d.m, n=d.n, k=d.k, config=config,
                   m_local=d.m_local, **dict(zip(spec.names, extra)))


def _check(ctx, op, a, b, c, heap_output=True):
    """The operand rules every op shares (types, 2-D, dtypes, device, inner dimensions, c on the heap where peers
    write it): refused on the host, naming what was wrong, before anything launches."""
    where = f"{op}:"
    for name, t in (("a", a), ("b", b), ("c", c)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{where} {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2:
            raise ValueError(f"{where} {name} must be 2-D, got shape {tuple(t.shape)}")
        if t.device.type != ctx.get_device().type:
            raise ValueError(f"{where} {name} is on {t.device}, the heap is on {ctx.get_device()}")
    _check_dtypes(ctx, where, a, b, c)
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"{where} inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)}")
    if min(a.shape[0], a.shape[1], b.shape[1]) < 1:
        raise ValueError(f"{where} empty operands: a {tuple(a.shape)}, b {tuple(b.shape)}")
    if heap_output:
        ctx.require_symmetric(c, f"{where} c")
    if not c.is_contiguous():
        raise ValueError(f"{where} c must be contiguous")


def _check_dtypes(ctx, where, a, b, c):
    """The dtype rules: one of DTYPES, shared by a, b and c (the kernels compute in it and write it), and not
    bfloat16 under the Triton interpreter, which computes it wrongly. FP8: a and b float8_e4m3fn (b column-major),
    c one of DTYPES (fp8.check_operands)."""
    if fp8.check_operands(where, a, b, c):
        if c.dtype == torch.bfloat16 and ctx.backend == "cpu":
            raise TypeError(f"{where} c in bfloat16 is not supported on the CPU backend (the Triton interpreter "
                            f"computes it wrongly); use float16 or float32")
        return
    for name, t in (("a", a), ("b", b), ("c", c)):
        if t.dtype not in DTYPES:
            raise TypeError(f"{where} {name} has dtype {t.dtype}; expected one of float16, bfloat16, float32")
    if not (a.dtype == b.dtype == c.dtype):
        raise TypeError(f"{where} a, b, c must share one dtype, got {a.dtype}, {b.dtype}, {c.dtype}")
    if a.dtype == torch.bfloat16 and ctx.backend == "cpu":
        raise TypeError(f"{where} bfloat16 is not supported on the CPU backend (the Triton interpreter computes it "
                        f"wrongly); use float16 or float32")


def _variant(ctx, op, variant, a, b, c, config, heap_output=True, exclude=(), timing=None):
    """(the variant to run, its config): auto's pick (for this timing mode; default: the call's), with the config
    tune() found for it here when the caller gave none."""
    registry.check_op(op)
    _check(ctx, op, a, b, c, heap_output)
    if variant == "auto":
        shape = auto.global_shape(ctx, op, a, b)
        variant = auto.choose(ctx, op, *shape, a.dtype, exclude, timing)
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
    why = v.refusal(*auto.global_shape(ctx, op, a, b), ctx.get_num_ranks(), a.dtype, c.dtype) if v.refuses else ""
    if why:
        raise ValueError(why)
    return v, config


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


"""One registry for the catalog: ops, their variants by name, and each variant's pattern class."""

import os
from dataclasses import dataclass, field

PATTERNS = {
    "baseline": "library GEMM plus a library collective, one after the other",
    "bulk-synchronous": "all SMs compute, a barrier, then all SMs communicate",
    "fused sequential": "one persistent kernel; each program communicates a tile right after computing it",
    "producer-consumer": "a GEMM kernel and a communication kernel on two streams, linked by per-tile flags",
    "workgroup-specialized": "one kernel; some programs compute tiles and release per-tile flags, the others poll the "
                             "flags and communicate",
    "copy-engine": "one persistent GEMM on every SM; the copy engines move the data on a side stream, ordered with "
                   "the GEMM by per-chunk flags (raised and awaited by the stream itself)",
}


# FUSED_OPS_CAPTURE_UNSAFE=op/variant[,op/variant...]: let these variants be captured anyway, to find out on GPUs
# which of them a CUDA graph deadlocks (scripts/gpu_session.sh mlpcapture). Not for use otherwise.
CAPTURE_UNSAFE = set(filter(None, os.environ.get("FUSED_OPS_CAPTURE_UNSAFE", "").split(",")))


@dataclass
class Variant:
    op: str
    name: str
    pattern: str
    summary: str
    run: callable
    backends: tuple = ("cpu", "cuda")
    dtypes: tuple = ("float16", "bfloat16", "float32")
    cpu_dtypes: tuple = None  # narrower on the CPU backend (the interpreter's limits), with the reason below
    cpu_note: str = ""
    split_k: bool = False  # its GEMM loop runs Config.split_k slices of K per tile (fused_ops.gemm.gemm_unit)
    shard_tiles: bool = False  # default tiles sized for one rank's shard of M: the GEMM on it hides the peers' copies
    split_default: bool = True  # the defaults may split its tiles (config.default_config); False: on request only
    # False: work on one stream of a call waits on a flag that work on another stream of the same call raises (a
    # kernel and the copy engines, or two kernels). That is correct only while both run at once: launched in the
    # right order on streams, they do; CUDA promises no such concurrency between the branches of a graph, and a
    # captured tensor-parallel MLP step with copy-engine variants in it deadlocked (results/archive/NOTES.md). Such a
    # variant is refused under a caller's CUDA-graph capture, `auto` skips it there, and its eager calls launch
    # straight to the streams instead of replaying a graph of their launches (iris/replay.py).
    capture: bool = True
    # Calls it cannot take, known before launch: refuses(m, n, k, world, dtype, out_dtype) -> why ("" where it can),
    # M, N, K global as auto sees them, dtype names (out_dtype None: not known yet). The call refuses them on the host;
    # auto and the sweeps pass the variant over there.
    refuses: callable = None

    def __post_init__(self):
        if f"{self.op}/{self.name}" in CAPTURE_UNSAFE:  # diagnosis only: may deadlock (Variant.capture)
            self.capture = True

    @property
    def one_gpu_per_rank(self):
        """Refused where ranks share a GPU: the libraries refuse it (baselines), or the GEMM spins on flags that the
        peers' copy engines raise while two processes' kernels on one GPU only take turns (copy-engine)."""
        return self.pattern in ("baseline", "copy-engine")

    def dtypes_on(self, backend):
        return self.cpu_dtypes if backend == "cpu" and self.cpu_dtypes is not None else self.dtypes

    def refusal(self, m, n, k, world, dtype, out_dtype=None):
        """Why this variant cannot take a call of global shape m x n x k on `world` ranks with `dtype` operands and an
        `out_dtype` result (None: whichever) ("" if it can). Host only, free."""
        if not self.refuses:
            return ""
        name = lambda d: None if d is None else str(d).replace("torch.", "")  # noqa: E731
        return self.refuses(m, n, k, world, name(dtype), name(out_dtype))


@dataclass
class Op:
    name: str
    layout: str
    variants: dict = field(default_factory=dict)
    kind: str = "gemm"  # "gemm": the (a, b, c) GEMM+collective ops; "moe": expert parallelism (fused_ops/moe)


OPS = {}


class UnknownName(KeyError):
    """An op or variant name the registry does not know. A KeyError (as a dict lookup would raise), whose message
    names the valid choices and is printed as it is (KeyError's own str() quotes it)."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


def define_op(name, layout, kind="gemm"):
    OPS[name] = Op(name=name, layout=layout, kind=kind)


def register(op, name, pattern, summary, backends=("cpu", "cuda"), dtypes=("float16", "bfloat16", "float32"),
             cpu_dtypes=None, cpu_note="", split_k=False, shard_tiles=False, capture=True, split_default=True,
             refuses=None):
    if pattern not in PATTERNS:
        raise ValueError(f"unknown pattern class {pattern!r}; known: {sorted(PATTERNS)}")

    def wrap(fn):
        OPS[op].variants[name] = Variant(op=op, name=name, pattern=pattern, summary=summary, run=fn,
                                         backends=tuple(backends), dtypes=tuple(dtypes),
                                         cpu_dtypes=None if cpu_dtypes is None else tuple(cpu_dtypes),
                                         cpu_note=cpu_note, split_k=split_k,
                                         shard_tiles=shard_tiles, split_default=split_default, capture=capture,
                                         refuses=refuses)
        return fn

    return wrap


def list_ops(kind="gemm"):
    """Names of the ops of one kind ("gemm": the GEMM+collective ops, "moe"; None: all)."""
    return [name for name, op in OPS.items() if kind is None or op.kind == kind]


def list_variants(op, backend=None, dtype=None, capture=False):
    """Variant names of `op`, optionally only those that run on `backend` and support `dtype` (e.g. "float16"), and
    with capture=True only those that a CUDA graph may capture."""
    variants = _op(op).variants.values()
    return [v.name for v in variants if (backend is None or backend in v.backends) and
            (dtype is None or str(dtype).replace("torch.", "") in v.dtypes_on(backend)) and (v.capture or not capture)]


def _op(op):
    if op not in OPS:
        close = [name for name in OPS if _similar(str(op), name)]
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownName(f"unknown op {op!r}{hint}; known ops: {', '.join(OPS)}")
    return OPS[op]


def check_op(op):
    """Raise UnknownName, naming the valid ops, unless `op` is one (before anything looks `op` up elsewhere)."""
    _op(op)


def _similar(a, b):
    import difflib

    return difflib.SequenceMatcher(None, a, b).ratio() > 0.75


def get(op, name, backend=None):
    variants = _op(op).variants
    if name not in variants:
        raise UnknownName(f"unknown variant {name!r} of {op}; known variants: {', '.join(variants)}")
    v = variants[name]
    if backend is not None and backend not in v.backends:
        raise ValueError(f"variant {op}/{name} runs on {', '.join(v.backends)} only, not on the {backend} backend")
    return v

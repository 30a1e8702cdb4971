"""Device API: remote memory access inside any `@triton.jit` kernel.

Names and argument order follow the reference (Iris): a pointer is always an address in the *current* rank's heap,
translated to the peer's mapping of the same heap offset.

Translation adds one scalar, (base[to] - base[from]) / element size, to the pointer. Every heap base is 256-byte
aligned, so that scalar is declared a multiple of 16 elements and Triton's alignment and contiguity analysis of the
original pointer carries over: translated accesses stay as wide (16-byte) as local ones, with no hints from callers.

Flags: `signal` puts a CTA barrier before its release (Triton's release atomic is issued by one thread and does not
cover the other threads' stores otherwise); `wait` polls with an acquire load and is bounded by
IRIS_WAIT_TIMEOUT_S (default 30 s). A timed-out wait records rank, program, flag offset, expected and observed value in
the rank's error record (the first 64 bytes of its heap) and lets the kernel finish; the host raises
`iris.DeviceWaitTimeout` at the next `barrier()` or `check_device_errors()`. Under the interpreter it raises at once.
"""

import ctypes
import sys
import time

import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from . import settings
from ._backend import INTERPRET

# Programmatic dependent launch for the project's kernels on GPUs (IRIS_PDL=0 turns it off, for A/B timing).
PDL_ENABLED = settings.value("IRIS_PDL") and not INTERPRET

WAIT_TIMEOUT_S = settings.value("IRIS_WAIT_TIMEOUT_S")
_WAIT_TIMEOUT_NS = tl.constexpr(int(WAIT_TIMEOUT_S * 1e9))

# Error record layout (int64 words at offset 0 of every heap). Shared with the host decoder in host.py.
ERR_CODE, ERR_RANK, ERR_PID, ERR_OFFSET, ERR_EXPECTED, ERR_OBSERVED, ERR_CMP = range(7)
ERR_WORDS = 8
ERR_WAIT_TIMEOUT = 1
CMP_NAMES = {0: "==", 1: ">="}


class DeviceWaitTimeout(RuntimeError):
    """A device-side wait gave up: names the rank, the program and the flag it was waiting on."""


class PeerFailed(RuntimeError):
    """A wait or host exchange gave up because a peer failed (reported by iris.RankPool) or never answered."""


def take_record(words):
    """The values of a device-side error record (a few heap words that kernels set), cleared if any is set, so that
    each fault is reported once. Reads the words: a host synchronization."""
    rec = words.tolist()
    if any(rec):
        words.zero_()
    return rec


def raise_recorded_timeout(errors):
    """Raise DeviceWaitTimeout from a heap error record (see `wait`) if it holds one, and clear it."""
    rec = take_record(errors)
    if rec[ERR_CODE] == 0:
        return
    raise DeviceWaitTimeout(
        f"rank {rec[ERR_RANK]}, program {rec[ERR_PID]}: wait on the flag at heap offset {rec[ERR_OFFSET]} for a value "
        f"{CMP_NAMES.get(rec[ERR_CMP], '?')} {rec[ERR_EXPECTED]} timed out after {WAIT_TIMEOUT_S:g} s (last seen "
        f"{rec[ERR_OBSERVED]}); later waits of that kernel gave up at once, so its outputs are invalid")


# ----------------------------------------------------------------------------------------------- translation


@triton.jit
def __translate(ptr, from_rank, to_rank, heap_bases):
    elem_bytes: tl.constexpr = (ptr.dtype.element_ty.primitive_bitwidth + 7) // 8
    delta = tl.load(heap_bases + to_rank) - tl.load(heap_bases + from_rank)
    delta = tl.multiple_of(delta // elem_bytes, 16)
    return ptr + delta


translate = __translate  # public alias: translate(ptr, from_rank, to_rank, heap_bases)


@triton.jit
def _to(ptr, from_rank, to_rank, heap_bases, hint: tl.constexpr = None):
    """Translated pointer, with the reference's optional vectorization hint (an int or a tuple, one per dimension:
    the translated pointer is declared a multiple of, and contiguous over, that many elements)."""
    out = __translate(ptr, from_rank, to_rank, heap_bases)
    if hint is not None:
        out = tl.max_contiguous(tl.multiple_of(out, hint), hint)
    return out


# ----------------------------------------------------------------------------------------------- load / store
# Keywords as in the reference: `other` (value of masked-off loaded elements), cache modifiers (loads: "", ".ca",
# ".cg", ".cv"; stores: "", ".wb", ".cg", ".cs", ".wt"; PTX's names, which the reference shares), `volatile`, and
# `hint` (see _to). Defaults change nothing in the generated code.


@triton.jit
def load(pointer, to_rank, from_rank, heap_bases, mask=None, other=None, cache_modifier=None, volatile=False,
         hint: tl.constexpr = None):
    """Read `from_rank`'s copy of `pointer` (`to_rank` is the current rank)."""
    return tl.load(_to(pointer, to_rank, from_rank, heap_bases, hint), mask=mask, other=other,
                   cache_modifier=cache_modifier, volatile=volatile)


@triton.jit
def store(pointer, value, from_rank, to_rank, heap_bases, mask=None, cache_modifier=None,
          hint: tl.constexpr = None):
    """Write `value` into `to_rank`'s copy of `pointer` (`from_rank` is the current rank)."""
    tl.store(_to(pointer, from_rank, to_rank, heap_bases, hint), value, mask=mask, cache_modifier=cache_modifier)


@triton.jit
def get(from_ptr, to_ptr, from_rank, to_rank, heap_bases, mask=None, other=None, load_cache_modifier=None,
        store_cache_modifier=None, hint: tl.constexpr = None):
    """Remote read, local write: `to_ptr[i] = to_rank's from_ptr[i]` (`from_rank` is the current rank).

    This is the reference's code (its tests call `get(src, dst, cur_rank, peer, ...)`), whose docstring says the
    opposite; kernels ported from it rely on the code, so this library matches the code."""
    data = tl.load(_to(from_ptr, from_rank, to_rank, heap_bases, hint), mask=mask, other=other,
                   cache_modifier=load_cache_modifier)
    tl.store(to_ptr, data, mask=mask, cache_modifier=store_cache_modifier)


@triton.jit
def put(from_ptr, to_ptr, from_rank, to_rank, heap_bases, mask=None, other=None, load_cache_modifier=None,
        store_cache_modifier=None, hint: tl.constexpr = None):
    """Local read, remote write: `to_rank's to_ptr[i] = from_ptr[i]` (`from_rank` is the current rank)."""
    data = tl.load(from_ptr, mask=mask, other=other, cache_modifier=load_cache_modifier)
    tl.store(_to(to_ptr, from_rank, to_rank, heap_bases, hint), data, mask=mask, cache_modifier=store_cache_modifier)


@triton.jit
def copy(src_ptr, dst_ptr, from_rank, to_rank, cur_rank, heap_bases, mask=None, other=None,
         load_cache_modifier=None, store_cache_modifier=None, hint: tl.constexpr = None):
    """`to_rank's dst_ptr[i] = from_rank's src_ptr[i]`, issued by `cur_rank` (any of the three may differ)."""
    data = tl.load(_to(src_ptr, cur_rank, from_rank, heap_bases, hint), mask=mask, other=other,
                   cache_modifier=load_cache_modifier)
    tl.store(_to(dst_ptr, cur_rank, to_rank, heap_bases, hint), data, mask=mask, cache_modifier=store_cache_modifier)


# ----------------------------------------------------------------------------------------------- atomics
# All return the old value. `sem` in {None, "relaxed", "acquire", "release", "acq_rel"}, `scope` in
# {None, "cta", "gpu", "sys"}; flags between GPUs want scope="sys". `hint` as for load/store.


@triton.jit
def atomic_add(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    return tl.atomic_add(_to(pointer, from_rank, to_rank, heap_bases, hint), val, mask=mask, sem=sem, scope=scope)


@triton.jit
def atomic_sub(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    return tl.atomic_add(_to(pointer, from_rank, to_rank, heap_bases, hint), -val, mask=mask, sem=sem, scope=scope)


@triton.jit
def atomic_cas(pointer, cmp, val, from_rank, to_rank, heap_bases, sem=None, scope=None, hint: tl.constexpr = None):
    return tl.atomic_cas(_to(pointer, from_rank, to_rank, heap_bases, hint), cmp, val, sem=sem, scope=scope)


_INTERPRET = tl.constexpr(INTERPRET)


@triton.jit
def atomic_xchg(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None,
                hint: tl.constexpr = None):
    p = _to(pointer, from_rank, to_rank, heap_bases, hint)
    ty: tl.constexpr = pointer.dtype.element_ty
    if _INTERPRET and (ty == tl.float32 or ty == tl.float64):
        # The interpreter exchanges integers only: exchange the float's bits (same result, same atomicity).
        ity: tl.constexpr = tl.int32 if ty == tl.float32 else tl.int64
        bits = tl.cast(tl.cast(val, ty), ity, bitcast=True)
        old = tl.atomic_xchg(tl.cast(p, tl.pointer_type(ity)), bits, mask=mask, sem=sem, scope=scope)
        res = tl.cast(old, ty, bitcast=True)
    else:
        res = tl.atomic_xchg(p, val, mask=mask, sem=sem, scope=scope)
    return res


@triton.jit
def atomic_and(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    return tl.atomic_and(_to(pointer, from_rank, to_rank, heap_bases, hint), val, mask=mask, sem=sem, scope=scope)


@triton.jit
def atomic_or(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None,
              hint: tl.constexpr = None):
    return tl.atomic_or(_to(pointer, from_rank, to_rank, heap_bases, hint), val, mask=mask, sem=sem, scope=scope)


@triton.jit
def atomic_xor(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    return tl.atomic_xor(_to(pointer, from_rank, to_rank, heap_bases, hint), val, mask=mask, sem=sem, scope=scope)


@triton.jit
def atomic_min(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    return tl.atomic_min(_to(pointer, from_rank, to_rank, heap_bases, hint), val, mask=mask, sem=sem, scope=scope)


@triton.jit
def atomic_max(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    return tl.atomic_max(_to(pointer, from_rank, to_rank, heap_bases, hint), val, mask=mask, sem=sem, scope=scope)


# ----------------------------------------------------------------------------------------------- flags


@triton.jit
def signal(flag_ptr, value, from_rank, to_rank, heap_bases, op: tl.constexpr = tl.constexpr("set")):
    """Publish everything this program stored so far, then set (op="set") or add to (op="add") `to_rank`'s int32
    flag with release semantics at system scope. Returns the flag's old value."""
    tl.debug_barrier()
    if op == "add":
        old = tl.atomic_add(__translate(flag_ptr, from_rank, to_rank, heap_bases), value, sem="release", scope="sys")
    else:
        old = tl.atomic_xchg(__translate(flag_ptr, from_rank, to_rank, heap_bases), value, sem="release", scope="sys")
    return old


@triton.jit
def _unmet(v, value, cmp: tl.constexpr):
    if cmp == "eq":
        res = v != value
    else:
        res = v < value
    return res


if INTERPRET:
    _wait_started = [0.0]

    def _host_int(x):
        return int(x.handle.data) if hasattr(x, "handle") else int(x)

    def _interp_tick(i, flag_ptr, value, observed, cur_rank, heap_bases, cmp):
        """Interpreter twin of the GPU poll's clock: yield the core (CI has 2 cores for 4 spinning ranks) and raise
        once the deadline has passed."""
        n = _host_int(i)
        now = time.monotonic()
        if n == 0:
            _wait_started[0] = now
            time.sleep(0)
            return
        time.sleep(0 if n < 8 else 0.0005)
        if n % 64 == 0 and _health[0] is not None:  # the pool saw a peer fail: give up now
            _health[0].raise_if_aborted(f"rank {_host_int(cur_rank)}: device wait for {_host_int(value)}")
        if now - _wait_started[0] > WAIT_TIMEOUT_S:
            rank = _host_int(cur_rank)
            base_addr = ctypes.c_int64.from_address(_host_int(heap_bases) + 8 * rank).value
            offset = _host_int(flag_ptr) - base_addr
            from triton.runtime.interpreter import interpreter_builder

            (x, y, z), (nx, ny, _) = interpreter_builder.grid_idx, interpreter_builder.grid_dim
            pid = x + nx * (y + ny * z)
            raise DeviceWaitTimeout(
                f"rank {rank}, program {pid}: wait on the flag at heap offset {offset} for a value "
                f"{'==' if cmp == 'eq' else '>='} {_host_int(value)} timed out after {WAIT_TIMEOUT_S:g} s "
                f"(last seen {_host_int(observed)}); raise IRIS_WAIT_TIMEOUT_S if the peer is merely slow")

    _health = [None]  # iris.health, set once it is imported (it imports this module)

    def _unwrapping_interpreter_error(message=None):
        """Stands in for InterpreterError in triton's interpreter, which wraps every exception raised inside a kernel
        once per jit-function level (a timed-out wait came out as five nested InterpreterError reprs): this library's
        own fault exceptions propagate as themselves, with their full traceback."""
        current = sys.exc_info()[1]
        if isinstance(current, (DeviceWaitTimeout, PeerFailed)):
            return current
        return _InterpreterError(message)

    import triton.runtime.interpreter as _interpreter

    _InterpreterError = _interpreter.InterpreterError
    if isinstance(_InterpreterError, type):
        _interpreter.InterpreterError = _unwrapping_interpreter_error

    @triton.jit
    def _ld_acquire(ptr):
        return tl.atomic_add(ptr, 0, sem="acquire", scope="sys")

    @triton.jit
    def wait(flag_ptr, value, cur_rank, heap_bases, cmp: tl.constexpr = tl.constexpr("ge")):
        """Block until the local int32 flag `== value` (cmp="eq") or `>= value` (cmp="ge"); acquire. Bounded."""
        v = _ld_acquire(flag_ptr)
        i = 0
        while _unmet(v, value, cmp):
            _interp_tick(i, flag_ptr, value, v, cur_rank, heap_bases, cmp)
            v = _ld_acquire(flag_ptr)
            i += 1
        return v

    @triton.jit
    def wait_either(flag_a, value_a, flag_b, value_b, cur_rank, heap_bases):
        """Block until local int32 flag_a >= value_a or flag_b >= value_b; acquire. Bounded (reports flag_a)."""
        a = _ld_acquire(flag_a)
        b = _ld_acquire(flag_b)
        i = 0
        while (a < value_a) & (b < value_b):
            _interp_tick(i, flag_a, value_a, a, cur_rank, heap_bases, "ge")
            a = _ld_acquire(flag_a)
            b = _ld_acquire(flag_b)
            i += 1

    @triton.jit
    def fence():
        """The interpreter's memory is coherent and its atomics are sequentially consistent: nothing to order."""
        pass

    @triton.jit
    def fence_proxy_async():
        """The interpreter has no TMA unit: nothing to order."""
        pass

    def _host_ns():
        return time.perf_counter_ns()

    @triton.jit
    def now_ns():
        return tl.full((), _host_ns(), tl.int64)

    @triton.jit
    def sm_id():
        return tl.program_id(0)

else:

    @triton.jit
    def _ld_acquire(ptr):
        return tl.inline_asm_elementwise("ld.global.acquire.sys.b32 $0, [$1];", "=r,l", [ptr], dtype=tl.int32,
                                         is_pure=False, pack=1)

    @triton.jit
    def fence():
        """fence.acq_rel.sys in every thread: with a tl.debug_barrier() before it, everything the program stored so
        far is ordered before any later write, relaxed flag writes included (a release pattern in the PTX memory
        model). One fence then serves many flags (iris.tile signals all peers after one)."""
        tl.inline_asm_elementwise("fence.acq_rel.sys;\n\tmov.u32 $0, 0;", "=r", [], dtype=tl.int32, is_pure=False,
                                  pack=1)

    @triton.jit
    def fence_proxy_async():
        """fence.proxy.async.global in every thread: data this program acquired (a flag wait after peers' plain
        stores) becomes visible to its later TMA loads, which go through the async proxy. Without it a TMA load may
        read stale memory even after the acquire."""
        tl.inline_asm_elementwise("fence.proxy.async.global;\n\tmov.u32 $0, 0;", "=r", [], dtype=tl.int32,
                                  is_pure=False, pack=1)

    @triton.jit
    def now_ns():
        """Global nanosecond timer (%globaltimer), comparable across SMs of one GPU."""
        return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False,
                                         pack=1)

    @triton.jit
    def sm_id():
        return tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)

    @triton.jit
    def _record_timeout(flag_ptr, value, observed, cur_rank, heap_bases, cmp: tl.constexpr):
        base = tl.load(heap_bases + cur_rank)
        err = tl.cast(base, tl.pointer_type(tl.int64))
        if tl.atomic_cas(err, tl.cast(0, tl.int64), tl.cast(-1, tl.int64), sem="relaxed", scope="gpu") == 0:
            pid = tl.program_id(0) + tl.num_programs(0) * (tl.program_id(1) + tl.num_programs(1) * tl.program_id(2))
            tl.store(err + 1, tl.cast(cur_rank, tl.int64))
            tl.store(err + 2, tl.cast(pid, tl.int64))
            tl.store(err + 3, tl.cast(tl.cast(flag_ptr, tl.uint64), tl.int64) - base)
            tl.store(err + 4, tl.cast(value, tl.int64))
            tl.store(err + 5, tl.cast(observed, tl.int64))
            tl.store(err + 6, 0 if cmp == "eq" else 1)
            tl.atomic_xchg(err, tl.cast(1, tl.int64), sem="release", scope="gpu")

    @triton.jit
    def wait(flag_ptr, value, cur_rank, heap_bases, cmp: tl.constexpr = tl.constexpr("ge")):
        """Block until the local int32 flag `== value` (cmp="eq") or `>= value` (cmp="ge"); acquire. Bounded."""
        v = _ld_acquire(flag_ptr)
        if _unmet(v, value, cmp):
            err = tl.cast(tl.load(heap_bases + cur_rank), tl.pointer_type(tl.int64))
            if tl.load(err, volatile=True) == 0:  # after one timeout, later waits give up at once
                start = now_ns()
                elapsed = start - start
                while _unmet(v, value, cmp) & (elapsed < _WAIT_TIMEOUT_NS):
                    v = _ld_acquire(flag_ptr)
                    elapsed = now_ns() - start
                if _unmet(v, value, cmp):
                    _record_timeout(flag_ptr, value, v, cur_rank, heap_bases, cmp)
        return v

    @triton.jit
    def wait_either(flag_a, value_a, flag_b, value_b, cur_rank, heap_bases):
        """Block until local int32 flag_a >= value_a or flag_b >= value_b; acquire. Bounded (reports flag_a)."""
        a = _ld_acquire(flag_a)
        b = _ld_acquire(flag_b)
        if (a < value_a) & (b < value_b):
            err = tl.cast(tl.load(heap_bases + cur_rank), tl.pointer_type(tl.int64))
            if tl.load(err, volatile=True) == 0:
                start = now_ns()
                elapsed = start - start
                while (a < value_a) & (b < value_b) & (elapsed < _WAIT_TIMEOUT_NS):
                    a = _ld_acquire(flag_a)
                    b = _ld_acquire(flag_b)
                    elapsed = now_ns() - start
                if (a < value_a) & (b < value_b):
                    _record_timeout(flag_a, value_a, a, cur_rank, heap_bases, "ge")


def pdl_launch():
    """Launch options of a kernel that starts with launched_early(PDL): launched with programmatic dependent launch
    on GPUs, so its launch overlaps the previous kernel's tail, in CUDA graphs too (results/current/pdl/:
    multi-kernel fused ops 3-11% faster at M = 128 on H200s); nothing on the CPU backend."""
    return _PDL_ARGS if PDL_ENABLED else {}


_PDL_ARGS = dict(PDL=True, launch_pdl=True)


@triton.jit
def launched_early(PDL: tl.constexpr, LET_NEXT_IN: tl.constexpr = tl.constexpr(True)):
    """First statement of a kernel launched with pdl_launch(): it may start while the previous kernel on its stream
    still runs, so it waits for that kernel and its memory (griddepcontrol.wait) before reading anything, then lets
    the next kernel launch early in turn (it waits the same way, so at most two kernels overlap and the running one
    is always fully resident). LET_NEXT_IN=False: the next kernel launches only as this one's programs exit. A
    persistent GEMM followed by another lost up to 18% when it let the next one in at its start
    (results/archive/gemm_probe/gemm_probe_pdl_dfa1a9b.csv.gz). Without PDL these are no-ops, and the interpreter
    never sees them."""
    if PDL:
        gdc_wait()
        if LET_NEXT_IN:
            gdc_launch_dependents()

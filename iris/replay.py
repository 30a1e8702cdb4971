"""Eager calls at CUDA-graph speed: a call whose launch sequence was seen before replays a captured graph of it.

Triton's Python launch path costs 20-40 µs of host time per kernel, and a catalog call launches up to five (epoch
counter, barriers, GEMM, communication), so small eager calls are bound by the host. A call is identified by a key
that names everything its launches depend on (op, variant, pointers, shapes, strides, dtype, config); kernels read
their call counters from the device, so a replay is a fresh call. The first sighting of a key runs eagerly (it may
compile kernels and create workspaces, which capture forbids); the second captures the launches into a graph (after
a device synchronize and an allocator cache release, as torch.cuda.graph does) and replays it; later ones only
replay (one graph launch, a few µs). Keys seen once cost nothing but a dict entry, so
code that never repeats its pointers pays no capture.

Off on the CPU backend, under an outer capture (the launches join that capture), while an iris.Tracer is active, and
with IRIS_REPLAY=0. It also keeps the copy engines' recorded operations (iris/copy_engine.py: CopyEngine.plan), on
every backend. The cache is cleared when heap memory it may point into is released (ctx.scratch(), close()).
"""

import ctypes
from collections import OrderedDict

import torch

from . import relaunch as _relaunch
from . import settings
from .logging import logger

ENABLED = settings.value("IRIS_REPLAY")
CAPACITY = settings.value("IRIS_REPLAY_CAPACITY")
PREPARED = settings.value("IRIS_PREPARED")  # off: every call checks and sets up (graphs still replay)


def _capture(launch, stream):
    """Record (not run) launch() into a graph on a side stream; a replay then runs on the caller's stream. As in
    torch.cuda.graph, pending work finishes and cached blocks are released first: the allocator must not free memory
    of a dead graph's pool while this capture is underway (CUDA forbids that during capture)."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        graph.capture_begin(capture_error_mode="thread_local")
        try:
            launch()
        finally:
            graph.capture_end()
    return graph


class ReplayCache:
    """Per context: key -> captured graph (LRU, `capacity` graphs), plus the keys seen once."""

    def __init__(self, enabled, capacity=CAPACITY, capture=None, capturing=None):
        """capture(launch) -> graph and capturing() -> bool stand in for CUDA's in tests."""
        self.enabled, self.capacity = enabled and capacity > 0, capacity
        self.graphs, self.seen = OrderedDict(), OrderedDict()
        self._capture = capture or self._capture_cuda
        self._capturing = capturing or torch.cuda.is_current_stream_capturing
        self._streams = {}
        self._prepared = OrderedDict()  # front-door signature -> its checked, set-up call (iris.collectives)
        self._offered = OrderedDict()
        self._launchers = {}  # key -> _graph_launcher(graphs[key])
        self.plans = OrderedDict()  # key -> a copy-engine call's recorded operations (CopyEngine.plan), any backend
        self.captures = 0
        self.relaunch = _relaunch.ENABLED  # one-kernel prepared calls launch directly (iris.relaunch), not a graph

    def _capture_cuda(self, launch):
        device = torch.cuda.current_device()
        stream = self._streams.setdefault(device, torch.cuda.Stream(device))
        return _capture(launch, stream)

    def __call__(self, key, launch):
        """Run `launch()` (kernel launches only: no host synchronization, no allocation that outlives the call), as
        a replay when `key` was seen before."""
        if not self.enabled or key is None or self._capturing():  # under a capture: launches join that graph
            return launch()
        graph = self.graphs.get(key)
        if graph is None:
            if self._first_sighting(self.seen, key):
                return launch()
            try:
                graph = self._capture(launch)
            except Exception as e:  # a failed capture can leave CUDA and the allocator unusable: stop, loudly
                self.enabled = False
                self.clear()
                raise RuntimeError(f"launch replay: capturing the launches of {key[:2]!r} failed ({e}); replay is now "
                                   f"off in this process. Please report it; IRIS_REPLAY=0 runs without it") from e
            self.captures += 1
            self._launchers.pop(bounded_put(self.graphs, key, graph, self.capacity), None)
        else:
            self.graphs.move_to_end(key)
        launcher = self._launchers.get(key)
        if launcher is None:
            launcher = self._launchers[key] = _graph_launcher(graph)
        launcher()

    def prepared(self, sig):
        """The call a front door prepared for this signature (None while replay is off or for a new signature)."""
        return self._prepared.get(sig) if self.enabled else None

    def lookup(self, sig):
        """(sig, prepared call) for a front door, the call None as in prepared(); (None, None) where the signature
        holds something unhashable (the front door's checks will say what is wrong with it). Front doors spell
        their signatures out with tensor_key: a generic loop over the arguments cost twice as much."""
        try:
            return sig, self.prepared(sig)
        except TypeError:
            return None, None

    def prepare(self, sig, call, key=None, result=None, direct=None):
        """Remember `call` for `sig` from its second offer on: a prepared call holds its tensors, so only
        signatures in repeated use (at most `capacity`) keep memory alive. With `key` (the replay key of call's
        launches), the prepared call becomes a bare replay of their graph once it exists, returning `result`; with
        direct=(kernel, grid, args, meta) as well (call's one launch), a direct relaunch of that kernel instead."""
        if self.enabled and PREPARED and not self._first_sighting(self._offered, sig):
            bounded_put(self._prepared, sig, call if key is None else _Replayer(self, call, key, result, direct),
                         self.capacity)

    def forget_prepared(self):
        """Drop the prepared calls (their checks and picks are made again): what `auto` picks has changed."""
        self._prepared.clear()
        self._offered.clear()

    def _first_sighting(self, seen, key):
        """True (and remembered, a bounded number of keys) the first time; False, and forgotten, the second."""
        if key in seen:
            del seen[key]
            return False
        bounded_put(seen, key, None, 4 * self.capacity)
        return True

    def clear(self):
        self.graphs.clear()
        self.plans.clear()
        self._launchers.clear()
        self.seen.clear()
        self._prepared.clear()
        self._offered.clear()


class _Replayer:
    """A prepared call that only launches: its graph (no key hashing, no lookups; an eager 4 KiB all-reduce went
    from 14.4 to 5.9 µs per call, results/current/collectives/collectives.csv), launched with cudaGraphLaunch
    (_graph_launcher), or,
    for a call of one plain kernel given `direct`, that kernel relaunched (iris.relaunch: its programmatic dependent
    launch overlaps the previous call's kernel, which a graph launch cannot). It keeps its graph when the LRU drops
    it from the cache; clear() drops both. Under an outer capture a graph is not launched: the call runs, so its
    launches join that capture (a relaunch is a plain kernel launch, which joins it as it is)."""

    __slots__ = ("cache", "call", "key", "result", "graph", "direct", "relaunch", "launch_graph")

    def __init__(self, cache, call, key, result, direct=None):
        self.cache, self.call, self.key, self.result, self.graph = cache, call, key, result, None
        self.direct, self.relaunch, self.launch_graph = direct, None, None

    def __call__(self):
        if self.relaunch is not None:
            self.relaunch()
            return self.result
        if self.launch_graph is not None and not self.cache._capturing():
            self.launch_graph()
            return self.result
        if self.direct is not None and self.cache.relaunch:  # the kernel has run (compiled) before it was prepared
            self.relaunch, why = _relaunch.Relaunch.build(*self.direct)
            self.direct = None
            if self.relaunch is not None:
                return self()
            logger.info("launch replay: %s is replayed as a graph, not relaunched: %s", self.key[:2], why)
        out = self.call()
        if self.graph is None:
            self.graph = self.cache.graphs.get(self.key)
            self.launch_graph = None if self.graph is None else _graph_launcher(self.graph)
        return out


def _graph_launcher(graph):
    """graph.replay() as one cudaGraphLaunch on the current stream, through ctypes: torch's replay() also advances
    the RNG offsets of captured random kernels (there are none in these graphs) and asks the driver its version,
    about 1 µs of host time per call (benchmarks/launch_paths.py: graph vs graph_ctypes). A stand-in graph without
    a raw executable (tests) keeps its replay()."""
    raw = getattr(graph, "raw_cuda_graph_exec", None)
    if raw is None or not torch.cuda.is_available():
        return graph.replay
    from ._cudart import CudaRuntime

    lib = CudaRuntime.shared().lib
    exec_handle, device = ctypes.c_void_p(raw()), torch.cuda.current_device()
    stream = torch._C._cuda_getCurrentRawStream

    def launch():
        code = lib.cudaGraphLaunch(exec_handle, ctypes.c_void_p(stream(device)))
        if code != 0:
            raise RuntimeError(f"launch replay: cudaGraphLaunch failed with CUDA error {code}; IRIS_REPLAY=0 runs "
                               f"without replay")

    launch.graph = graph  # keep the executable alive with its launcher
    return launch


def bounded_put(table, key, value, limit):
    """table[key] = value, dropping the least recently added entry beyond `limit`; returns the dropped key."""
    table[key] = value
    if len(table) > limit:
        return table.popitem(last=False)[0]
    return None


def tensor_key(t):
    """What a launch (or a front door's checks) reads of a tensor argument: address (hence heap or not, and the
    device: unified addressing gives each device's memory its own addresses), shape, strides, dtype; any other
    argument as itself. Most of a prepared call's host time is building these: keep it lean."""
    try:
        return t.data_ptr(), t.shape, t.stride(), t.dtype
    except AttributeError:
        return t

"""What the GPU benchmarks share: back-to-back timing between CUDA events, graph timing, and the stamp every CSV row
carries (device, date, commit, command)."""

import datetime
import os
import shlex
import statistics
import sys
import time

import torch

from iris import settings


def timed(fn, calls=30, repeats=3):
    """µs per call of `calls` back-to-back calls between two CUDA events, the median of `repeats` (the CPU backend:
    wall clock, one repeat)."""
    if not torch.cuda.is_available():
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - t0) * 1e6 / calls
    samples = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        b.synchronize()
        samples.append(a.elapsed_time(b) * 1e3 / calls)
    return statistics.median(samples)


def host_us(fn, calls=20, repeats=3):
    """Host µs per call of `calls` calls in a row with no synchronization between them (the GPU drained before and
    after), the best of `repeats`: what the host spends issuing a call, while the GPU queue is not full."""
    best = float("inf")
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) * 1e6 / calls)
        torch.cuda.synchronize()
    return best


def _captured(fn, calls=10):
    """A CUDA graph of `calls` calls of fn, replayed once (fn has run eagerly before: capture forbids compiling and
    allocating)."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    return graph


def graph_us(fn, after_warmup=None):
    """µs per call of fn with 10 calls captured in one CUDA graph and replayed. after_warmup(), e.g. a barrier, runs
    between the first replay and the timing."""
    graph = _captured(fn)
    torch.cuda.synchronize()
    if after_warmup is not None:
        after_warmup()
    return timed(graph.replay, calls=3) / 10


_heavy = []


def heat(seconds):
    """Keep the GPU busy with 8192^3 bf16 GEMMs for `seconds`, so that what is timed next runs at the clock the power
    cap leaves after heavy work (1455-1845 MHz on an H200 for a few seconds, against 1980 idle: results/current/gemm/
    decode_swap/heat_*.log), as a GEMM does that follows larger ones in a model or a whole-set run."""
    if not _heavy:
        _heavy.append(torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16))
    x = _heavy[0]
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            torch.matmul(x, x)
        torch.cuda.synchronize()


def paired_graph_us(fn, ref, rounds=5, hot=0.0):
    """(µs per call of fn, of ref), each with 10 calls captured in one CUDA graph, the two graphs replayed in turn
    `rounds` times and the medians taken: a ratio of the two survives the clock and power drift that moved the same
    large GEMM by 10% between rows of one run (results/archive/gemm_2fca140.csv.gz). hot: heat(hot) first, so both are
    timed at the clock heavy work leaves (a GEMM bound by its SMs' instructions slows there; one bound by memory does
    not)."""
    graphs = [_captured(fn), _captured(ref)]
    torch.cuda.synchronize()
    if hot:
        heat(hot)
    samples = ([], [])
    for _ in range(rounds):
        for g, out in zip(graphs, samples):
            out.append(timed(g.replay, calls=1, repeats=1) / 10)
    return statistics.median(samples[0]), statistics.median(samples[1])


def worst(values):
    """The largest value, NaN if any is (max() alone depends on where the NaN sits): a row's error or time over
    ranks, where a NaN (an unwritten output) must not hide."""
    values = list(values)
    return float("nan") if any(v != v for v in values) else max(values)


def stamp(devices, script):
    """device, date, commit (IRIS_COMMIT) and command columns for a run of `script` on `devices` GPUs."""
    name = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU ranks"
    return dict(device=f"{devices}x {name}", date=datetime.date.today().isoformat(),
                commit=os.environ.get("IRIS_COMMIT", "?"),
                command=settings.ab_prefix() + f"python {script} " + shlex.join(sys.argv[1:]))

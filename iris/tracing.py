"""Device-side event tracing: begin/end of tile compute, remote stores, flag waits and reductions, with program id,
SM id and the global timer, recorded by the kernels into a heap buffer; merged over ranks into one Chrome/Perfetto
trace JSON and drawn as a per-program timeline, so overlap of GEMM and communication can be seen.

    tracer = iris.Tracer(ctx)
    with tracer:                       # kernels launched inside record events (the catalog's loops do)
        fused_ops.gemm_all_scatter(ctx, a, b, c, variant="wg_specialized")
    tracer.export("trace.json")        # collective; rank 0 writes the merged trace (open in ui.perfetto.dev)
    tracer.plot("timeline.png")        # collective; rank 0 draws it

In a kernel, `TRACING: tl.constexpr` gates every record, so a kernel compiled without tracing has no trace code:
    iris.tracing.record(TRACE, iris.tracing.GEMM, tile, TRACING)        # begin
    iris.tracing.record(TRACE, -iris.tracing.GEMM, tile, TRACING)       # end
Records go to slots taken with one relaxed atomic each; a full buffer drops later records (and says how many).
Ranks' clocks are aligned at the tracer's start by a device barrier followed by an ALIGN record on every rank.
"""

import json

import torch
import triton
import triton.language as tl

from . import device as _dev

GEMM, STORE, WAIT, REDUCE, ALIGN = (tl.constexpr(k) for k in (1, 2, 3, 4, 9))  # constexpr: kernels use them
NAMES = {1: "gemm tile", 2: "remote store", 3: "flag wait", 4: "reduce"}
WORDS = 5  # time_ns, kind, program, sm, tile
HEADER = 8  # [0] records taken, [1] capacity


@triton.jit
def record(TRACE, kind, tile, TRACING: tl.constexpr):
    """One event (kind > 0 begins, -kind ends) of this program about `tile`; nothing at all unless TRACING."""
    if TRACING:
        slot = tl.atomic_add(TRACE, 1, sem="relaxed", scope="gpu")
        if slot < tl.load(TRACE + 1):
            rec = TRACE + 8 + slot * 5
            tl.store(rec, _dev.now_ns())
            tl.store(rec + 1, tl.cast(kind, tl.int64))
            tl.store(rec + 2, tl.cast(tl.program_id(0), tl.int64))
            tl.store(rec + 3, tl.cast(_dev.sm_id(), tl.int64))
            tl.store(rec + 4, tl.cast(tile, tl.int64))


@triton.jit
def _align_kernel(TRACE):
    record(TRACE, ALIGN, 0, True)


class Tracer:
    """A trace buffer on this rank's heap (collective to create: every rank allocates the same)."""

    def __init__(self, ctx, capacity=1 << 16):
        self.ctx, self.capacity = ctx, capacity
        self.buffer = ctx.zeros(HEADER + capacity * WORDS, dtype=torch.int64)
        self.buffer[1] = capacity

    # ------------------------------------------------------------------------------------------ recording
    def __enter__(self):
        """Start (collective): clear the buffer, align clocks, and make kernels launched through the catalog
        (which reads `ctx.tracer`) record into it."""
        self.buffer[0] = 0
        self.ctx.device_barrier()
        _align_kernel[(1,)](self.buffer, num_warps=1)
        self.ctx.tracer = self
        return self

    def __exit__(self, *exc):
        self.ctx.tracer = None

    def kernel_args(self):
        """(TRACE, TRACING) for a launch: this buffer, on."""
        return dict(TRACE=self.buffer, TRACING=True)

    # ------------------------------------------------------------------------------------------ reading
    def records(self):
        """This rank's raw records [(time_ns, kind, program, sm, tile)] and how many were dropped."""
        if self.ctx.backend == "cuda":
            torch.cuda.synchronize(self.ctx.get_device())
        taken = int(self.buffer[0])
        n = min(taken, self.capacity)
        rows = self.buffer[HEADER:HEADER + n * WORDS].view(n, WORDS).tolist()
        return rows, taken - n

    def spans(self):
        """This rank's events as spans: dicts with name, cat, program, sm, tile, start_ns and end_ns (clock of this
        rank shifted so that its ALIGN record is at 0; `gather` then shifts every rank by the earliest start)."""
        rows, dropped = self.records()
        align = next((r[0] for r in rows if r[1] == ALIGN.value), rows[0][0] if rows else 0)
        open_, out = {}, []
        for t, kind, prog, sm, tile in rows:
            if kind == ALIGN.value:
                continue
            if kind > 0:
                open_[(prog, kind)] = (t, sm, tile)
            elif (prog, -kind) in open_:
                t0, sm0, tile0 = open_.pop((prog, -kind))
                out.append(dict(name=f"{NAMES.get(-kind, -kind)} {tile0}", cat=NAMES.get(-kind, str(-kind)),
                                program=prog, sm=sm0, tile=tile0, start_ns=t0 - align, end_ns=t - align))
        self.dropped = dropped
        return out

    def gather(self):
        """Collective: every rank's spans, by rank (on every rank)."""
        from . import distributed

        per_rank = distributed.all_gather_object((self.spans(), self.dropped), self.ctx.group)
        t0 = min((s["start_ns"] for spans, _ in per_rank for s in spans), default=0)
        for spans, _ in per_rank:
            for s in spans:
                s["start_ns"] -= t0
                s["end_ns"] -= t0
        return per_rank

    # ------------------------------------------------------------------------------------------ output
    def export(self, path):
        """Collective: rank 0 writes the merged Chrome trace (pid = rank, tid = program). Returns the path."""
        per_rank = self.gather()
        if self.ctx.get_rank() == 0:
            events = []
            for rank, (spans, dropped) in enumerate(per_rank):
                events.append(dict(name="process_name", ph="M", pid=rank, args=dict(name=f"rank {rank}")))
                for s in spans:
                    events.append(dict(name=s["name"], cat=s["cat"], ph="X", pid=rank, tid=s["program"],
                                       ts=s["start_ns"] / 1e3, dur=max(s["end_ns"] - s["start_ns"], 1) / 1e3,
                                       args=dict(sm=s["sm"], tile=s["tile"])))
                if dropped:
                    events.append(dict(name=f"{dropped} records dropped (buffer full)", ph="i", s="p", pid=rank,
                                       tid=0, ts=0))
            with open(path, "w") as f:
                json.dump(dict(traceEvents=events, displayTimeUnit="ns"), f)
        return path

    def plot(self, path, title=None):
        """Collective: rank 0 draws one panel per rank, one row per program, GEMM tiles vs communication."""
        per_rank = self.gather()
        if self.ctx.get_rank() == 0:
            plot_timeline([spans for spans, _ in per_rank], path, title)
        return path


COLORS = {"gemm tile": "#4C72B0", "remote store": "#DD8452", "flag wait": "#BBBBBB", "reduce": "#C44E52"}


def plot_timeline(per_rank, path, title=None):
    """Timeline PNG from spans by rank (Tracer.spans()): x = microseconds since the aligned start, y = program."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(len(per_rank), 1, figsize=(12, 2.2 + 2.2 * len(per_rank)), sharex=True, squeeze=False)
    for rank, (ax, spans) in enumerate(zip(axes[:, 0], per_rank)):
        for cat, color in COLORS.items():
            bars = [(s["program"], s["start_ns"] / 1e3, (s["end_ns"] - s["start_ns"]) / 1e3) for s in spans
                    if s["cat"] == cat]
            for prog, x, w in bars:
                ax.broken_barh([(x, max(w, 1e-3))], (prog - 0.4, 0.8), facecolors=color, linewidth=0)
        ax.set_ylabel(f"rank {rank}: program")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.invert_yaxis()
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("µs since the first event (ranks aligned by a device barrier)")
    used = {s["cat"] for spans in per_rank for s in spans}
    axes[0, 0].legend(handles=[Patch(color=c, label=k) for k, c in COLORS.items() if k in used], loc="upper right",
                      ncol=4, fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)

"""Contexts over process groups, timed: (A) two groups running catalog ops at once do not slow each other down, and
(B) the hierarchical collectives of a multi-node context against NCCL over the whole world. Issue 28 claims both;
tests/test_groups.py checks only that the results are right, this measures what they cost.

    IRIS_COMMIT=$(git rev-parse --short HEAD) python benchmarks/groups.py -n 4 --out results/groups   # 4 GPUs
    python benchmarks/groups.py --parts interference --ops gemm_all_reduce --variants torch_nccl one_shot two_shot
    python benchmarks/groups.py --smoke [--out DIR]                   # the CPU backend: tiny sizes, a script check

A (<out>/groups_interference.csv): the world of n ranks (one GPU each) split into 2 groups of n/2, "block"
({0,1},{2,3}) and "strided" ({0,2},{1,3}), one iris.iris(heap, group=...) context per group. For every op of the
catalog, variant (default torch_nccl, the op's default fused variant and auto) and shape (global MxNxK of each
group's problem), each group is timed "alone" (it runs the op; the other group's ranks wait in a host barrier on a
gloo group, so their GPUs are idle and no NCCL kernel of theirs is queued) and "together" (both groups run the op at
the same time, each on its own data).
Timing: --timing graph (CUDA default) captures 10 calls in one CUDA graph and times its replays (benchmarks/harness.py
graph_us); eager times --iters back-to-back calls between CUDA events (harness.timed); both the median of 3 samples.
Both groups are released into the timed region by one world-wide host barrier, so their timed calls overlap. A
group's time is its slowest rank's; together/alone = 1.0 is no interference. Every run (alone and together) checks
the op's result against the float64 reference first (fused_ops/reference.py); `correct` holds if all of them pass.

B (<out>/groups_hierarchical.csv): the same world as 2 simulated nodes of n/2 ranks (block: IRIS_HOSTNAME per rank,
as tests/test_groups.py multi_ctx does), an iris.multi_node context; all_reduce, all_gather and reduce_scatter of
--sizes bytes (the full tensor: all_reduce's, all_gather's output, reduce_scatter's input), bf16 (float32 on the CPU),
as "hierarchical" (heap inside the node, NCCL across) against NCCL over all ranks (torch.distributed; gloo on the
CPU, where reduce_scatter is an all-reduce and a slice) and against the flat iris collective ("flat": variant auto on
a world context over the one real host). Eager only: the hierarchical calls are host-driven sequences, not capturable
as one unit. Each result is checked against NCCL's (relative error). Bus bandwidth as nccl-tests count it.

Without --out the tables are printed only. Every row carries device, date, commit (IRIS_COMMIT) and command.
"""

import argparse
import itertools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import fused_ops  # noqa: E402
from benchmarks.collectives import BUS_FACTOR  # noqa: E402  (nccl-tests' bus bandwidth factors)
from benchmarks.harness import graph_us, stamp, timed, worst  # noqa: E402
from fused_ops import reference, registry  # noqa: E402
from iris import collectives as coll  # noqa: E402
from iris import health  # noqa: E402
from iris.collectives import PUSH_MAX_BYTES, _auto_all_reduce  # noqa: E402
from iris.distributed import all_gather_single  # noqa: E402

GPU_SHAPES = ["1024x8192x8192", "4096x8192x8192"]
GPU_SIZES = [1 << 20, 16 << 20, 64 << 20, 256 << 20]
LAYOUTS = ("block", "strided")
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")
# --smoke: two ops (a reduction, a gather) with torch_nccl and their default fused variant, both layouts, every
# collective; one timed call, no warm-up (the checked call before the timing compiles and sets up)
SMOKE = {"shapes": ["32x32x32"], "sizes": [4096], "iters": 1, "warmup": 0, "variants": ["torch_nccl", "fused"],
         "ops": ["gemm_all_reduce", "all_gather_gemm"], "layouts": list(LAYOUTS)}
ROTATE = 3  # input sets per call site: no call starts with its operands in L2 from the previous one
_host = {}  # per rank process: the gloo group of the host barriers


def groups_of(layout, world):
    """The 2 groups (global ranks) of a layout: block = halves, strided = even and odd ranks."""
    half = world // 2
    if layout == "block":
        return [list(range(half)), list(range(half, world))]
    return [list(range(0, world, 2)), list(range(1, world, 2))]


def log(ctx, msg):
    if ctx.get_rank() == 0:
        print(f"[groups rank {ctx.get_rank()}/{ctx.get_num_ranks()}] {msg}", flush=True)


def sync():
    """Every rank of the world, on the host only (gloo): idle ranks wait here without a kernel on their GPU."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    health.host_barrier(_host["gloo"])


def gather(value):
    """Every rank's value, by global rank (gloo: no GPU work)."""
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, value, group=_host["gloo"])
    return out


def time_us(ctx, fn, timing, calls, warmup):
    """This rank's µs per call of fn; the one world barrier in it releases every timing rank at once."""
    for _ in range(warmup):
        fn()
    ctx.barrier()
    if timing == "graph":
        return graph_us(fn, after_warmup=sync)
    sync()
    return timed(fn, calls)


# ---------------------------------------------------------------------------------------------- A: interference
def variants_of(op, names):
    """--variants for one op: "fused" is the op's default fused variant (fused_ops.auto.DEFAULT: heap traffic
    between a group's GPUs, where auto with no tuned rows for the GPU would run torch_nccl); gemm_reduce_scatter's
    own variant of that name is its default anyway."""
    return list(dict.fromkeys(fused_ops.auto.DEFAULT[op] if v == "fused" else v for v in names))


def check(ctx, op, variant, a, b, c, ref):
    """Max relative error over the group of one call on fresh inputs (NaN: an unwritten output fails)."""
    c.fill_(float("nan"))
    ctx.barrier()
    getattr(fused_ops, op)(ctx, a, b, c, variant=variant)
    ctx.barrier()
    errs = [None] * ctx.get_num_ranks()
    dist.all_gather_object(errs, reference.rel_error(c, ref), group=ctx.group)
    return worst(errs)


def interference(world, layout, gctx, shapes, args, dtype):
    """Rows (rank 0's) for one layout: per op, shape, variant and group, alone vs together."""
    w, mine = world.get_num_ranks(), world.get_rank()
    groups = groups_of(layout, w)
    me = 0 if mine in groups[0] else 1
    g, r, dev = gctx.get_num_ranks(), gctx.get_rank(), gctx.get_device()
    warmup = max(args.warmup, 2 * ROTATE) if gctx.backend == "cuda" else args.warmup
    rows = []
    for (m, n, k), op in itertools.product(shapes, args.ops):
        with gctx.scratch():
            seed = 1000 * LAYOUTS.index(layout) + 100 * shapes.index((m, n, k)) + gctx.global_ranks[0]  # per group
            a, b, ref = reference.make_inputs(op, seed, g, r, m, n, k, dtype, dev)
            sets = [reference.make_inputs(op, 20_000 + seed * 10 + s, g, r, m, n, k, dtype, dev, reference=False)[:2]
                    for s in range(ROTATE)]
            c = gctx.zeros(*reference.local_shapes(op, m, n, k, g)[2], dtype=dtype)
            for variant in variants_of(op, args.variants):
                calls = itertools.count()
                run = getattr(fused_ops, op)

                def fn(variant=variant, calls=calls, run=run):
                    run(gctx, *sets[next(calls) % ROTATE], c, variant=variant)

                found = {}
                for phase, running in (("alone", {0}), ("alone", {1}), ("together", {0, 1})):
                    t = err = None
                    if me in running:
                        err = check(gctx, op, variant, a, b, c, ref)
                        t = time_us(gctx, fn, args.timing, args.iters, warmup)
                    else:
                        sync()  # the timing ranks' release barrier (time_us), then their end
                    sync()
                    for q, (tq, eq) in enumerate(gather((t, err))):
                        grp = 0 if q in groups[0] else 1
                        if tq is not None:
                            found.setdefault((phase, grp), []).append((tq, eq))
                ran = variant
                if variant == "auto":
                    mode = args.timing if gctx.backend == "cuda" else "eager"
                    ran = fused_ops.auto.choose(gctx, op, m, n, k, dtype, timing=mode)
                rans = gather(ran)
                for grp in (0, 1):
                    alone, together = found[("alone", grp)], found[("together", grp)]
                    t_alone, t_together = worst(t for t, _ in alone), worst(t for t, _ in together)
                    err = worst(e for _, e in alone + together)
                    rows.append(dict(layout=layout, group=grp, ranks=" ".join(map(str, groups[grp])), op=op,
                                     variant=variant, ran=rans[groups[grp][0]], m=m, n=n, k=k,
                                     dtype=str(dtype).replace("torch.", ""), timing=args.timing, alone_us=t_alone,
                                     together_us=t_together, together_over_alone=t_together / t_alone,
                                     max_rel_error=err, correct=bool(err <= reference.TOLERANCE[dtype]),
                                     world_size=w, group_size=g))
                last = rows[-2:]
                log(world, f"A {layout} {op} {m}x{n}x{k} {variant}: " + ", ".join(
                    f"group {x['ranks']} alone {x['alone_us']:.1f} us together {x['together_us']:.1f} us "
                    f"({x['together_over_alone']:.3f}x){'' if x['correct'] else ' INCORRECT'}" for x in last))
    return rows


# ---------------------------------------------------------------------------------------------- B: hierarchical
def simulated_node_ctx(world, heap):
    """iris.multi_node over the world with 2 simulated hosts of consecutive ranks (the host identity is read when
    the context is made; tests/test_groups.py multi_ctx)."""
    half, saved = world.get_num_ranks() // 2, os.environ.get("IRIS_HOSTNAME")
    os.environ["IRIS_HOSTNAME"] = f"groups-sim{world.get_rank() // half}"
    try:
        return iris.multi_node(heap)
    finally:
        if saved is None:
            del os.environ["IRIS_HOSTNAME"]
        else:
            os.environ["IRIS_HOSTNAME"] = saved


def collective_cases(world, mctx, name, nbytes, dtype):
    """{variant: (fn, result tensor, what ran)}; "nccl" first (the reference), every tensor allocated here."""
    w, r, dev = world.get_num_ranks(), world.get_rank(), world.get_device()
    n = nbytes // torch.empty((), dtype=dtype).element_size()
    gen = torch.Generator().manual_seed(1234 + r)
    full = torch.randn(n, generator=gen).to(dev, dtype)
    cuda = world.backend == "cuda"
    if name == "all_reduce":
        x, xw = full, world.zeros(n, dtype=dtype)
        xw.copy_(x)
        yn, yh, yw = x.clone(), torch.empty_like(x), world.zeros(n, dtype=dtype)
        return {"nccl": (lambda: dist.all_reduce(yn), yn, "torch.distributed"),  # in place: checked before timing
                "hierarchical": (lambda: coll.all_reduce(mctx, x, out=yh, variant="hierarchical"), yh, "hierarchical"),
                "flat": (lambda: coll.all_reduce(world, xw, out=yw, variant="auto"), yw, _auto_all_reduce(world, xw))}
    if name == "all_gather":
        x, xw = full[: n // w].clone(), world.zeros(n // w, dtype=dtype)
        xw.copy_(x)
        yn, yh, yw = torch.empty(n, dtype=dtype, device=dev), torch.empty(n, dtype=dtype, device=dev), \
            world.zeros(n, dtype=dtype)
        flat = "push" if nbytes <= PUSH_MAX_BYTES else "direct"
        return {"nccl": (lambda: all_gather_single(yn, x), yn, "torch.distributed"),
                "hierarchical": (lambda: coll.all_gather(mctx, yh, x, variant="hierarchical"), yh, "hierarchical"),
                "flat": (lambda: coll.all_gather(world, yw, xw, variant="auto"), yw, flat)}
    x, xw = full, world.zeros(n, dtype=dtype)  # reduce_scatter
    xw.copy_(x)
    yn, yh, yw = torch.empty(n // w, dtype=dtype, device=dev), torch.empty(n // w, dtype=dtype, device=dev), \
        world.zeros(n // w, dtype=dtype)
    if cuda:
        def nccl():
            dist.reduce_scatter_tensor(yn, x)
    else:  # gloo has no reduce-scatter: an all-reduce of a copy, this rank's slice kept
        def nccl():
            y = x.clone()
            dist.all_reduce(y)
            yn.copy_(y[r * (n // w):(r + 1) * (n // w)])
    flat = "push" if nbytes <= PUSH_MAX_BYTES else "pull"
    return {"nccl": (nccl, yn, "torch.distributed"),
            "hierarchical": (lambda: coll.reduce_scatter(mctx, yh, x, variant="hierarchical"), yh, "hierarchical"),
            "flat": (lambda: coll.reduce_scatter(world, yw, xw, variant="auto"), yw, flat)}


def hierarchical(world, mctx, args, dtype):
    w, rows = world.get_num_ranks(), []
    tol = {torch.float32: 1e-4}.get(dtype, 1e-2)
    for name, nbytes in itertools.product(args.collectives, args.sizes):
        with world.scratch(), mctx.local.scratch():
            cases = collective_cases(world, mctx, name, nbytes, dtype)
            for fn, _, _ in cases.values():  # correctness on the fresh input, before any timing
                fn()
            sync()
            ref = cases["nccl"][1].double()
            errs = {v: ((out.double() - ref).norm() / ref.norm().clamp_min(1e-30)).item()
                    for v, (_, out, _) in cases.items()}
            times = {}
            for v, (fn, _, _) in cases.items():
                t = time_us(world, fn, "eager", args.iters, args.warmup)
                sync()
                times[v] = worst(gather(t))
            errs = {v: worst(e[v] for e in gather(errs)) for v in errs}
            for v, (_, _, ran) in cases.items():
                rows.append(dict(collective=name, variant=v, ran=ran, bytes=nbytes,
                                 dtype=str(dtype).replace("torch.", ""), timing="eager", nodes=mctx.num_nodes,
                                 ranks_per_node=mctx.local_size, world_size=w, time_us=times[v],
                                 nccl_time_us=times["nccl"], time_over_nccl=times[v] / times["nccl"],
                                 busbw_gbps=nbytes / times[v] / 1e3 * BUS_FACTOR[name](w), rel_error_vs_nccl=errs[v],
                                 correct=bool(errs[v] < tol)))
            log(world, f"B {name} {nbytes} B: " + "  ".join(
                f"{v}={times[v]:.1f} us ({times[v] / times['nccl']:.2f}x nccl)" for v in cases))
    return rows


# ---------------------------------------------------------------------------------------------- ranks, main
def _run(world, args, heaps, run_stamp):
    """Both parts on every rank; rank 0's rows (the others return theirs, the same)."""
    w = world.get_num_ranks()
    _host["gloo"] = dist.new_group(backend="gloo")  # collective over the world
    dtype = getattr(torch, args.datatype)
    shapes = [tuple(int(x) for x in s.lower().split("x")) for s in args.shapes]
    rows_a, rows_b = [], []
    if "interference" in args.parts:
        for layout in args.layouts:
            mine = next(grp for grp in groups_of(layout, w) if world.get_rank() in grp)
            gctx = iris.iris(heaps["group"], group=mine)  # each rank builds its own group's context
            log(world, f"A {layout}: groups {groups_of(layout, w)}, timing {args.timing}")
            rows_a += interference(world, layout, gctx, shapes, args, dtype)
    if "hierarchical" in args.parts:
        mctx = simulated_node_ctx(world, heaps["node"])
        log(world, f"B: {mctx.num_nodes} simulated nodes x {mctx.local_size} ranks, eager")
        rows_b += hierarchical(world, mctx, args, dtype)
    return [{**r, **run_stamp} for r in rows_a], [{**r, **run_stamp} for r in rows_b]


def plot(df_a, df_b, path):
    """Left: together/alone per op, variant and shape, one bar per layout and group. Right: time over NCCL's against
    size, hierarchical (solid) and flat (dashed), per collective."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(16, 5), squeeze=False)
    ax = axes[0, 0]
    if len(df_a):
        df_a = df_a.assign(case=df_a.op + "/" + df_a.variant + "\n" + df_a.m.astype(str) + "x" + df_a.n.astype(str) +
                           "x" + df_a.k.astype(str), who=df_a.layout + " {" + df_a.ranks + "}")
        cases, whos = list(dict.fromkeys(df_a.case)), list(dict.fromkeys(df_a.who))
        width = 0.8 / len(whos)
        for i, who in enumerate(whos):
            d = df_a[df_a.who == who].set_index("case").reindex(cases)
            ax.bar([j + i * width for j in range(len(cases))], d.together_over_alone, width, label=who)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(cases))], cases, rotation=90, fontsize=6)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set(ylabel="time together / alone", title=f"A: two groups at once ({df_a.timing.iloc[0]})")
        ax.legend(fontsize=7)
    ax = axes[0, 1]
    for name in dict.fromkeys(df_b.collective) if len(df_b) else ():
        for v, style in (("hierarchical", "-"), ("flat", "--")):
            d = df_b[(df_b.collective == name) & (df_b.variant == v)]
            ax.plot(d.bytes, d.time_over_nccl, style, marker="o", ms=3, label=f"{name} {v}")
    if len(df_b):
        ax.axhline(1.0, color="k", lw=0.8)
        r = df_b.iloc[0]
        ax.set(xscale="log", xlabel="bytes", ylabel="time / NCCL's (world)",
               title=f"B: {r.nodes} simulated nodes x {r.ranks_per_node}, eager")
        ax.legend(fontsize=7)
    for a in axes[0]:
        a.grid(alpha=0.3)
    r = (df_a if len(df_a) else df_b).iloc[0]
    fig.suptitle(f"{r.device}, {r.date} ({r.commit})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _refuse(args):
    """Every refusal before a rank starts: ranks and GPUs, timing, names, divisibility."""
    cuda = iris.BACKEND == "cuda"
    if args.num_ranks < 4 or args.num_ranks % 2:
        raise SystemExit(f"-n {args.num_ranks}: the world splits into 2 groups (A) and 2 simulated nodes (B) of at "
                         f"least 2 ranks each; use -n 4 (or another even number >= 4)")
    gpus = torch.cuda.device_count() if cuda else 0
    if cuda and gpus < args.num_ranks:
        raise SystemExit(f"-n {args.num_ranks}: this machine has {gpus} GPU(s); the benchmark needs one GPU per rank "
                         f"(NCCL refuses two ranks on one GPU, and ranks sharing a GPU would interfere by design)")
    if args.datatype == "bfloat16" and not cuda:
        raise SystemExit("--datatype bfloat16: the Triton interpreter computes bf16 wrongly; the CPU backend runs "
                         "float16 or float32")
    if args.timing == "graph" and not cuda:
        raise SystemExit("--timing graph captures CUDA graphs: the CPU backend times eagerly (--timing eager)")
    group = args.num_ranks // 2
    for op, v in [(o, v) for o in args.ops for v in variants_of(o, args.variants)]:
        if v == "auto":
            continue
        try:
            spec = registry.get(op, v, iris.BACKEND)
        except (KeyError, ValueError) as e:
            raise SystemExit(f"--variants: {e}") from None
        if args.datatype not in spec.dtypes_on(iris.BACKEND):
            raise SystemExit(f"{op}/{v} does not run {args.datatype} on the {iris.BACKEND} backend")
        if args.timing == "graph" and not spec.capture:
            raise SystemExit(f"{op}/{v} cannot be captured into a CUDA graph (fused_ops/registry.py, "
                             f"Variant.capture); time it with --timing eager")
    for s, op in itertools.product(args.shapes, args.ops):
        try:
            m, n, k = (int(x) for x in s.lower().split("x"))
            reference.check_divisible(op, m, n, k, group)
        except ValueError as e:
            raise SystemExit(f"--shapes {s}: {e} (MxNxK, each group's problem over {group} ranks)") from None
    elt = torch.empty((), dtype=getattr(torch, args.datatype)).element_size()
    for nbytes in args.sizes:
        if nbytes % (elt * args.num_ranks):
            raise SystemExit(f"--sizes {nbytes}: must be a multiple of {elt * args.num_ranks} bytes ({args.datatype} "
                             f"elements divisible by the {args.num_ranks} ranks)")


def main(argv=None):
    cuda = iris.BACKEND == "cuda"
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", "--num_ranks", "--num-ranks", type=int, default=4)
    p.add_argument("--out", default=None, help="write the CSVs (and groups.png) here; default: print only")
    p.add_argument("--parts", nargs="+", choices=("interference", "hierarchical"),
                   default=["interference", "hierarchical"])
    p.add_argument("--ops", nargs="+", choices=registry.list_ops(), default=None, help="default: every op")
    p.add_argument("--variants", nargs="+", default=None,
                   help='variant names; "fused": each op\'s default fused variant (fused_ops.auto.DEFAULT); default: '
                        'torch_nccl fused auto (--smoke: torch_nccl fused; auto is the default fused one on the CPU)')
    p.add_argument("--shapes", nargs="+", default=None, help=f"MxNxK of each group's problem (default: "
                   f"{' '.join(GPU_SHAPES)}; --smoke: {' '.join(SMOKE['shapes'])})")
    p.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=None, help="default: both")
    p.add_argument("--timing", choices=("eager", "graph"), default="graph" if cuda else "eager")
    p.add_argument("--collectives", nargs="+", choices=COLLECTIVES, default=list(COLLECTIVES))
    p.add_argument("--sizes", nargs="+", type=int, default=None, help=f"bytes of the full tensor (B; default: "
                   f"{' '.join(map(str, GPU_SIZES))}; --smoke: {SMOKE['sizes'][0]})")
    p.add_argument("--datatype", choices=("float16", "bfloat16", "float32"),
                   default="bfloat16" if cuda else "float32")
    p.add_argument("--iters", type=int, default=None, help="eager timing: back-to-back calls per sample (3 samples "
                   "on GPUs; default 30)")
    p.add_argument("--warmup", type=int, default=None, help="calls before the timing (default 5; on GPUs at least 6 "
                   "in part A: every input set twice, for launch replay)")
    p.add_argument("--heap-size", type=float, default=float(8 << 30) if cuda else float(1 << 25),
                   help="bytes of each group context's heap (A)")
    p.add_argument("--smoke", action="store_true", help="tiny sizes, one timed call: a check of the script (CPU "
                   "backend; SMOKE)")
    args = p.parse_args(argv)
    defaults = SMOKE if args.smoke else {"shapes": GPU_SHAPES, "sizes": GPU_SIZES, "iters": 30, "warmup": 5,
                                            "variants": ["torch_nccl", "fused", "auto"], "ops": registry.list_ops(),
                                            "layouts": list(LAYOUTS)}
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    _refuse(args)
    biggest = max(args.sizes) if "hierarchical" in args.parts else 0
    # B's heaps (the world context's: flat inputs and outputs; each node's: the hierarchical workspaces), per size
    # (released in between): the tensors, push inboxes (8 x world x size up to 1 MiB), slack
    node_heap = 4 * biggest + 8 * args.num_ranks * min(biggest, PUSH_MAX_BYTES) + ((64 << 20) if cuda else (4 << 20))
    heaps = {"group": int(args.heap_size), "node": node_heap}
    run_stamp = stamp(args.num_ranks, "benchmarks/groups.py")
    rows_a, rows_b = iris.spawn(_run, args.num_ranks, args, heaps, run_stamp, heap_size=node_heap)[0]

    import pandas as pd

    df_a, df_b = pd.DataFrame(rows_a), pd.DataFrame(rows_b)
    with pd.option_context("display.width", 200, "display.max_rows", None, "display.float_format", "{:.3f}".format):
        if len(df_a):
            print(df_a[["layout", "ranks", "op", "variant", "ran", "m", "n", "k", "alone_us", "together_us",
                        "together_over_alone", "correct"]].to_string(index=False))
        if len(df_b):
            print(df_b[["collective", "variant", "ran", "bytes", "time_us", "time_over_nccl", "busbw_gbps",
                        "rel_error_vs_nccl", "correct"]].to_string(index=False))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for df, name in ((df_a, "groups_interference.csv"), (df_b, "groups_hierarchical.csv")):
            if len(df):
                df.to_csv(os.path.join(args.out, name), index=False)
                print(f"wrote {os.path.join(args.out, name)} ({len(df)} rows)")
        try:
            plot(df_a, df_b, os.path.join(args.out, "groups.png"))
            print(f"wrote {os.path.join(args.out, 'groups.png')}")
        except ImportError as e:
            print(f"no plot: {e}")
    bad = [r for r in rows_a + rows_b if not r["correct"]]
    for r in bad:
        print(f"INCORRECT: {r}")
    print(f"{len(rows_a)} interference rows, {len(rows_b)} hierarchical rows, all correct: {not bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Compile kernels for sm_90 on a machine without a GPU (Triton ships ptxas), to catch compiled-mode-only errors
before spending GPU time. Usage: python scripts/compile_check.py [FILTER ...]

Compiles every kernel registered below (KERNELS, EXTRA and the catalog's), or, given filters, those whose module
name contains one of them (e.g. `fused_ops.all_reduce`; `fp8`: the FP8 kernels alone);
prints one line per kernel and exits non-zero on a failure."""

import importlib
import inspect
import os
import sys

os.environ["IRIS_COMPILE_ONLY"] = "1"
os.environ.pop("TRITON_INTERPRET", None)
sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "tests")]

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from fused_ops import sync  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
MAX_SHARED = 232448  # bytes of shared memory one program may use on an H100/H200


def compile_one(module, name, signature, constexprs):
    """constexprs may carry the launch options num_warps and num_stages too."""
    fn = getattr(importlib.import_module(module), name)
    options = {"num_warps": 4, **{k: constexprs[k] for k in ("num_warps", "num_stages") if k in constexprs}}
    constexprs = {k: v for k, v in constexprs.items() if k not in options}
    # constexpr parameters left out take their defaults, as a launch would (ASTSource would make them None)
    if "PDL" in fn.arg_names:  # as launched on GPUs (iris.pdl_launch); before the defaults, which say False
        constexprs = {"PDL": True, **constexprs}
    defaults = {k: v.default.value for k, v in inspect.signature(fn.fn).parameters.items()
                if isinstance(v.default, triton.language.constexpr) and k not in constexprs}
    constexprs = {**defaults, **constexprs}
    sig = dict(signature)
    sig.update({k: "constexpr" for k in constexprs})
    # As a real launch specializes them: pointers, sizes and col0 (rank * N) divisible by 16.
    unit = {"stride_ak", "stride_bn", "stride_cn", "stride_n"}  # row-major operands: Triton makes these constexpr 1
    for a in unit & set(sig):
        sig[a], constexprs = "constexpr", {**constexprs, a: 1}
    attrs = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names)
             if str(sig.get(a, "")).startswith("*") or a in ("n", "TOTAL", "M", "N", "K", "col0", "slot_size",
                                                             "row_len") or
             (a.startswith("stride") and a not in unit)}
    src = ASTSource(fn=fn, signature=sig, constexprs={(fn.arg_names.index(k),): v for k, v in constexprs.items()},
                    attrs=attrs)
    return triton.compile(src, target=TARGET, options=options)


def p(dtype):
    return "*" + dtype


HB = {"heap_bases": p("i64")}
KERNELS = [
    ("test_device_rma", "rma_kernel", {"src": p("fp16"), "dst": p("fp16"), "n": "i32", "cur": "i32", "world": "i32",
                                       **HB}, [{"OP": op, "BLOCK": 64} for op in ("load", "get", "store", "put",
                                                                                  "copy")]),
    ("test_device_flags", "ring_kernel", {"data": p("fp32"), "inbox": p("fp32"), "received": p("fp32"),
                                          "ready": p("i32"), "acks": p("i32"), "epoch": "i32", "cur": "i32",
                                          "world": "i32", **HB}, [{"CHUNK": 32}]),
    ("test_device_flags", "never_signalled_kernel", {"flag": p("i32"), "cur": "i32", **HB}, [{}]),
    ("test_device_atomics", "cas_increment_kernel", {"counter": p("i64"), "cur": "i32", "world": "i32", **HB},
     [{"ITERS": 3}]),
    ("iris.host", "_device_barrier_kernel", {"flags": p("i32"), "epoch_ptr": p("i32"), "cur_rank": "i32",
                                             "world_size": "i32", **HB}, [{}]),
    ("benchmarks.rma", "pingpong_kernel", {"flags": p("i32"), "iters": "i32", "cur": "i32", **HB}, [{}]),
    ("benchmarks.rma", "rma_bw_kernel", {"src": p("fp32"), "dst": p("fp32"), "n": "i32", "cur": "i32", "peer": "i32",
                                         **HB}, [{"OP": op, "BLOCK": 4096} for op in ("put", "get")]),
    ("benchmarks.rma", "atomic_bw_kernel", {"counters": p("i32"), "n": "i32", "cur": "i32", "peer": "i32", **HB},
     [{"BLOCK": 1024}]),
    ("iris.all_to_all_v", "_a2av_kernel", {"X": p("bf16"), "SPLITS": p("i64"), "OUT": p("bf16"),
                                           "OUT_SPLITS": p("i64"), "STATUS": p("i32"), "rows_in": "i32",
                                           "row_len": "i32", "capacity": "i32", "FLAGS": p("i32"),
                                           "EPOCHS": p("i32"), "cur_rank": "i32", "world_size": "i32", **HB},
     [{"WORLD_P2": w, "BLOCK_R": 1, "BLOCK_W": 4096, "num_warps": 16} for w in (2, 4, 8)]),
]


def auto_signature(module, name, dtype="bf16"):
    """Catalog kernels follow one naming convention: operands A/B/C/P, int32 flags, EPOCH and SYNC, int64 heap_bases,
    ints else."""
    fn = getattr(importlib.import_module(module), name)
    fn.constexprs_names = [fn.arg_names[i] for i in fn.constexprs]
    sig = {}
    for arg in fn.arg_names:
        if arg in ("A", "B", "C", "P", "G", "I", "OUT", "INBOX", "X", "Y", "S", "WS"):
            sig[arg] = p(dtype)
        elif arg == "PARTIALS":
            sig[arg] = p("fp32")
        elif arg in ("flags", "EPOCH", "SYNC", "FLAGS", "EPOCHS", "COUNTS", "done", "ready", "inflags", "consumed",
                     "final", "arrived"):
            sig[arg] = p("i32")
        elif arg in ("heap_bases", "TRACE"):
            sig[arg] = p("i64")
        elif arg not in fn.constexprs_names:
            sig[arg] = "i32"
    return sig


def catalog_kernels():
    gemm = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}
    # the default tile with the deepest pipeline (fused_ops.config.HOPPER_TILES): must fit in shared memory too
    deep = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_stages": 6, "num_warps": 8}
    out = []
    for tma in (True, False, "deep"):
        g = dict(deep, TMA=True) if tma == "deep" else dict(gemm, TMA=tma)
        k2 = dict(g, SPLIT_K=2)  # split-K's slice sums (fused_ops.gemm.gemm_unit)
        out += [
            ("fused_ops.gemm", "gemm_kernel", [dict(g, SIGNAL=s) for s in ("none", "local", "arrive")] +
             [dict(k2, SIGNAL="local"), dict(g, SPLIT_K=33, SIGNAL="none")] +  # 33 slices: added by atomics
             [dict(g, SIGNAL="none", ROLE=sync.role(**r)) for r in ({"enter": True}, {"arrive": True},
                                                                     {"exit": True, "close": True})]),
            ("fused_ops.gemm", "scaled_gemm_kernel", [dict(g, ROW_SCALES=False, SCALED=False),  # fused_ops.matmul
                                                      dict(k2, ROW_SCALES=False, SCALED=False)]),
            ("fused_ops.all_scatter.fused_sequential", "kernel", [g, k2]),
            ("fused_ops.all_scatter.wg_specialized", "kernel", [dict(g, GEMM_SMS=116),
                                                                dict(g, GEMM_SMS=116, TRACING=True),
                                                                dict(k2, GEMM_SMS=116)]),
            ("fused_ops.all_reduce.atomic", "kernel", [g, k2]),
            ("fused_ops.all_reduce.one_shot", "kernel", [g, dict(g, TRACING=True), k2]),
            ("fused_ops.all_reduce.two_shot", "kernel", [g]),
            ("fused_ops.all_reduce.wg_specialized", "kernel", [dict(g, GEMM_SMS=116), dict(k2, GEMM_SMS=116)]),
            ("fused_ops.reduce_scatter.fused", "kernel", [g, k2]),
            ("fused_ops.reduce_scatter.wg_specialized", "kernel", [dict(g, GEMM_SMS=116)]),
        ]
    tiles = {"BLOCK_M": 128, "BLOCK_N": 256, "GROUP_M": 8}
    out += [("fused_ops.all_gather.pull", "kernel", [gemm, deep]),
            ("fused_ops.all_gather.push", "kernel", [dict(g, COMM_SMS=16, COPY_K=256, TMA=t) for t in (0, 1, 2)
                                                     for g in (gemm, deep)]),
            ("fused_ops.all_gather.copy_engine", "kernel",
             [dict(gemm, TMA=t) for t in (0, 1, 2)] + [dict(deep, TMA=1)] +
             [dict(gemm, TMA=t, PHASE=ph) for t in (0, 1) for ph in (1, 2)] +
             [dict(gemm, TMA=1, PHASE=ph, SPLIT_K=2) for ph in (0, 1)]),  # split-K / a split last wave
            ("fused_ops.copy_reduce", "kernel", [dict(gemm, TMA=t, EVEN=e, GATHER=not e) for t in (0, 1, 2)
                                                 for e in (False, True)] +
             [dict(deep, TMA=1, EVEN=True, GATHER=False)] +
             [dict(gemm, TMA=t, EVEN=True, GATHER=False, FLAGS=False, PHASE=ph) for t in (0, 1) for ph in (1, 2)]),
            ("fused_ops.copy_reduce", "gathered_kernel", [{"BLOCK_M": 128}]),
            ("fused_ops.copy_reduce", "inbox_add_kernel", [{"BLOCK_M": 128, "BLOCK_N": 256, "num_warps": 8}]),
            ("fused_ops.all_gather.bulk_sync", "gather_kernel",
             [{"BLOCK_M": 128, "COPY_K": 256},
              {"BLOCK_M": 128, "COPY_K": 256, "ROLE": sync.role(enter=True, wait=True)}])]
    out += [("fused_ops.comm", "scatter_kernel", [dict(tiles, WAIT=w) for w in (True, False)] +
             [dict(tiles, WAIT=False, ROLE=sync.role(wait=True, exit=True, close=True))]),
            ("fused_ops.comm", "reduce_kernel", [dict(tiles, WAIT=w) for w in (True, False)] +
             [dict(tiles, WAIT=False, ROLE=sync.role(wait=True, close=True))])]
    return [(m, n, auto_signature(m, n), v) for m, n, v in out] + host_descriptor_kernels(gemm)


# The kernels that run the whole GEMM loop in one launch (module, kernel, constexprs besides the tiles)
WHOLE_GEMM = [("fused_ops.gemm", "gemm_kernel", {"SIGNAL": "local"}),
              ("fused_ops.all_scatter.fused_sequential", "kernel", {}),
              ("fused_ops.all_scatter.wg_specialized", "kernel", {"GEMM_SMS": 116}),
              ("fused_ops.all_reduce.atomic", "kernel", {}), ("fused_ops.all_reduce.one_shot", "kernel", {}),
              ("fused_ops.all_reduce.two_shot", "kernel", {}),
              ("fused_ops.all_reduce.wg_specialized", "kernel", {"GEMM_SMS": 116}),
              ("fused_ops.reduce_scatter.fused", "kernel", {}),
              ("fused_ops.reduce_scatter.wg_specialized", "kernel", {"GEMM_SMS": 116})]


def fp8_kernels():
    """The catalog kernels that take FP8 operands (fused_ops/fp8.py WITH_FP8): e4m3 A/B, bf16 C and partials, fp32
    scales (SCALES: fp8.scale_mode; all_gather_gemm's gathered row scales: 2 and 4), on FP8's default tile, through
    pointers and in-kernel descriptors of a column-major B (TMA=2), and with host-built e4m3 descriptors."""
    from fused_ops.config import HOPPER_FP8_TILES

    bm, bn, bk, stages, warps, _ = HOPPER_FP8_TILES[0]
    g = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "num_stages": stages, "num_warps": warps}
    kernels = WHOLE_GEMM
    out = []
    for m, n, cx in kernels:
        sig = {**auto_signature(m, n), "A": p("fp8e4nv"), "B": p("fp8e4nv"), "SA": p("fp32"), "SB": p("fp32")}
        out.append((m, n, sig, [dict(g, TMA=t, SCALES=s, **cx) for t in (0, 2) for s in (1, 4)] + [
            dict(g, TMA=2, SCALES=3, SPLIT_K=2, **cx) if "SPLIT_K" in getattr(importlib.import_module(m), n).arg_names
            else dict(g, TMA=0, SCALES=3, **cx)]))
        host = {**sig, "A": f"tensordesc<fp8e4nv[{bm}, {bk}]>", "B": f"tensordesc<fp8e4nv[{bn}, {bk}]>"}
        out.append((m, n, host, [dict(g, TMA=2, SCALES=4, **cx)]))
    # the GEMM alone's tile loop (fused_ops.fp8.scaled_mm, kernel="tile_loop"): per-tensor and row-wise scales
    sig = {**auto_signature("fused_ops.gemm", "scaled_gemm_kernel"), "A": p("fp8e4nv"), "B": p("fp8e4nv"),
           "SA": p("fp32"), "SB": p("fp32")}
    out.append(("fused_ops.gemm", "scaled_gemm_kernel", sig, [dict(g, TMA=t, ROW_SCALES=r) for t in (0, 2)
                                                              for r in (False, True)] +
                [dict(g, TMA=2, ROW_SCALES=True, SPLIT_K=2)]))
    sig = {**auto_signature("fused_ops.copy_reduce", "kernel"), "A": p("fp8e4nv"), "B": p("fp8e4nv"),
           "SA": p("fp32"), "SB": p("fp32")}
    out.append(("fused_ops.copy_reduce", "kernel", sig, [dict(g, TMA=t, EVEN=e, GATHER=not e, SCALES=s)
                                                         for t in (0, 2) for e in (False, True) for s in (1, 4)] +
                [dict(g, TMA=2, EVEN=True, GATHER=False, FLAGS=False, PHASE=ph, SCALES=3) for ph in (1, 2)]))
    for m, n, cx in (("fused_ops.all_gather.pull", "kernel", {}),
                     ("fused_ops.all_gather.push", "kernel", {"COMM_SMS": 16, "COPY_K": 256}),
                     ("fused_ops.all_gather.copy_engine", "kernel", {"PHASE": 0}),
                     ("fused_ops.all_gather.copy_engine", "kernel", {"PHASE": 2, "SPLIT_K": 2})):
        names = getattr(importlib.import_module(m), n).arg_names
        sig = {**auto_signature(m, n), "A": p("fp8e4nv"), "B": p("fp8e4nv"), "SA": p("fp32"), "SB": p("fp32"),
               **({"G": p("fp8e4nv")} if "G" in names else {})}
        out.append((m, n, sig, [dict(g, SCALES=s, **cx, **({"TMA": t} if "TMA" in names else {}))
                                for s in (2, 4) for t in ((0, 2) if "TMA" in names else (0,))]))
    return out


def host_descriptor_kernels(gemm):
    """The kernels again with the operands Problem.operands builds on the host: TMA descriptors instead of pointers
    (push and copy_reduce: B only; they move or store through A's pointer)."""
    a = f"tensordesc<bf16[{gemm['BLOCK_M']}, {gemm['BLOCK_K']}]>"
    b = {1: f"tensordesc<bf16[{gemm['BLOCK_K']}, {gemm['BLOCK_N']}]>",
         2: f"tensordesc<bf16[{gemm['BLOCK_N']}, {gemm['BLOCK_K']}]>"}
    whole = WHOLE_GEMM
    out = []
    for tma in (1, 2):
        for m, n, cx in whole:
            out.append((m, n, {**auto_signature(m, n), "A": a, "B": b[tma]}, [dict(gemm, TMA=tma, **cx)]))
        out += [("fused_ops.all_gather.copy_engine", "kernel",
                 {**auto_signature("fused_ops.all_gather.copy_engine", "kernel"), "A": a, "G": a, "B": b[tma]},
                 [dict(gemm, TMA=tma, PHASE=ph) for ph in (0, 1, 2)]),
                ("fused_ops.all_gather.push", "kernel", {**auto_signature("fused_ops.all_gather.push", "kernel"),
                                                         "B": b[tma]}, [dict(gemm, COMM_SMS=16, COPY_K=256, TMA=tma)]),
                ("fused_ops.copy_reduce", "kernel", {**auto_signature("fused_ops.copy_reduce", "kernel"), "B": b[tma]},
                 [dict(gemm, TMA=tma, EVEN=False, GATHER=True)] +
                 [dict(gemm, TMA=tma, EVEN=True, GATHER=False, FLAGS=False, PHASE=ph) for ph in (1, 2)])]
    return out


def main():
    failures = 0
    only = sys.argv[1:]
    fp8_only = only == ["fp8"]  # `fp8`: the FP8 kernels alone
    every = fp8_kernels() if fp8_only else KERNELS + EXTRA + catalog_kernels() + fp8_kernels()
    for module, name, sig, variants in every:
        if only and not fp8_only and not any(o in module for o in only):
            continue
        for cx in variants:
            try:
                k = compile_one(module, name, sig, cx)
                ptx = k.asm["ptx"]
                v4 = "st.global.v4" in ptx or "ld.global.v4" in ptx
                tma = "cp.async.bulk.tensor" in ptx
                if str(sig.get("A")).startswith("tensordesc") and "tensormap.cp_fenceproxy" in ptx:
                    raise RuntimeError("A and B came as host-built descriptors, yet one was built in the kernel")
                if k.metadata.shared > MAX_SHARED:  # compiles, but would fail at launch
                    raise RuntimeError(f"needs {k.metadata.shared} bytes of shared memory, more than {MAX_SHARED}")
                print(f"ok   {module}.{name} {cx} (16B accesses: {v4}, TMA: {tma}, wgmma: {'wgmma' in ptx}, "
                      f"PDL waits: {ptx.count('griddepcontrol.wait')}, shared: {k.metadata.shared} B)")
            except Exception as err:  # report all, then fail
                failures += 1
                print(f"FAIL {module}.{name} {cx}: {str(err).splitlines()[-1][:300]}")
    sys.exit(1 if failures else 0)


EXTRA = [
    ("benchmarks.rma_tuning", "put_tma", {"src": p("fp32"), "dst": p("fp32"), "rows": "i32", "cur": "i32",
                                          "peer": "i32", **HB}, [{"BR": 32, "W": 256}]),
    ("benchmarks.rma_tuning", "pingpong_variant", {"flags": p("i32"), "iters": "i32", "cur": "i32", **HB},
     [{"POLL": "iris"}, {"POLL": "atomic"}]),
    ("benchmarks.rma_tuning", "put_plain", {"src": p("fp32"), "dst": p("fp32"), "n": "i32", "cur": "i32",
                                            "peer": "i32", **HB}, [{"BLOCK": 4096, "HINT": "cs"}]),
]


def _collectives():
    """iris.collectives' kernels (iris/collectives/kernels.py), one per host collective and variant."""
    import triton.language as tl

    m = "iris.collectives.kernels"
    red = {"OP": "sum", "ACC": tl.float32, "BLOCK": 4096}
    barrier = [("one_shot_kernel", [dict(red, STAGED=False), dict(red, STAGED=True, OP="max")]),
               ("two_shot_kernel", [dict(red, STAGED=False), dict(red, STAGED=True)]),
               ("atomic_kernel", [{"BLOCK": 4096}]), ("all_gather_kernel", [{"BLOCK": 4096}]),
               ("reduce_scatter_kernel", [red]), ("all_to_all_kernel", [{"BLOCK": 4096}]),
               ("broadcast_kernel", [{"STAGED": s, "BLOCK": 4096} for s in (False, True)])]
    push = [("push_all_reduce_kernel", [{"OP": "sum", "VARIANT": v, "BLOCK": 2048}
                                        for v in ("one_shot", "ring", "atomic")] +
             [{"OP": "sum", "VARIANT": "one_shot", "BLOCK": 8192}]),
            ("push_two_shot_kernel", [{"OP": "sum", "BLOCK": 2048}]),
            ("push_all_gather_kernel", [{"BLOCK": 2048}]),
            ("push_reduce_scatter_kernel", [{"OP": "sum", "BLOCK": 2048}])]
    return [(m, name, auto_signature(m, name), variants) for name, variants in barrier + push]


EXTRA += _collectives()

if __name__ == "__main__":
    main()

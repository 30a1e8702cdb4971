"""Compile the learning path's kernels (examples/NN_*.py) for sm_90 on a machine without a GPU (Triton ships ptxas),
so compiled-mode-only errors (the device context is a Triton aggregate there) show before GPU time is spent. The CPU
tests run the same kernels under the interpreter.

    python scripts/compile_examples.py      # one line per kernel; exit status 1 on any failure
"""

import importlib.util
import os
import sys

os.environ["IRIS_COMPILE_ONLY"] = "1"
os.environ.pop("TRITON_INTERPRET", None)
sys.path.insert(0, os.getcwd())

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

TARGET = GPUTarget("cuda", 90, 32)
INTS = {"M", "N", "K", "ML", "NL", "KL", "S_LOCAL"}  # upper-case names that are sizes, not tensors
TENSORS = {"x", "y", "out", "data", "inbox", "result", "parts", "counter", "biggest", "owner", "tickets", "slots",
           "total", "mine", "pushed", "pulled", "copied", "from_prev"}
I32 = "*i32"
G3 = {"BM": 32, "BN": 32, "BK": 32}
JOBS = [  # (file, kernel, argument types beyond the naming convention, constexprs)
    ("01_load_store.py", "shift_kernel", {}, {"BLOCK": 256}),
    ("02_put_get.py", "exchange_kernel", {}, {"BLOCK": 128}),
    ("03_atomics.py", "atomics_kernel", {"counter": I32, "biggest": I32, "owner": I32, "tickets": I32}, {}),
    ("04_message_passing.py", "send_and_receive", {"ready": I32}, {"CHUNK": 64}),
    ("05_device_barrier.py", "write_kernel", {"slots": I32}, {}),
    ("05_device_barrier.py", "write_barrier_read_kernel", {"slots": I32, "total": I32}, {"WORLD": 2}),
    ("06_tile_collectives.py", "collectives_kernel", {}, {"WORLD": 2, "BLOCK": 32}),
    ("07_gemm_all_scatter_bulk_sync.py", "gemm_kernel", {}, G3),
    ("07_gemm_all_scatter_bulk_sync.py", "scatter_kernel", {}, {"BM": 32, "BN": 32}),
    ("08_gemm_all_scatter_fused.py", "gemm_scatter_kernel", {}, G3),
    ("09_gemm_all_scatter_producer_consumer.py", "producer", {"ready": I32}, G3),
    ("09_gemm_all_scatter_producer_consumer.py", "consumer", {"ready": I32}, {"BM": 32, "BN": 32}),
    ("10_gemm_all_scatter_wg_specialized.py", "gemm_scatter_kernel", {"ready": I32}, {"GEMM_PROGRAMS": 1, **G3}),
    ("11_gemm_all_reduce_one_shot.py", "gemm_all_reduce_kernel", {"arrived": I32}, G3),
    ("12_all_gather_gemm_pull.py", "ag_gemm_pull_kernel", {}, G3),
    ("13_all_gather_gemm_push.py", "push_kernel", {"ready": I32}, {"BM": 16, "BK": 32}),
    ("13_all_gather_gemm_push.py", "gemm_kernel", {"ready": I32}, {"BM": 16, "BN": 32, "BK": 32}),
    ("16_tracing.py", "traced_gemm_scatter", {}, {"TRACING": True, **G3}),
    ("17_device_grid.py", "rows_matmul_kernel", {}, G3),
    ("18_flash_decode.py", "flash_decode_kernel", {"scale": "fp32", "K": "*fp32"},
     {"H": 4, "D": 16, "S_BLOCK": 32, "WORLD": 2, "WORLD_P2": 2}),
    ("19_seed_kernels.py", "matmul_k", {}, G3),
    ("19_seed_kernels.py", "allreduce_add_k", {}, {"BLOCK_SIZE": 256}),
]


def load(name):
    spec = importlib.util.spec_from_file_location("example_" + name[:2], os.path.join("examples", name))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def arg_type(name, types):
    if name in types:
        return types[name]
    if name in ("context", "TRACE"):
        return "*i64"
    if name in INTS:
        return "i32"
    if name[0].isupper() or name.endswith("ptr") or name in TENSORS:
        return "*fp32"
    return "i32"


def compile_kernel(fn, types, constexprs):
    fn = getattr(fn, "fn", fn) if not hasattr(fn, "arg_names") else fn  # iris.jit wraps the JITFunction
    sig = {a: "constexpr" if a in constexprs else arg_type(a, types) for a in fn.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names) if sig[a].startswith("*")}
    src = ASTSource(fn=fn, signature=sig, attrs=attrs,
                    constexprs={(fn.arg_names.index(k),): v for k, v in constexprs.items()})
    return triton.compile(src, target=TARGET, options={"num_warps": 4})


def main():
    failures = 0
    for path, name, types, constexprs in JOBS:
        try:
            k = compile_kernel(getattr(load(path), name), types, constexprs)
            print(f"ok   {path} {name} ({len(k.asm['ptx'].splitlines())} PTX lines)")
        except Exception as err:  # noqa: BLE001  (report every kernel, then fail)
            failures += 1
            print(f"FAIL {path} {name}: {(str(err).splitlines() or [repr(err)])[-1][:300]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""Compile kernels for sm_90 on a machine without a GPU (Triton ships ptxas), to catch compiled-mode-only errors
before spending GPU time. Usage: IRIS_COMPILE_ONLY=1 python scripts/compile_check.py module:kernel:sig:constexprs ...

Each spec: `tests.test_device_flags:ring_kernel` with the signature inferred from a table below, or pass --all for the
kernels registered in KERNELS."""

import importlib
import os
import sys

os.environ["IRIS_COMPILE_ONLY"] = "1"
os.environ.pop("TRITON_INTERPRET", None)
sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "tests")]

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)


def compile_one(module, name, signature, constexprs):
    fn = getattr(importlib.import_module(module), name)
    sig = dict(signature)
    sig.update({k: "constexpr" for k in constexprs})
    # As a real launch specializes them: pointers (and integers named n) divisible by 16.
    attrs = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names)
             if str(sig.get(a, "")).startswith("*") or a == "n"}
    src = ASTSource(fn=fn, signature=sig, constexprs={(fn.arg_names.index(k),): v for k, v in constexprs.items()},
                    attrs=attrs)
    return triton.compile(src, target=TARGET, options={"num_warps": 4})


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
]


def main():
    failures = 0
    for module, name, sig, variants in KERNELS + [k for k in EXTRA]:
        for cx in variants:
            try:
                k = compile_one(module, name, sig, cx)
                v4 = "st.global.v4" in k.asm["ptx"] or "ld.global.v4" in k.asm["ptx"]
                print(f"ok   {module}.{name} {cx} (16B accesses: {v4})")
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
if __name__ == "__main__":
    main()

"""Compile the expert-parallel kernels (iris/all_to_all_v.py, fused_ops/moe/kernels.py) for sm_90 on a machine without
a GPU (scripts/compile_check.py's compile_one), bf16 and fp16, as the host launches them.

    python scripts/compile_check_moe.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compile_check as cc  # noqa: E402  (sets IRIS_COMPILE_ONLY before iris is imported)

P = cc.p
I32, I64 = P("i32"), P("i64")


def kernels(dt):
    d = P(dt)
    gemm = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "EL_P2": 32, "num_warps": 4, "num_stages": 3}
    rank = {"cur_rank": "i32", "world_size": "i32", "heap_bases": I64}
    return [
        ("iris.all_to_all_v", "_a2av_kernel",
         {"X": d, "SPLITS": I64, "OUT": d, "OUT_SPLITS": I64, "STATUS": I32, "rows_in": "i32", "row_len": "i32",
          "capacity": "i32", "FLAGS": I32, "EPOCHS": I32, **rank}, [{"WORLD_P2": 8, "BLOCK_R": 1, "BLOCK_W": 4096},
                                                                    {"WORLD_P2": 2, "BLOCK_R": 16, "BLOCK_W": 256}]),
        ("fused_ops.moe.kernels", "reserve_kernel",
         {"HIST": I32, "BASES": I32, "COUNTS": I32, "FLAGS": I32, "EPOCH": I32, "E_local": "i32", "E": "i32", **rank},
         [{"E_P2": 256}]),
        ("fused_ops.moe.kernels", "push_kernel",
         {"X": d, "IDX": I32, "POS": I32, "BASES": I32, "XBUF": d, "META": I32, "BLOCKREADY": I32, "SLOT_OF": I32,
          "STATUS": I32, "DONE": I32, "FLAGS": I32, "RETREADY": I32, "n_assign": "i32", "k": "i32", "H": "i32",
          "cap": "i32", "E_local": "i32", "E": "i32", "nblk": "i32", "per_row": "i32", **rank},
         [{"BLOCK_A": 32, "BLOCK_H": 256, "BLOCK_M": 64, "FUSED": f} for f in (False, True)]),
        ("fused_ops.moe.kernels", "grouped_gemm_kernel",
         {"A": d, "B": d, "C": d, "COUNTS": I32, "FLAGS": I32, "EPOCH": I32, "cap": "i32", "N": "i32", "K": "i32",
          "E_local": "i32", "BLOCKREADY": I32, "nblk": "i32", "META": I32, "RETREADY": I32, "n_assign": "i32",
          **rank}, [dict(gemm, MODE="dispatched", ACT="silu"), dict(gemm, MODE="plain", ACT="none"),
                    dict(gemm, MODE="arrivals", ACT="relu"), dict(gemm, MODE="push", ACT="none")]),
        ("fused_ops.moe.kernels", "return_kernel",
         {"OBUF": d, "META": I32, "RET": d, "COUNTS": I32, "DONE": I32, "FLAGS": I32, "cap": "i32", "H": "i32",
          "n_assign": "i32", "E_local": "i32", **rank}, [{"BLOCK_M": 64, "BLOCK_H": 256, "EL_P2": 32}]),
        ("fused_ops.moe.kernels", "combine_kernel",
         {"RET": d, "RETREADY": I32, "SLOT_OF": I32, "WEIGHTS": P("fp32"), "Y": d, "COUNTS": I32, "BLOCKREADY": I32,
          "FLAGS": I32, "EPOCH": I32, "T": "i32", "k": "i32", "H": "i32", "E_local": "i32", "n_ready": "i32",
          "per_row": "i32", **rank},
         [{"FUSED": f, "BLOCK_T": 16, "BLOCK_H": 256, "KP2": 8, "SPIN": 1 << 16} for f in (False, True)]),
    ]


def main():
    failures = 0
    for dt in ("bf16", "fp16"):
        for module, name, sig, variants in kernels(dt):
            for cx in variants:
                try:
                    k = cc.compile_one(module, name, sig, cx)
                    ptx = k.asm["ptx"]
                    if k.metadata.shared > cc.MAX_SHARED:
                        raise RuntimeError(f"needs {k.metadata.shared} bytes of shared memory")
                    print(f"ok   {dt} {module}.{name} {cx} (wgmma: {'wgmma' in ptx}, shared: {k.metadata.shared} B)")
                except Exception as err:  # report all, then fail
                    failures += 1
                    print(f"FAIL {dt} {module}.{name} {cx}: {str(err).splitlines()[-1][:400] if str(err) else err!r}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

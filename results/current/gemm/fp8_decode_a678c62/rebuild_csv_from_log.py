"""Rebuild gemm_fp8_decode_from_log.csv.gz from gemm_fp8_decode.log (the run's own CSV did not come back from the
device: too many files under its output folder). Run from the repository root."""
import re
import sys

import pandas as pd

sys.path.insert(0, ".")
from benchmarks import shapes as S  # noqa: E402

D = "results/current/gemm/fp8_decode_a678c62/"
COMMAND = ("python benchmarks/gemm.py --fp8 --shapes 1x4000x4096 1x19008x8192 4x14336x4096 8x8192x8192 16x3584x2368 "
           "16x5120x6912 16x6912x5120 16x16384x26624 --configs 'fp8 16x64x256 s4 w4 k2' 'fp8 16x64x256 s4 w4 k3' "
           "'fp8 16x128x256 s4 w4' 'fp8 16x128x256 s4 w4 k2' 'fp8 16x128x256 s4 w4 k3' 'fp8 16x128x256 s4 w4 k4' "
           "'fp8 16x256x256 s3 w4' 'fp8 16x256x256 s3 w4 k2' 'fp8 16x256x256 s3 w4 k4' 'fp8 16x256x256 s3 w4 k6' "
           "'fp8 16x256x256 s3 w8 k4' --out DIR")
pat = re.compile(r"^\s*(\d+)x(\d+)x(\d+) fp8 (tensor|row)\s+(.+?)\s+([\d.]+) µs\s+torch\s+([\d.]+)\s+([\d.]+)x\s+"
                 r"err ([\d.e+-]+) \(torch ([\d.e+-]+)\)")
rows = []
for line in open(D + "gemm_fp8_decode.log"):
    mt = pat.match(line)
    if mt:
        m, n, k = map(int, mt.group(1, 2, 3))
        t, tt = float(mt.group(6)), float(mt.group(7))
        rows.append(dict(m=m, n=n, k=k, shape_class=S.shape_class(m, n, k), config=mt.group(5).strip(),
                         scaling=mt.group(4), time_us=t, torch_us=tt, vs_torch=tt / t, tflops=2 * m * n * k / t / 1e6,
                         rel_error=float(mt.group(9)), torch_rel_error=float(mt.group(10)), correct=True,
                         dtype="float8_e4m3fn", device="1x NVIDIA H100 80GB HBM3", date="2026-11-26", commit="a678c62",
                         command=COMMAND, rebuilt_from="gemm_fp8_decode.log"))
pd.DataFrame(rows).to_csv(D + "gemm_fp8_decode_from_log.csv.gz", index=False)
print(len(rows), "rows")

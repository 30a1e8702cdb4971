"""Rebuild benchmark CSVs from their logs (the device returned only 8 files: these CSVs stayed behind). Run from the
repository root before the files were renamed (models2.log -> gemm_models_e9cb8e8_run2.log, rank.log ->
gemm_rank_shapes_e9cb8e8.log; models2_rebuilt_from_log.csv -> gemm_models_e9cb8e8_run2_from_log.csv ...)."""
import re, sys
import pandas as pd
sys.path.insert(0, ".")
from benchmarks import shapes as S
D = "results/current/gemm/final_e9cb8e8/"
stamp = pd.read_csv(D + "models1/gemm.csv").iloc[0]
pat = re.compile(r"^\s*(\d+)x(\d+)x(\d+) (.+?)\s+([\d.]+) µs\s+torch\s+([\d.]+)\s+([\d.]+)x\s+err ([\d.e+-]+)")
for log, command in (("models2", "python benchmarks/gemm.py --shapes models --configs default default, padded B"),
                     ("models3", "python benchmarks/gemm.py --shapes models --configs default default, padded B"),
                     ("rank", "python benchmarks/gemm.py --rank-shapes --configs default")):
    rows = []
    for line in open(D + log + ".log"):
        mt = pat.match(line)
        if not mt:
            continue
        m, n, k = map(int, mt.group(1, 2, 3))
        t, tt, err = float(mt.group(5)), float(mt.group(6)), float(mt.group(8))
        rows.append(dict(m=m, n=n, k=k, shape_class=S.shape_class(m, n, k), config=mt.group(4).strip(), time_us=t,
                         torch_us=tt, vs_torch=tt / t, tflops=2 * m * n * k / t / 1e6, rel_error=err,
                         correct=err < 1e-2, dtype="bfloat16", device=stamp.device, date=stamp.date,
                         commit="e9cb8e8", command=command, rebuilt_from=f"{log}.log"))
    df = pd.DataFrame(rows)
    df.to_csv(D + f"{log}_rebuilt_from_log.csv", index=False)
    print(log, len(df), df.config.value_counts().to_dict())

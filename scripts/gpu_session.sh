#!/usr/bin/env bash
# One GPU pass for this session's work, by stages, on a 2-GPU machine. Writes logs, CSVs and PNGs under $OUT.
# Usage (device machine): IRIS_COMMIT=<sha> bash scripts/gpu_session.sh tests grid traces catalog | tp | sweep
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 IRIS_BACKEND=cuda PYTHONPATH=$PWD
OUT=${OUT:-out}; mkdir -p "$OUT"
status=0
run() { echo "=== $* ($(date +%T))"; "$@" || { echo "!!! failed ($?): $*"; status=1; }; }
for stage in "$@"; do
  case $stage in
    tests)   run timeout 300 python3 -m pytest -q tests/test_torch_ops.py tests/test_tracing.py \
               tests/test_grid_partition.py "tests/test_fused_ops.py::test_transposed_weight_through_both_paths" \
               2>&1 | tee "$OUT/pytest_cuda_session2.log" | tail -15 ;;
    grid)    run timeout 120 python3 examples/device_grid.py 2>&1 | tee "$OUT/device_grid.log" ;;
    traces)  run timeout 240 python3 scripts/trace_timelines.py --out "$OUT/traces" gemm_all_scatter:wg_specialized \
               gemm_all_scatter:fused_sequential gemm_all_reduce:one_shot gemm_all_reduce:wg_specialized \
               && tar -C "$OUT" -czf "$OUT/traces.tgz" traces && rm -r "$OUT/traces" ;;
    catalog) run timeout 300 python3 scripts/gpu_catalog.py --out "$OUT" 2>&1 | tail -12 ;;
    tp)      run timeout 540 python3 examples/tp_mlp.py --bench --out "$OUT" --shapes ${TP_SHAPES:-4096x4096 16384x8192} ;;
    partition) run timeout 60 python3 -m pytest -q tests/test_grid_partition.py 2>&1 | tail -3 ;;
    sweep)   run timeout 580 python3 -m taxonomy sweep --out "$OUT" --iters 10 --warmup 2 ${SWEEP_ARGS:-} ;;
    *) echo "unknown stage $stage"; status=1 ;;
  esac
done
exit $status

#!/usr/bin/env bash
# The whole test suite on a GPU machine, in three concurrent shards (rank processes share the GPU(s) where there are
# fewer GPUs than ranks; the NCCL tests then skip and say so). Logs under $OUT; exits non-zero if any shard failed.
# Usage (device machine): OUT=DIR bash scripts/gpu_suite.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 IRIS_BACKEND=cuda PYTHONPATH=$PWD IRIS_WAIT_TIMEOUT_S=${IRIS_WAIT_TIMEOUT_S:-120}
OUT=${OUT:-out}; mkdir -p "$OUT"
shards=(
  "tests/test_fused_ops.py"
  "tests/test_collectives.py tests/test_tile.py tests/test_replay.py tests/test_host_api.py tests/test_device_rma.py
   tests/test_device_atomics.py tests/test_device_flags.py tests/test_torch_ops.py tests/test_auto.py
   tests/test_launch.py tests/test_tracing.py tests/test_grid_partition.py tests/test_config.py tests/test_taxonomy.py"
  "tests/test_fp8_catalog.py tests/test_front_door.py tests/test_groups.py tests/test_out_of_step.py tests/test_moe.py
   tests/test_device_context.py tests/test_reference_compat.py tests/test_examples.py tests/test_gemm_shapes.py
   tests/test_public_names.py tests/test_settings.py tests/test_tune_table.py tests/test_wgmma.py
   tests/test_local_gemm.py"
)
listed=$(printf '%s\n' "${shards[@]}" | tr ' ' '\n' | grep -c .)
all=$(ls tests/test_*.py | grep -v test_lint.py | wc -l)  # ruff is not installed on the GPU machine
[ "$listed" -eq "$all" ] || echo "!!! the shards list $listed test files, tests/ has $all (besides test_lint.py)"
pids=()
for i in "${!shards[@]}"; do
  timeout ${SHARD_TIMEOUT:-560} python3 -m pytest -q -rs -p no:cacheprovider ${shards[$i]} > "$OUT/pytest_shard$i.log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "!!! shard $i failed"; status=1; }
  echo "--- shard $i: $(grep -aE '[0-9]+ (passed|failed)' "$OUT/pytest_shard$i.log" | tail -1)"
done
grep -ahE "^(FAILED|ERROR) " "$OUT"/pytest_shard*.log | head -40
exit $status

#!/usr/bin/env bash
# GPU validation of the core on a 2-GPU machine: the test suite on the CUDA backend, then the RMA benchmark.
# Usage (device machine): IRIS_COMMIT=<sha> bash scripts/gpu_core.sh   (writes logs/CSV/PNG under $OUT or ./out)
set -uo pipefail
# CSVs record IRIS_COMMIT; git on the device copy can be stale (it once said e72067e for a tree at 5324bd4)
: "${IRIS_COMMIT:?set IRIS_COMMIT=<sha of the checkout being run>}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 IRIS_BACKEND=cuda PYTHONPATH=$PWD
OUT=${OUT:-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv | tee "$OUT/gpu.txt"
nvidia-smi topo -m | tee -a "$OUT/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/gpu.txt"
timeout 400 python3 -m pytest -q -x tests ${PYTEST_ARGS:-} 2>&1 | tee "$OUT/pytest_cuda.log" | tail -25
timeout 170 python3 benchmarks/rma.py --out "$OUT" 2>&1 | tee "$OUT/rma.log" | tail -20

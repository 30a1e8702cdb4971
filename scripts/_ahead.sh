export IRIS_COMMIT=$1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1 IRIS_BACKEND=cuda PYTHONPATH=$PWD
mkdir -p $OUT/a
for ah in 0 1; do
  BENCH_AHEAD=$ah timeout 280 python3 benchmarks/gemm.py --shapes models-all --part 2/3 --configs matmul --out $OUT/a/ahead$ah > $OUT/a/ahead$ah.log 2>&1
  echo "== BENCH_AHEAD=$ah rc=$?"; tail -14 $OUT/a/ahead$ah.log
done

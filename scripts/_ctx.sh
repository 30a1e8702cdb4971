export IRIS_COMMIT=$1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1 IRIS_BACKEND=cuda PYTHONPATH=$PWD
mkdir -p $OUT/c
D="16x3584x4736 16x3584x5120 16x4096x1024 16x2880x1024 16x2112x7168 1x4608x16384"
python3 benchmarks/gemm.py --shapes $D 8192x28672x8192 16384x16384x8192 1024x151936x8192 $D --configs matmul --out $OUT/c/churn > $OUT/c/churn.log 2>&1; echo rc=$?
grep "matmul" $OUT/c/churn.log
python3 benchmarks/gemm.py --shapes models-all --part 2/3 --configs matmul --out $OUT/c/part2 > $OUT/c/part2.log 2>&1 &
sleep 1; echo started
wait
grep -E "^ +(16x3584x4736|16x3584x5120|16x4096x1024|16x2880x1024|16x2112x7168|1x4608x16384) " $OUT/c/part2.log

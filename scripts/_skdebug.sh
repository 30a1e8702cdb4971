export IRIS_COMMIT=$1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1 IRIS_BACKEND=cuda PYTHONPATH=$PWD
mkdir -p $OUT/d
for dbg in 0 1 2 3; do
  SK_DEBUG=$dbg python3 benchmarks/gemm.py --fp8 --shapes 1536x1408x4096 1024x1280x8192 1024x1536x4096 --configs default 'wgmma fp8 128x128x128 s6 sk' 'wgmma fp8 128x256x128 s3 sk fast accum' --out $OUT/d/dbg$dbg > $OUT/d/dbg$dbg.log 2>&1
  echo "== SK_DEBUG=$dbg"; grep "tensor" $OUT/d/dbg$dbg.log | grep -v "^FP8"
done

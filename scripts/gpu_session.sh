#!/usr/bin/env bash
# One GPU pass for this session's work, by stages, on a 2-GPU machine. Writes logs, CSVs and PNGs under $OUT; exits
# non-zero if any stage failed.
# Usage (device machine): IRIS_COMMIT=<sha> bash scripts/gpu_session.sh STAGE [STAGE ...] pack (the stages are below;
# `pack` last: one archive, since the device returns only so many files)
set -uo pipefail
# CSVs record IRIS_COMMIT; git on the device copy can be stale (it once said e72067e for a tree at 5324bd4)
: "${IRIS_COMMIT:?set IRIS_COMMIT=<sha of the checkout being run>}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 IRIS_BACKEND=cuda PYTHONPATH=$PWD
OUT=${OUT:-out}; mkdir -p "$OUT"
status=0
run() {  # run LOG CMD...: full output to $OUT/LOG, its tail here
  local log=$1; shift
  echo "=== $* ($(date +%T))"
  "$@" > "$OUT/$log" 2>&1
  local rc=$?
  grep -v "destroy_process_group\|FutureWarning\|enable_symm_mem_for_group" "$OUT/$log" | tail -${TAIL:-15}
  if [ $rc -ne 0 ]; then echo "!!! failed ($rc): $*"; status=1; fi
}
cool_hot() {  # cool_hot NAME GEMM_ARGS...: benchmarks/gemm.py cool and right after heavy GEMMs (--hot $HOT), one run
  # each, under $OUT/NAME_0 and $OUT/NAME_$HOT
  local name=$1; shift
  for hot in 0 ${HOT:-0.7}; do
    run "gemm_${name}_$hot.log" timeout ${X_TIMEOUT:-250} python3 benchmarks/gemm.py --hot $hot "$@" \
      --out "$OUT/${name}_$hot"
  done
}
gemm_gpu_tests() {  # gemm_gpu_tests LOG EXPR: the Gluon kernel's and the GEMM defaults' GPU tests selected by -k EXPR
  run "$1" timeout ${TEST_TIMEOUT:-300} python3 -m pytest -v -p no:warnings tests/test_wgmma.py \
    tests/test_local_gemm.py -k "$2"
}
for stage in "$@"; do
  case $stage in
    agtests) run pytest_ag.log timeout 200 python3 -m pytest -q tests/test_fused_ops.py -k all_gather ;;
    tests)   run pytest_cuda_session2.log timeout 300 python3 -m pytest -q tests/test_torch_ops.py \
               tests/test_tracing.py tests/test_grid_partition.py \
               "tests/test_fused_ops.py::test_transposed_weight_through_both_paths" ;;
    partition) run pytest_partition.log timeout 90 python3 -m pytest -q tests/test_grid_partition.py ;;
    grid)    run device_grid.log timeout 120 python3 examples/device_grid.py ;;
    traces)  run traces.log timeout 240 python3 scripts/trace_timelines.py --out "$OUT/traces" \
               gemm_all_scatter:wg_specialized gemm_all_scatter:fused_sequential gemm_all_reduce:one_shot \
               gemm_all_reduce:wg_specialized && tar -C "$OUT" -czf "$OUT/traces.tgz" traces && rm -r "$OUT/traces" ;;
    catalog) run catalog.log timeout 300 python3 scripts/gpu_catalog.py --out "$OUT" ;;
    tp)      run tp_mlp.log timeout 540 python3 examples/tp_mlp.py --bench --out "$OUT" \
               --shapes ${TP_SHAPES:-4096x4096 16384x8192} ;;
    sweep)   run sweep.log timeout ${SWEEP_TIMEOUT:-580} python3 -m taxonomy sweep --out "$OUT" --iters ${ITERS:-10} \
               --warmup 2 ${SWEEP_ARGS:-} ;;
    tests4)  run pytest_cuda_4ranks.log timeout 260 python3 -m pytest -q -k 4ranks tests/test_fused_ops.py \
               tests/test_device_rma.py tests/test_device_atomics.py tests/test_device_flags.py ;;
    rma4)    run rma_matrix.log timeout 150 python3 benchmarks/rma_matrix.py -n 4 --out "$OUT" ;;
    sweep4)  run sweep4.log timeout ${SWEEP_TIMEOUT:-200} python3 -m taxonomy sweep -r 4 --out "$OUT/w4" --iters 8 ${SWEEP_ARGS:-} \
               --warmup 2 ;;
    colltests) run pytest_collectives_cuda.log timeout 240 python3 -m pytest -q tests/test_collectives.py tests/test_tile.py ;;
    replay)  run pytest_cuda_session3.log timeout ${TEST_TIMEOUT:-240} python3 -m pytest -q tests/test_replay.py \
               tests/test_collectives.py tests/test_tile.py tests/test_torch_ops.py tests/test_auto.py ;;
    sweepE)  run sweep_eager.log timeout ${SWEEP_TIMEOUT:-580} python3 -m taxonomy sweep --out "$OUT/eager" \
               --iters ${ITERS:-8} --warmup 2 --timing eager ${SWEEP_ARGS:-} ;;
    sweepG)  run sweep_graph.log timeout ${SWEEP_TIMEOUT:-580} python3 -m taxonomy sweep --out "$OUT/graph" \
               --iters ${ITERS:-8} --warmup 2 --timing graph ${SWEEP_ARGS:-} ;;
    coll)    run collectives.log timeout ${COLL_TIMEOUT:-400} python3 benchmarks/collectives.py --out "$OUT" \
               ${COLL_ARGS:-} ;;
    host)    run host_overhead_cuda.log timeout 120 python3 benchmarks/host_overhead.py ;;
    twoshot) run pytest_two_shot.log timeout 200 python3 -m pytest -q tests/test_fused_ops.py -k two_shot ;;
    gemm)    run gemm.log timeout 300 python3 benchmarks/gemm.py --out "$OUT" ;;
    pushblocks) run push_blocks.log timeout 240 python3 benchmarks/push_blocks.py --out "$OUT" ;;
    coll4)   run collectives4.log timeout ${COLL_TIMEOUT:-400} python3 benchmarks/collectives.py -n 4 --out "$OUT/w4" \
               ${COLL_ARGS:-} ;;
    alltests) run pytest_cuda_all.log timeout ${TEST_TIMEOUT:-420} python3 -m pytest -q tests ;;
    pdlab)   for pdl in 0 1; do  # programmatic dependent launch off/on, same shapes, same run
               IRIS_PDL=$pdl run sweep_pdl$pdl.log timeout 200 python3 -m taxonomy sweep --out "$OUT/pdl$pdl" --iters 8 \
                 --warmup 2 --timing graph --shapes ${PDL_SHAPES:-128x4096x4096 128x8192x8192 1024x8192x8192}
             done ;;
    gemmsmall) run gemm.log timeout 400 python3 benchmarks/gemm.py --small --out "$OUT" ;;
    splittests) run pytest_split_k.log timeout 300 python3 -m pytest -q tests/test_fused_ops.py -k "split_k or bad_input" ;;
    splitk)  # split-K A/B at small M, graph: each split-capable variant at the default config and at 128x128x64 tiles
             # with 1, 2 and 4 slices of K, same shapes, same run
             for op in gemm_all_scatter gemm_all_reduce all_gather_gemm gemm_reduce_scatter; do
               vs=$(python3 -c "import fused_ops as f; print(*[v for v in f.list_variants('$op', 'cuda', 'bfloat16') if f.get('$op', v).split_k])")
               sh="--shapes ${SPLIT_SHAPES:-128x4096x4096 128x8192x8192 128x16384x16384}"
               mkdir -p "$OUT/splitk"; run splitk/${op}_default.log timeout 200 python3 -m taxonomy sweep --ops $op --variants $vs $sh \
                 --out "$OUT/splitk/default" --iters 8 --warmup 2 --timing graph
               for s in ${SPLITS:-1 2 4}; do
                 run splitk/${op}_k$s.log timeout 200 python3 -m taxonomy sweep --ops $op --variants $vs $sh \
                   --out "$OUT/splitk/t128x128_k$s" --iters 8 --warmup 2 --timing graph --BLK_M 128 --BLK_N 128 \
                   --BLK_K 64 --num_stages 4 --num_warps 8 --split_k $s
               done
             done
             tar -C "$OUT" -czf "$OUT/splitk.tgz" splitk && rm -r "$OUT/splitk" ;;
    ce)      # the copy-engine variants: their tests and the copy engine's (eager, replayed, captured), then graph and
             # eager sweeps of each op against its peers and the best other fused variants (AG pull: 5-10x slower)
             run pytest_ce.log timeout ${TEST_TIMEOUT:-400} python3 -m pytest -q tests/test_host_api.py \
               tests/test_fused_ops.py tests/test_torch_ops.py -k "copy_engine or all_gather"
             for t in ${CE_TIMINGS:-eager}; do  # graph timing refuses them (registry: Variant.capture)
               for op in ${CE_OPS:-all_gather_gemm gemm_all_reduce gemm_reduce_scatter}; do
                 case $op in
                   all_gather_gemm) vs="torch_nccl torch_async_tp bulk_sync push copy_engine_phased copy_engine" ;;
                   gemm_all_reduce) vs="torch_nccl torch_symm_mem bulk_sync one_shot two_shot wg_specialized copy_engine" ;;
                   gemm_reduce_scatter) vs="torch_nccl torch_async_tp bulk_sync fused copy_engine_phased copy_engine" ;;
                 esac
                 run sweep_ce_${op}_$t.log timeout ${SWEEP_TIMEOUT:-300} python3 -m taxonomy sweep --ops $op \
                   --variants $vs --out "$OUT/ce_$t" --iters 8 --warmup 2 --timing $t ${SWEEP_ARGS:-}
               done
             done ;;
    world1)  # one GPU, one rank, graph: the fixed cost of a fused call against a bare matmul (torch_nccl at world 1),
             # for the variants whose kernels hold their own barriers and call counter (W1_AS/AR/AG/RS pick others).
             # With AB_BASE=<dir base_<sha> holding that commit's tree>, it runs first, then this one, same session.
             for tree in ${AB_BASE:-} $PWD; do
               tag=head; commit=$IRIS_COMMIT
               if [ "$tree" != "$PWD" ]; then tag=$(basename "$tree"); commit=${tag#base_}; fi
               for op in gemm_all_scatter gemm_all_reduce all_gather_gemm gemm_reduce_scatter; do
                 case $op in
                   gemm_all_scatter) vs=${W1_AS:-fused_sequential wg_specialized bulk_sync} ;;
                   gemm_all_reduce) vs=${W1_AR:-one_shot two_shot atomic wg_specialized bulk_sync} ;;
                   all_gather_gemm) vs=${W1_AG:-pull push bulk_sync} ;;
                   gemm_reduce_scatter) vs=${W1_RS:-fused wg_specialized bulk_sync} ;;
                 esac
                 (cd "$tree" && export PYTHONPATH=$tree IRIS_COMMIT=$commit && run world1_${tag}_$op.log timeout ${SWEEP_TIMEOUT:-200} \
                   python3 -m taxonomy sweep -r 1 --ops $op --variants $vs --out "$OUT/world1/$tag" --iters 8 \
                   --shapes ${W1_SHAPES:-128x4096x4096 128x8192x8192 1024x8192x8192} --warmup 2 --timing graph
                  exit $status) || status=1
               done
             done ;;
    pytest)  # PYTEST_K selects tests/test_fused_ops.py cases; log $OUT/$PYTEST_LOG
             run ${PYTEST_LOG:-pytest_k.log} timeout ${TEST_TIMEOUT:-300} python3 -m pytest -q tests/test_fused_ops.py \
               -k "${PYTEST_K:?set PYTEST_K}" ;;
    autoeager)  # one GPU, world 1, eager: auto (no table rows at world 1, so it runs torch_nccl) against torch_nccl's
                # own row: does auto's dispatch add host time of its own?
             for op in gemm_all_scatter gemm_all_reduce all_gather_gemm gemm_reduce_scatter; do
               run autoeager_$op.log timeout 200 python3 -m taxonomy sweep -r 1 --ops $op --variants torch_nccl auto \
                 --out "$OUT/autoeager" --iters 20 --shapes 128x4096x4096 1024x4096x4096 --warmup 3 --timing eager
             done ;;
    mlpcapture)  # the tensor-parallel MLP, sequence parallel, captured into a CUDA graph: with the guard (the
             # copy-engine variants are not captured), then with it lifted for one of them at a time, to learn which
             # one a graph deadlocks (a 10 s spin-wait timeout ends such a run and names rank, program and flag)
             for unsafe in "" all_gather_gemm/copy_engine gemm_reduce_scatter/copy_engine; do
               FUSED_OPS_CAPTURE_UNSAFE=$unsafe IRIS_WAIT_TIMEOUT_S=10 run mlpcapture_${unsafe//\//_}.log timeout 300 \
                 python3 examples/tp_mlp.py --bench --shapes ${MLP_SHAPE:-16384x8192} --layouts sequence_parallel \
                 --modes graph --out "$OUT/mlpcapture/${unsafe//\//_}"
             done ;;
    wave)    # the 8192x4608x36864 shape, graph: the defaults (128x128 tiles or a split last wave where the 128x256
             # tile's last wave is short) against the 128x256 whole tiles that were the default before 2fb602b
             for tiles in defaults whole; do
               flags=""; [ $tiles = whole ] && flags="--BLK_M 128 --BLK_N 256 --BLK_K 64 --num_stages 3 --num_warps 8 \
                 --split_k 1 --split_tail off"
               for op in gemm_all_scatter gemm_all_reduce all_gather_gemm gemm_reduce_scatter; do
                 case $op in
                   gemm_all_scatter) vs="bulk_sync fused_sequential wg_specialized" ;;
                   gemm_all_reduce) vs="torch_symm_mem bulk_sync atomic one_shot" ;;
                   all_gather_gemm) vs="torch_async_tp bulk_sync copy_engine_phased" ;;
                   gemm_reduce_scatter) vs="torch_async_tp bulk_sync fused copy_engine_phased" ;;
                 esac
                 run wave_${tiles}_$op.log timeout ${SWEEP_TIMEOUT:-200} python3 -m taxonomy sweep --ops $op \
                   --variants $vs --out "$OUT/wave/$tiles" --iters 8 --warmup 2 --timing graph \
                   --shapes ${WAVE_SHAPES:-8192x4608x36864} $flags
               done
             done
             # the phased all-gather with 128x256 tiles and each launch's last wave split (split_tail on request only:
             # its two launches overlap, which the defaults' wave model does not see)
             run wave_tail_all_gather_gemm.log timeout ${SWEEP_TIMEOUT:-200} python3 -m taxonomy sweep \
               --ops all_gather_gemm --variants torch_async_tp copy_engine_phased --out "$OUT/wave/tail" --iters 8 \
               --warmup 2 --timing graph --shapes ${WAVE_SHAPES:-8192x4608x36864} --BLK_M 128 --BLK_N 256 --BLK_K 64 \
               --num_stages 3 --num_warps 8 --split_tail on ;;
    graphprobe)  # does a captured peer copy need an SM, or does a graph run its branches one after the other?
             IRIS_WAIT_TIMEOUT_S=5 run graph_probe.log timeout 120 python3 scripts/copy_engine_check.py --graph-probe ;;
    launch)  # eager launch paths: a spin kernel launched each way, then the collectives' prepared calls relaunched
             # or launching their graph, 2 ranks (iris/relaunch.py; MIN_BYTES is set from the second part)
             run launch_paths.log timeout 120 python3 benchmarks/launch_paths.py --out "$OUT/launch_paths"
             run launch_paths_collectives.log timeout 300 python3 benchmarks/launch_paths.py --collectives \
               -n ${NRANKS:-2} --out "$OUT/launch_paths" ;;
    ceplan)  # the copy engines' recorded plans: their tests, the host time of a call's operations with and without a
             # plan (one GPU does), then the catalog's eager copy-engine calls with and without (NRANKS GPUs; at world
             # 1 they have no peers to copy from, only their waits and writes)
             run pytest_ceplan.log timeout ${TEST_TIMEOUT:-300} python3 -m pytest -q tests/test_host_api.py \
               tests/test_fused_ops.py -k "copy_engine or plans"
             run copy_engine_host.log timeout 120 python3 benchmarks/copy_engine_host.py --out "$OUT"
             run eager_host_ceplan.log timeout 400 python3 scripts/eager_host_profile.py -n ${NRANKS:-2} --top 12 \
               gemm_all_reduce/copy_engine gemm_all_reduce/copy_engine:noplan gemm_reduce_scatter/copy_engine \
               gemm_reduce_scatter/copy_engine:noplan all_gather_gemm/copy_engine all_gather_gemm/copy_engine:noplan ;;
    newtests)  # the process groups, out-of-step, MoE, device-context, reference-compatibility, GEMM-shape and example
               # tests, ranks sharing the GPU(s); then the CPU-demo entry points as a user runs them
             run pytest_new.log timeout ${TEST_TIMEOUT:-540} python3 -m pytest -q -rs tests/test_groups.py \
               tests/test_out_of_step.py tests/test_moe.py tests/test_device_context.py tests/test_reference_compat.py \
               tests/test_examples.py tests/test_gemm_shapes.py tests/test_device_rma.py
             run quickstart.log timeout 120 python3 examples/quickstart.py
             run demo.log timeout 120 python3 examples/demo.py ;;
    suite4|rest3)  # the suite with one GPU per rank, one line per test (-v: a run cut short still names what passed
             # and failed), in processes at once: the fused-op tests (suite4 only; rest3 runs the FP8 catalog's
             # float64 test), the rest in three; the 2-D (TP x DP) example beside them (suite4: 2 nodes x 2 GPUs,
             # rest3: 2 x 1).
             pids=()
             if [ "$stage" = suite4 ]; then
               ( run pytest_fused.log timeout ${TEST_TIMEOUT:-560} python3 -m pytest -v -rfs tests/test_fused_ops.py \
                   tests/test_fp8_catalog.py tests/test_gemm_shapes.py; exit $status ) & pids+=($!)
               fp8=() tp_dp=()
               # fewer than 4 GPUs: the example's cross-node NCCL part needs one GPU per rank
               [ "$(nvidia-smi -L | wc -l)" -lt 4 ] && tp_dp=(-n 2 --nodes 2)
             else
               fp8=("tests/test_fp8_catalog.py::test_fp8_variant_against_float64") tp_dp=(-n 2 --nodes 2)
             fi
             ( run pytest_rest_a.log timeout ${TEST_TIMEOUT:-560} python3 -m pytest -v -rfs tests/test_collectives.py \
                 tests/test_tile.py tests/test_groups.py tests/test_moe.py tests/test_out_of_step.py; exit $status ) &
             pids+=($!)
             ( run pytest_rest_b.log timeout ${TEST_TIMEOUT:-560} python3 -m pytest -v -rfs tests/test_host_api.py \
                 tests/test_device_rma.py tests/test_device_atomics.py tests/test_device_flags.py \
                 tests/test_device_context.py tests/test_examples.py tests/test_reference_compat.py \
                 tests/test_replay.py tests/test_launch.py; exit $status ) & pids+=($!)
             ( run pytest_rest_c.log timeout ${TEST_TIMEOUT:-560} python3 -m pytest -v -rfs tests/test_taxonomy.py \
                 tests/test_torch_ops.py tests/test_auto.py tests/test_tracing.py tests/test_grid_partition.py \
                 tests/test_config.py tests/test_local_gemm.py tests/test_wgmma.py tests/test_settings.py \
                 tests/test_public_names.py tests/test_front_door.py tests/test_tune_table.py tests/test_lint.py \
                 ${fp8[@]+"${fp8[@]}"}; exit $status ) & pids+=($!)
             ( run tp_dp_2d.log timeout 300 python3 examples/tp_dp_2d.py ${tp_dp[@]+"${tp_dp[@]}"}; exit $status ) & pids+=($!)
             for p in "${pids[@]}"; do wait $p || status=1; done ;;
    fp8cat)  # the FP8 catalog's tests with one GPU per rank (where suite4 on 2 GPUs runs out of time)
             run pytest_fp8_catalog.log timeout ${TEST_TIMEOUT:-400} python3 -m pytest -v -rfs tests/test_fp8_catalog.py ;;
    groups)  run groups.log timeout ${GROUPS_TIMEOUT:-110} python3 benchmarks/groups.py -n 4 --out "$OUT/groups" ;;
    a2a)     run collectives_a2a.log timeout ${COLL_TIMEOUT:-100} python3 benchmarks/collectives.py -n ${NRANKS:-4} \
               --collectives all_to_all all_to_all_v --max-bytes 268435456 --out "$OUT/coll_a2a_w${NRANKS:-4}" ;;
    moe)     run moe.log timeout ${MOE_TIMEOUT:-240} python3 benchmarks/moe.py -r ${NRANKS:-4} --models mixtral \
               qwen3-30b-a3b deepseek-v3 --tokens 16 1024 4096 --iters 10 --out "$OUT/moe_w${NRANKS:-4}" ;;
    models)  run sweep_models.log timeout ${SWEEP_TIMEOUT:-170} python3 -m taxonomy sweep -r ${NRANKS:-4} \
               --shapes models --timing graph --iters 6 --warmup 2 --out "$OUT/models_w${NRANKS:-4}" ;;
    fp8)     run sweep_fp8.log timeout ${FP8_TIMEOUT:-80} python3 -m taxonomy sweep -r ${NRANKS:-4} --datatype fp8 \
               --shapes ${FP8_SHAPES:-1024x8192x8192 4096x8192x8192} --timing graph --iters 6 --warmup 2 \
               --out "$OUT/fp8_w${NRANKS:-4}" ;;
    fp8decode)  # one GPU: FP8 decode rows, the default against wider tiles in slices of K
             run gemm_fp8_decode.log timeout ${DECODE_TIMEOUT:-80} python3 benchmarks/gemm.py --fp8 --shapes \
               1x4000x4096 1x19008x8192 4x14336x4096 8x8192x8192 16x3584x2368 16x5120x6912 16x6912x5120 \
               16x16384x26624 --configs "fp8 16x64x256 s4 w4 k2" "fp8 16x64x256 s4 w4 k3" "fp8 16x128x256 s4 w4" \
               "fp8 16x128x256 s4 w4 k2" "fp8 16x128x256 s4 w4 k3" "fp8 16x128x256 s4 w4 k4" "fp8 16x256x256 s3 w4" \
               "fp8 16x256x256 s3 w4 k2" "fp8 16x256x256 s3 w4 k4" "fp8 16x256x256 s3 w4 k6" "fp8 16x256x256 s3 w8 k4" \
               --out "$OUT/fp8_decode" ;;
    fp8few)  # one GPU: FP8 shapes with fewer 64-row tiles than SMs, the default against slices of K filling one wave
             run gemm_fp8_few.log timeout ${FEW_TIMEOUT:-120} python3 benchmarks/gemm.py --fp8 --shapes 128x640x3584 \
               128x768x4096 128x1792x5120 128x2560x2880 129x4096x4096 128x8192x7392 --configs "fp8 64x64x256 s4 w4" \
               "fp8 64x64x256 s4 w4 k2" "fp8 64x64x256 s4 w4 k3" "fp8 64x64x256 s4 w4 k5" "fp8 64x128x256 s4 w4" \
               "fp8 64x128x256 s4 w4 k2" "fp8 64x128x256 s4 w4 k4" "fp8 64x64x512 s3 w4" "fp8 64x64x512 s3 w4 k2" \
               "fp8 64x64x512 s3 w4 k3" "fp8 64x128x512 s2 w4" --out "$OUT/fp8_few" ;;
    fp8table)  # one GPU: the FP8 class table (default, tile loop, fast accumulation; per-tensor and row-wise)
             run gemm_fp8_models.log timeout ${FP8T_TIMEOUT:-330} python3 benchmarks/gemm.py --shapes models --fp8 \
               --out "$OUT/fp8_models" ;;
    bf16table|bf16edges)  # one GPU: the bf16 class table (the tile loop as the fused ops run it, and
             # fused_ops.matmul); bf16edges adds matmul with the Gluon kernel's edge boxes loaded past the edge
             edges=() limit=330
             if [ "$stage" = bf16edges ]; then edges=("matmul, edges past") limit=450; fi
             run gemm_bf16_models.log timeout ${BF16T_TIMEOUT:-$limit} python3 benchmarks/gemm.py --shapes models \
               --configs default matmul ${edges[@]+"${edges[@]}"} --out "$OUT/bf16_models" ;;
    fewexplore)  # one GPU: K-dominant shapes of few rows on their defaults (swapped tiles in slices of K)
             run gemm_few_explore.log timeout 200 python3 benchmarks/gemm.py --shapes 32x128x65536 16x128x65536 \
               48x1024x8192 72x1000x8192 100x1536x4096 --configs default matmul --out "$OUT/few_explore"
             run gemm_fp8_few_explore.log timeout 200 python3 benchmarks/gemm.py --fp8 --shapes 32x128x65536 \
               16x128x65536 100x1536x4096 --out "$OUT/fp8_few_explore" ;;
    edgerows)  # one GPU: 129 and 128 rows of wide B, every Gluon tile whole and in slices of K (edge rows inside)
             kf=$(python3 -c "import benchmarks.gemm as g; print(*[repr(n) for n in g.WGMMA_CANDIDATES if 'swap' not in n])")
             eval run gemm_edge_rows.log timeout 200 python3 benchmarks/gemm.py --shapes 129x4096x4096 128x12288x1536 \
               --configs matmul $kf --out "$OUT/edge_rows" ;;
    fewtests)  # one GPU: the Gluon kernel's split-K and few-tile defaults against float64
             run pytest_wgmma_few.log timeout 300 python3 -m pytest -q -rfs tests/test_wgmma.py -k "few_tiles or split" ;;
    wgmmatests)  # one GPU: the Gluon kernel's tests (compiles, FP8 and bf16 against float64, many calls in a row)
             run pytest_wgmma.log timeout ${TEST_TIMEOUT:-400} python3 -m pytest -v -rfs tests/test_wgmma.py \
               tests/test_gemm_shapes.py tests/test_local_gemm.py ;;
    narrow)  # one GPU: bf16 64-wide Gluon tiles in whole waves against 192-row tiles
             run gemm_narrow.log timeout ${NARROW_TIMEOUT:-100} python3 benchmarks/gemm.py --shapes 1024x2112x7168 \
               16384x64x4096 4096x1280x2880 1024x2560x2880 --configs matmul "wgmma 192x128x64 s4" "wgmma 128x64x64 s8" \
               "wgmma 128x128x64 s6" --out "$OUT/narrow" ;;
    large)   # one GPU: the largest bf16 GEMMs, the tile loop against the Gluon kernel's tiles, with the GPU's clocks
             # and power sampled every 100 ms (large_smi.csv)
             nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
               --format=csv -lms 100 > "$OUT/large_smi.csv" & smi=$!
             run gemm_large.log timeout ${LARGE_TIMEOUT:-200} python3 benchmarks/gemm.py --shapes 16384x16384x8192 \
               16384x5120x8192 4096x32064x4096 16384x8192x7392 --configs default matmul "wgmma 128x256x64 s3" \
               "wgmma 128x128x64 s6" "wgmma 192x128x64 s4" --out "$OUT/large"
             kill $smi ;;
    rankshapes)  # one GPU: the default sweep's per-rank GEMMs (no regression there)
             run gemm_rank_shapes.log timeout ${RANK_TIMEOUT:-200} python3 benchmarks/gemm.py --rank-shapes --configs \
               default matmul --out "$OUT/rank_shapes" ;;
    short)   # one GPU: bf16 M of 128-129 (short_wide, small), the defaults against two 64-row programs per SM
             run gemm_short.log timeout ${SHORT_TIMEOUT:-150} python3 benchmarks/gemm.py --shapes 129x4096x4096 \
               128x12288x1536 128x1792x5120 128x8192x7392 128x2560x2880 128x640x3584 --configs default matmul \
               "64x64x128 s4 w4 k2" "64x128x64 s8 w4" "64x128x64 s4 w4 x2" "64x128x64 s4 w4 x2 k2" "64x64x128 s3 w4 x2" \
               "64x64x128 s3 w4 x2 k2" "64x128x128 s2 w4 x2 k2" --out "$OUT/short" ;;
    torchkernels)  # one GPU: the kernels torch runs at the public set's sample (bf16 torch.matmul, FP8 _scaled_mm)
             run torch_kernels_bf16.log timeout 120 python3 benchmarks/torch_kernels.py --shapes models \
               --out "$OUT/torch_kernels_bf16"
             run torch_kernels_fp8.log timeout 120 python3 benchmarks/torch_kernels.py --shapes models --fp8 \
               --out "$OUT/torch_kernels_fp8" ;;
    fewexplore)  # one GPU: every small-M candidate at M = 129 (a 1-row remainder) and at K >> M x N
             run gemm_few_explore.log timeout ${FEWX_TIMEOUT:-400} python3 benchmarks/gemm.py --shapes 129x4096x4096 \
               128x128x65536 --out "$OUT/few_explore" ;;
    split2)  # one GPU: bf16 few 64x64 tiles (a third to a half of the SMs) with long K, whole against 2 slices
             run gemm_split2.log timeout ${SPLIT2_TIMEOUT:-200} python3 benchmarks/gemm.py --shapes 128x1792x5120 \
               128x2048x4096 128x2048x8192 256x1024x4096 128x1536x8192 128x1152x7168 192x1024x4096 256x1152x2880 \
               --configs default matmul "64x64x128 s4 w4" "64x64x128 s4 w4 k2" "64x64x128 s4 w4 k3" \
               --out "$OUT/split2" ;;
    kdom)    # one GPU: K >> M x N, the default's 33 slices of 64x64 tiles against larger tiles in more slices, 3 runs
             for r in 1 2 3; do run gemm_kdom_$r.log timeout ${KDOM_TIMEOUT:-120} python3 benchmarks/gemm.py --shapes \
               128x128x65536 64x256x131072 --configs matmul "64x64x128 s4 w4 k16" "64x64x128 s4 w4 k32" \
               "64x128x128 s4 w4 k66" "128x64x128 s4 w4 k66" "64x64x256 s3 w4 k33" "128x128x64 s4 w8 k132" \
               --out "$OUT/kdom_$r"; done ;;
    swaptests)  # one GPU: the Gluon kernel's swap-AB tiles against float64 (and its other tests)
             run pytest_swap.log timeout ${TEST_TIMEOUT:-300} python3 -m pytest -v -rfs tests/test_wgmma.py ;;
    swapexplore)  # one GPU: swap-AB Gluon tiles (B's columns as the MMAs' rows) at the shapes below their floors
             sw=$(python3 -c "import benchmarks.gemm as g; print(*[repr(n) for n in g.WGMMA_CANDIDATES if 'swap' in n])")
             eval run gemm_swap_explore.log timeout ${SWAPX_TIMEOUT:-400} python3 benchmarks/gemm.py --shapes \
               129x4096x4096 128x12288x1536 1024x2112x7168 1024x2560x2880 4096x1280x2880 2048x5000x2048 \
               4096x1000x8192 1000x1000x1000 128x2560x2880 128x8192x7392 256x4096x4096 --configs matmul $sw \
               --out "$OUT/swap_explore"
             fw=$(python3 -c "import benchmarks.gemm as g; print(*[repr(n) for n in g.FP8_CANDIDATES if 'swap' in n])")
             eval run gemm_fp8_swap_explore.log timeout ${SWAPX_TIMEOUT:-400} python3 benchmarks/gemm.py --fp8 \
               --shapes 1x4000x4096 16x3584x2368 16x5120x6912 16x6912x5120 16x16384x26624 128x640x3584 \
               128x2560x2880 129x4096x4096 128x12288x1536 1024x2112x7168 --configs default $fw \
               --out "$OUT/fp8_swap_explore" ;;
    swapmodels)  # one GPU: the public sample, fused_ops.matmul against the wider swap-AB tiles; FP8 at its worst shapes
             run gemm_swap_models.log timeout ${SWAPX_TIMEOUT:-400} python3 benchmarks/gemm.py --shapes models \
               --configs matmul "wgmma swap 256x128x64 s3" "wgmma swap 256x64x64 s4" "wgmma swap 128x192x64 s4" \
               "wgmma swap 128x128x64 s6" "wgmma swap 64x192x64 s6" --out "$OUT/swap_models"
             fw=$(python3 -c "import benchmarks.gemm as g; print(*[repr(n) for n in g.FP8_CANDIDATES if 'swap' in n])")
             eval run gemm_fp8_swap_more.log timeout ${SWAPX_TIMEOUT:-400} python3 benchmarks/gemm.py --fp8 \
               --shapes 1x4000x4096 16x3584x2368 16x5120x6912 16x6912x5120 1x19008x8192 128x12288x1536 \
               1024x2112x7168 4096x8192x3696 4096x1280x2880 1024x2560x2880 --configs default $fw \
               --out "$OUT/fp8_swap_more" ;;
    swapmid)  # one GPU: 32 and 64 rows (between decode and the Gluon kernel's fill), swapped tiles against the defaults
             mid="32x3584x2368 32x5120x6912 32x6912x5120 32x4000x4096 32x14336x4096 64x3584x2368 64x5120x6912 \
               64x6912x5120 64x4000x4096 64x14336x4096"
             run gemm_swap_mid.log timeout ${SWAPX_TIMEOUT:-300} python3 benchmarks/gemm.py --shapes $mid --configs \
               default matmul "wgmma swap 32x64x64 s8" "wgmma swap 64x64x64 s8" "wgmma swap 32x64x128 s6" \
               "wgmma swap 64x64x128 s4" --out "$OUT/swap_mid"
             run gemm_fp8_swap_mid.log timeout ${SWAPX_TIMEOUT:-300} python3 benchmarks/gemm.py --fp8 --shapes $mid \
               --configs default "wgmma fp8 swap 32x64x256 s4" "wgmma fp8 swap 64x64x256 s4" \
               "wgmma fp8 swap 32x64x128 s8" "wgmma fp8 swap 64x64x128 s8" --out "$OUT/fp8_swap_mid" ;;
    rows32)  # one GPU: 17-32 rows on their swapped default against the tile loop (bf16, FP8 precise and fast), and tests
             r32="32x3584x2368 32x5120x6912 32x6912x5120 32x4000x4096 32x14336x4096 24x8192x8192"
             run pytest_rows32.log timeout 200 python3 -m pytest -q tests/test_wgmma.py -k "few_rows or 17_to_32"
             run gemm_rows32.log timeout 200 python3 benchmarks/gemm.py --shapes $r32 --configs default matmul \
               --out "$OUT/rows32"
             run gemm_fp8_rows32.log timeout 200 python3 benchmarks/gemm.py --fp8 --shapes $r32 --configs default \
               --out "$OUT/fp8_rows32" ;;
    splitexplore)  # one GPU: the Gluon kernel's split-K ("kfill" candidates) where tiles are few, bf16 and FP8
             kf=$(python3 -c "import benchmarks.gemm as g; print(*[repr(n) for n in g.CANDIDATES if 'kfill' in n])")
             few="129x4096x4096 128x128x65536 64x256x131072 128x12288x1536 128x1536x8192 128x1152x7168 \
               128x2048x8192 192x1024x4096 128x1792x5120 256x1024x4096 128x8192x7392 128x2560x2880 1000x1000x1000 \
               256x4096x4096"
             eval run gemm_split_explore.log timeout ${SPLITX_TIMEOUT:-420} python3 benchmarks/gemm.py --shapes $few \
               --configs matmul "'matmul, edges past'" "'wgmma swap 128x64x64 s6'" "'wgmma 128x64x64 s8'" $kf \
               --out "$OUT/split_explore"
             kf=$(python3 -c "import benchmarks.gemm as g; print(*[repr(n) for n in g.FP8_CANDIDATES if 'kfill' in n])")
             eval run gemm_fp8_split_explore.log timeout ${SPLITX_TIMEOUT:-300} python3 benchmarks/gemm.py --fp8 \
               --shapes 129x4096x4096 128x12288x1536 128x128x65536 128x1536x8192 128x2048x8192 128x8192x7392 \
               1000x1000x1000 --configs default $kf --out "$OUT/fp8_split_explore" ;;
    rowsprobe)  # one GPU: the Gluon kernel's tiles at 129 rows against 256, loads and stores past the last row apart
             run gemm_rows_probe.log timeout 200 python3 benchmarks/gemm_rows_probe.py --out "$OUT/rows_probe" ;;
    four)    # one GPU: 256x160 Gluon tiles (four consumers) where they moved the defaults, against the 192x128 tiles
             # they replaced, and their tests (results/current/gemm/four_78f73a0/)
             run pytest_four.log timeout ${TEST_TIMEOUT:-200} python3 -m pytest -v -p no:warnings tests/test_wgmma.py \
               -k "256_row or rem_cols_tiles or swap_rem_tiles"
             run gemm_four.log timeout 200 python3 benchmarks/gemm.py --shapes 4096x1280x2880 4096x1280x8192 \
               4096x1152x3584 1024x5120x8192 1024x5120x2560 1024x5120x640 1024x4608x16384 1024x4736x3584 \
               1024x2560x2880 128x18944x3584 --configs matmul "wgmma 192x128x64 s4" --out "$OUT/four" ;;
    four144)  # one GPU: 256x144 tiles where 256x160 ones leave a mostly empty last column (4096x1152: 1152 = 8 x 144)
             run gemm_four144.log timeout 200 python3 benchmarks/gemm.py --shapes 4096x1152x3584 1024x4608x16384 \
               1024x4736x3584 1024x4608x7168 --configs matmul "wgmma 256x128x32 s5 rem16" "wgmma 192x128x64 s4" \
               --out "$OUT/four144" ;;
    fourfp8)  # one GPU: FP8 fast accumulation on 256x160 tiles (four consumers) against its 128x256 default
             run gemm_four_fp8.log timeout 200 python3 benchmarks/gemm.py --fp8 --shapes 4096x1280x2880 \
               4096x1280x8192 1024x5120x8192 1024x4736x3584 4096x1152x3584 --configs \
               "wgmma fp8 256x128x128 s3 rem32 fast accum" "wgmma fp8 256x128x64 s5 rem32 fast accum" \
               "wgmma fp8 128x256x128 s3 fast accum" --out "$OUT/four_fp8" ;;
    bf16all)  # one GPU: fused_ops.matmul on all 721 public GEMMs, one part per call (PART=1/3, 2/3, 3/3: ~5 min each)
             part=${PART:-1/3}
             run "gemm_bf16_all_${part/\//of}.log" timeout ${ALL_TIMEOUT:-560} python3 benchmarks/gemm.py \
               --shapes models-all --part "$part" --configs matmul --out "$OUT/bf16_all_${part/\//of}" ;;
    fp8all)  # one GPU: fp8.scaled_mm on the public GEMMs whose N and K are multiples of 16 (torch._scaled_mm's rule),
             # per-tensor scales with precise and with fast accumulation, row-wise scales; one part per call
             part=${PART:-1/3}
             run "gemm_fp8_all_${part/\//of}.log" timeout ${ALL_TIMEOUT:-560} python3 benchmarks/gemm.py --fp8 \
               --shapes models-all --part "$part" --configs default 'default, fast accum' \
               --out "$OUT/fp8_all_${part/\//of}" ;;
    fp8fastall) # one GPU: as fp8all, per-tensor scales with fast accumulation only (fast picks changed alone)
             part=${PART:-1/1}
             run "gemm_fp8_fast_all_${part/\//of}.log" timeout ${ALL_TIMEOUT:-560} python3 benchmarks/gemm.py \
               --fp8 --shapes models-all --part "$part" --configs 'default, fast accum' \
               --out "$OUT/fp8_fast_all_${part/\//of}" ;;
    xdecode)  # one GPU: decode rows (M = 1, 16) in slices of K, three tile widths and depths, TMA or pointers
             run gemm_xdecode.log timeout ${X_TIMEOUT:-560} python3 benchmarks/gemm.py --shapes 1x2560x8192 \
               1x12288x1536 1x9216x16384 1x16384x512 1x2304x16384 1x3584x448 1x4096x512 1x3584x896 1x4096x1024 \
               1x2880x720 1x2880x1440 1x9216x7168 1x4096x1792 1x640x2880 1x1280x2880 1x2304x3584 1x4608x16384 \
               1x2112x7168 1x3072x1536 1x5120x640 1x5120x3456 1x100544x2880 1x18944x3584 1x26624x16384 \
               1x32064x4096 1x9472x3584 1x16384x2048 1x7168x8192 1x5120x8192 1x16384x8192 1x64128x4096 1x3584x4096 \
               1x1280x8192 1x8192x1024 1x38016x3584 1x896x5120 16x5120x3456 16x2112x7168 16x3584x4736 \
               --configs matmul '16x64x256 s4 w4*' '16x64x128 s6 w4*' '16x32x256 s6 w4*' --out "$OUT/xdecode" ;;
    xrows128)  # one GPU: 128 rows, few tiles: slices of K for the tile loop's 64-row tiles and the Gluon kernel's
             run gemm_xrows128.log timeout ${X_TIMEOUT:-560} python3 benchmarks/gemm.py --shapes 128x2304x16384 \
               128x3584x9472 128x2560x8192 128x3456x5120 128x3584x5120 128x3584x4736 128x4096x7168 128x3584x4096 \
               128x12288x1536 128x4608x16384 128x3584x2368 128x4000x4096 128x4608x7168 128x38016x3584 128x4096x2048 \
               128x9216x7168 128x9472x3584 128x5120x8192 128x5120x6912 128x3584x1792 128x3584x448 128x4096x1024 \
               128x8192x8192 128x14336x4096 128x1024x8192 128x640x2880 \
               --configs matmul '64x64x128 s4 w4*' '64x128x128 s4 w4*' 'wgmma swap 128x*x64 s6' \
               'wgmma swap 128x*x64 s6 k*' --out "$OUT/xrows128" ;;
    x1024)   # one GPU: 1024-4096 rows where one wave of the default's tiles leaves SMs idle: tile widths and heights
             run gemm_x1024.log timeout ${X_TIMEOUT:-560} python3 benchmarks/gemm.py --shapes 1024x3072x1536 \
               1024x3072x4096 4096x1152x3584 1024x2304x3584 1024x1536x4096 1024x1280x8192 1024x5120x640 \
               4096x640x3584 1024x5120x1280 1024x2304x16384 1024x1280x2880 4096x640x2880 1024x2880x1024 \
               1024x2880x720 1024x2880x2880 1024x1440x2880 1000x1000x1000 1024x7392x8192 1024x2880x512 \
               --configs matmul 'wgmma 128x256x64 s3' 'wgmma 128x128x64 s6' 'wgmma 192x128x64 s4' \
               'wgmma 128x128x64 s4 rem*' 'wgmma 256x128x32 s5 rem*' 'wgmma 256x128x64 s3' \
               'wgmma 192x128x64 s3 rem32' 'wgmma swap 256x128x64 s3' 'wgmma swap 128x192x64 s4' \
               'wgmma 128x64x64 s8' --out "$OUT/x1024" ;;
    xdecode2)  # one GPU: decode rows with 2-6 programs per SM, whole and in slices of K
             run gemm_xdecode2.log timeout ${X_TIMEOUT:-560} python3 benchmarks/gemm.py --shapes 1x2560x8192 \
               1x12288x1536 1x9216x16384 1x16384x512 1x2304x16384 1x3584x448 1x4096x512 1x4096x1024 \
               1x2880x720 1x9216x7168 1x640x2880 1x1280x2880 1x2112x7168 1x3072x1536 1x5120x640 1x5120x3456 \
               1x100544x2880 1x18944x3584 1x26624x16384 1x32064x4096 1x16384x2048 1x7168x8192 1x5120x8192 \
               1x64128x4096 1x8192x1024 16x5120x3456 16x3584x4736 \
               --configs matmul '16x64x256 s4 w4' '16x* x[2-6]*' --out "$OUT/xdecode2" ;;
    x1024b)  # one GPU: 80- and 96-wide Gluon tiles (64 + 16 or 32 columns) where 128-wide ones leave SMs idle
             run gemm_x1024b.log timeout ${X_TIMEOUT:-560} python3 benchmarks/gemm.py --shapes 1024x1280x2880 \
               1024x1280x8192 1024x1440x2880 1000x1000x1000 1024x1536x4096 4096x640x2880 4096x640x3584 \
               1024x2304x3584 1024x5120x640 --configs matmul 'wgmma 128x64x64 s6 rem*' 'wgmma 128x64x64 s8' \
               --out "$OUT/x1024b" ;;
    xdecode3)  # one GPU: decode rows where the first per-SM rule lost: matmul against the candidates, one run
             run gemm_xdecode3.log timeout ${X_TIMEOUT:-300} python3 benchmarks/gemm.py --shapes 16x1280x8192 \
               1x1280x8192 16x5120x1280 1x5120x1280 1x5120x2560 16x2560x8192 1x6144x1536 1x7168x2048 1x8192x2048 \
               1x7168x2304 1x8192x3696 1x2304x16384 1x12288x1536 1x16384x512 1x4096x1024 1x3584x896 1x9216x7168 \
               --configs matmul '16x64x128 s6 w4*' '16x64x128 s3 w4 x3*' '16x64x256 s4 w4' --out "$OUT/xdecode3" ;;
    xdecode4)  # one GPU: decode rows of 45-112 tiles (16x64) at K of 0.9-5k, where neither decode rule reaches 0.9x:
             # one deep program per SM against 2-3 per SM, whole and in slices; and two 64-row programs per SM at the
             # 128-row GEMMs no single-program tile reached 0.9x at
             run gemm_xdecode4.log timeout ${X_TIMEOUT:-560} python3 benchmarks/gemm.py --shapes 1x2880x1024 \
               1x2880x1440 1x2880x2048 1x3072x1536 1x3584x896 1x3584x1792 1x3584x2368 1x4096x1024 1x4096x1792 \
               1x4096x2048 1x5120x1728 1x5120x3456 1x4096x3584 16x2880x1440 16x3072x1536 16x3584x1792 \
               16x3584x2368 16x3584x4736 16x4096x1024 16x4096x2048 16x5120x1728 16x5120x2560 16x5120x3456 \
               16x7168x2304 --configs matmul '16x64x128 s6 w4 k[23]' '16x64x128 s8 w4' '16x64x128 s8 w4 k[23]' \
               '16x64x128 s3 w4 x3*' '16x64x128 s4 w4 x2*' '16x64x256 s4 w4' --out "$OUT/xdecode4" && \
             run gemm_xrows128x2.log timeout 200 python3 benchmarks/gemm.py --shapes 128x3584x5120 128x3456x5120 \
               128x3584x4736 128x4608x16384 128x4608x7168 --configs matmul '64x* x2*' --out "$OUT/xrows128x2" ;;
    decodemid)  # one GPU: decode rows of 45-132 tiles whose pick config.decode_split changed: matmul against the
             # previous picks (one program per SM: 6 stages in 2 slices, or whole 256-deep tiles), one run
             run gemm_decodemid.log timeout ${X_TIMEOUT:-300} python3 benchmarks/gemm.py --shapes 1x3072x4096 1x4096x2048 1x4096x7168 1x4096x3584 1x3584x4096 1x4096x1792 1x5120x8192 1x4608x16384 \
               1x3584x1792 1x3584x9472 1x3584x4736 1x4736x3584 1x3584x2368 1x3584x5120 1x5120x2560 \
               1x5120x6912 1x5120x3456 1x3456x5120 1x4000x4096 1x2880x2048 1x2880x2880 1x2880x1440 \
               1x3072x1536 1x4608x7168 16x3072x4096 16x4096x2048 16x4096x7168 16x4096x3584 \
               16x3584x4096 16x4096x1792 16x5120x8192 16x4608x16384 16x3584x1792 16x3584x9472 \
               16x3584x4736 16x4736x3584 16x3584x2368 16x3584x5120 16x5120x2560 16x5120x6912 \
               16x5120x3456 16x3456x5120 16x4000x4096 16x2880x2048 16x2880x2880 16x2880x1440 \
               16x3072x1536 16x4608x7168 \
               --configs matmul '16x64x128 s6 w4 k2' '16x64x256 s4 w4' --out "$OUT/decodemid" ;;
    fp8x)  # one GPU: FP8 fast accumulation where its Gluon tiles now include the precise ones
             # (config.WGMMA_FP8_FAST_TILES): the default against each tile and the previous picks (128x256, the tile
             # loop); FP8 decode rows below their floor: slices, several programs per SM, the swapped tiles in slices
             run gemm_fp8x_fast.log timeout ${X_TIMEOUT:-300} python3 benchmarks/gemm.py --fp8 --shapes 4096x768x4096 4096x3584x4096 4096x2560x8192 128x1280x8192 128x16032x8192 128x16384x8192 \
               128x16384x26624 4096x2304x16384 128x16384x2048 128x16384x6656 4096x3584x1792 \
               128x18944x3584 4096x3584x9472 128x76032x3584 4096x3584x448 4096x3584x2368 \
               128x19008x3584 4096x3584x5120 128x38016x5120 4096x3456x5120 128x76032x8192 \
               128x19008x8192 4096x1440x2880 4096x2112x7168 128x12288x1536 128x18432x7168 \
               128x16160x7168 128x128x65536 1024x1536x4096 1024x2304x3584 1024x18944x3584 \
               16384x1152x3584 1024x1792x5120 1024x38016x5120 16384x896x5120 1024x29568x8192 \
               1024x2560x2880 16384x2880x2048 16384x2880x1440 16384x2880x512 1024x18432x7168 \
               128x14336x4096 4096x1536x4096 128x16032x4096 128x14336x8192 4096x4608x16384 \
               128x16384x4096 128x16384x13312 128x13312x16384 128x16032x16384 4096x2304x3584 \
               4096x3584x896 4096x3584x4736 128x38016x3584 4096x640x3584 4096x4736x3584 \
               128x13824x5120 128x76032x5120 128x19008x5120 128x14784x8192 128x38016x8192 \
               4096x7392x8192 128x16000x4096 4096x2560x2880 128x50272x2880 4096x640x2880 \
               4096x720x2880 128x16384x512 4096x4608x7168 129x4096x4096 16384x64x4096 \
               1024x14336x4096 1024x2560x8192 1024x14336x8192 1024x9216x16384 1024x2304x16384 \
               1024x13312x16384 1024x9472x3584 1024x38016x3584 16384x640x3584 1024x13824x5120 \
               1024x38016x8192 16384x2880x2880 16384x2880x1024 1024x1440x2880 16384x2880x720 \
               16384x640x2880 1024x2112x7168 1024x6144x1536 1024x9216x7168 4096x4544x4544 \
               --configs 'default, fast accum' 'default, fast accum, tile loop' 'wgmma fp8 128x256x128 s3 fast accum' \
               'wgmma fp8 192x128x128 s4 fast accum' 'wgmma fp8 128x128x128 s6 fast accum' \
               'wgmma fp8 128x128x128 s4 rem[13]* fast accum' 'wgmma fp8 256x128x128 s3 rem32 fast accum' \
               --out "$OUT/fp8x_fast" && \
             run gemm_fp8x_decode.log timeout 240 python3 benchmarks/gemm.py --fp8 --shapes 1x2304x16384 \
               16x2304x16384 16x2560x8192 1x2560x8192 1x38016x3584 16x38016x3584 1x100544x2880 16x50272x2880 \
               1x9472x3584 16x8192x3696 1x3584x5120 16x4000x4096 --configs default 'default, tile loop' \
               'wgmma fp8 swap 16x64x256 s4 k*' 'fp8 16x64x256 s4 w4*' 'fp8 16x128x256 s4 w4*' \
               'fp8 16x64x256 s3 w4 x3*' 'fp8 16x64x256 s2 w4 x4' --out "$OUT/fp8x_decode" ;;
    fp8dec)  # one GPU: FP8 decode rows whose defaults moved (swapped tiles in slices where they leave 3-fold SMs;
             # three tile-loop programs per SM where no 16-row tile fits one wave) against the previous picks, the
             # FP8 default configs' GPU test
             run pytest_fp8dec.log timeout ${TEST_TIMEOUT:-300} python3 -m pytest -v -p no:warnings \
               tests/test_gemm_shapes.py tests/test_wgmma.py -k "fp8_default_configs_on_gpu or fp8_wgmma_matches" && \
             run gemm_fp8dec.log timeout 300 python3 benchmarks/gemm.py --fp8 --shapes 1x2304x3584 1x2304x16384 1x2560x2880 1x2560x8192 1x38016x3584 1x38016x8192 1x50272x2880 \
               1x53248x16384 1x64128x4096 1x64128x16384 1x64640x7168 1x76032x3584 1x76032x8192 \
               1x100544x2880 16x2304x3584 16x2304x16384 16x2560x2880 16x2560x8192 16x38016x3584 \
               16x38016x8192 16x50272x2880 16x53248x16384 16x64128x4096 16x64128x16384 16x64640x7168 \
               16x76032x3584 16x76032x8192 16x100544x2880 \
               --configs default 'default, fast accum' 'fp8 16x64x256 s4 w4' 'wgmma fp8 swap 16x64x256 s4' \
               'wgmma fp8 swap 16x64x128 s8 fast accum' --out "$OUT/fp8dec" ;;
    tests31)  # one GPU: the GEMM defaults' GPU tests (bf16 and FP8 picks per shape against float64)
             run pytest_tests31.log timeout ${TEST_TIMEOUT:-300} python3 -m pytest -v -p no:warnings \
               tests/test_local_gemm.py tests/test_gemm_shapes.py tests/test_wgmma.py \
               -k "gpu_defaults or fp8_default_configs_on_gpu or fp8_wgmma_matches or default_configs_on_gpu" ;;
    fp8y)  # one GPU: FP8 below its floor after fp8all: fast decode rows on the precise swapped tile; 1024 rows on
             # 128x192 Gluon tiles (one wave); few 128x128 tiles at 1024 rows in the Gluon kernel (whole, in slices);
             # 128 rows: 64x64 tiles, slices, Gluon 128x64 and 128x128 tiles in slices
             run gemm_fp8y_decode.log timeout 120 python3 benchmarks/gemm.py --fp8 --shapes 16x3584x4736 \
               16x4000x4096 1x3456x5120 16x1280x2880 16x720x2880 1x3584x5120 16x5120x6912 16x9472x3584 \
               --configs 'default, fast accum' 'wgmma fp8 swap 16x64x256 s4 fast accum' --out "$OUT/fp8y_decode" && \
             run gemm_fp8y_1024.log timeout 200 python3 benchmarks/gemm.py --fp8 --shapes 1024x2880x720 \
               1024x2880x2880 1024x3072x4096 1024x3584x1792 1024x3584x5120 1024x3584x9472 1024x1152x3584 \
               1024x1280x2880 1024x1280x8192 1024x640x2880 1024x640x3584 1024x1536x4096 \
               --configs default 'default, fast accum' 'wgmma fp8 128x128x128 s3 rem64' \
               'wgmma fp8 128x128x128 s3 rem64 fast accum' 'wgmma fp8 128x128x128 s6' 'wgmma fp8 128x64x128 s8' \
               'wgmma fp8 128x128x128 s6 kfill' 'wgmma fp8 128x64x128 s8 kfill' --out "$OUT/fp8y_1024" && \
             run gemm_fp8y_128.log timeout 200 python3 benchmarks/gemm.py --fp8 --shapes 128x2304x16384 \
               128x3456x5120 128x3584x4736 128x3584x9472 128x4096x7168 128x4608x16384 128x5120x8192 \
               128x8192x3696 128x9216x16384 128x9472x3584 --configs default 'default, fast accum' \
               'fp8 64x64x256 s4 w4' 'fp8 64x64x256 s4 w4 k[23]' 'fp8 64x128x256 s4 w4 k2' \
               'wgmma fp8 128x64x128 s8 kfill' 'wgmma fp8 128x128x128 s6 kfill' 'wgmma fp8 128x128x128 s6' \
               --out "$OUT/fp8y_128" ;;
    newdefaults)  # one GPU: this round's defaults (decode programs per SM, 64-row tiles in slices, 96/144/192-wide
             # Gluon tiles) picked per shape and matching float64, and the wider Gluon tiles themselves
             run pytest_newdefaults.log timeout ${TEST_TIMEOUT:-560} python3 -m pytest -v -p no:warnings \
               tests/test_local_gemm.py tests/test_wgmma.py tests/test_gemm_shapes.py \
               -k "gpu_defaults or rem_cols_tiles_match or default_configs_on_gpu or few_tiles_run_split_k" ;;
    sweepmm)  # one GPU: fused_ops.matmul on the default sweep's GEMMs (no regression there) and a few M of 512-768
             run gemm_sweep_matmul.log timeout ${X_TIMEOUT:-300} python3 benchmarks/gemm.py --configs matmul \
               --out "$OUT/sweep_matmul" && \
             run gemm_mid_rows.log timeout 120 python3 benchmarks/gemm.py --configs matmul --shapes 512x2816x4096 \
               512x2880x2880 768x1792x4096 2048x640x4096 512x1280x8192 --out "$OUT/mid_rows" ;;
    fp8four)  # one GPU: FP8 fast accumulation's 256x160 default against torch._scaled_mm, and its tests
             run pytest_fp8four.log timeout ${TEST_TIMEOUT:-300} python3 -m pytest -v -p no:warnings \
               tests/test_gemm_shapes.py tests/test_wgmma.py -k "fp8_default_configs_on_gpu or fp8_wgmma_matches" && \
             run gemm_fp8four.log timeout 200 python3 benchmarks/gemm.py --fp8 --shapes 4096x1280x2880 \
               4096x1280x8192 1024x5120x8192 1024x4736x3584 4096x1152x3584 8192x8192x8192 --configs default \
               "default, fast accum" --out "$OUT/fp8four" ;;
    fixes)   run pytest_fixes.log timeout ${TEST_TIMEOUT:-110} python3 -m pytest -v -rfs \
               "tests/test_replay.py::test_prepared_catalog_calls_skip_the_checks_but_not_tracing_capture_or_tuning" \
               tests/test_collectives.py::test_benchmark_all_to_all_rows \
               tests/test_taxonomy.py::test_sweep_fp8_per_tensor_and_row_wise_validates_every_fp8_variant ;;
    decodeswap)  # one GPU: bf16 decode rows (M <= 16) of the public set, the Gluon kernel's swapped 16x64 tiles
             # (matmul) against the tile loop's 16-row ones (matmul, decode tile loop) in one run; and their tests
             run pytest_decodeswap.log timeout ${TEST_TIMEOUT:-300} python3 -m pytest -v -p no:warnings \
               tests/test_wgmma.py tests/test_local_gemm.py -k "few_rows or decode_rows or gpu_defaults"
             shapes=$(python3 -c "from benchmarks import shapes; print(' '.join(f'{m}x{n}x{k}' for m, n, k, _ in \
               shapes.model_shapes() if m <= 16))")
             run gemm_decodeswap.log timeout ${X_TIMEOUT:-420} python3 benchmarks/gemm.py --shapes $shapes \
               --configs matmul 'matmul, decode tile loop' --out "$OUT/decodeswap" ;;
    decodehot)  # one GPU: bf16 decode rows cool and right after heavy GEMMs (gemm.py --hot), the Gluon kernel's swapped
             # tiles (matmul) against the tile loop's (matmul, decode tile loop); DECODE_SHAPES: the H100's below 0.85x
             for hot in 0 ${HOT:-0.7}; do
               run "gemm_decodehot_$hot.log" timeout ${X_TIMEOUT:-200} python3 benchmarks/gemm.py --hot $hot --shapes \
                 ${DECODE_SHAPES:-1x3584x2368 1x3584x4096 1x4096x3584 1x2880x1440 16x3584x2368 16x2880x1440} \
                 --configs matmul 'matmul, decode tile loop' --out "$OUT/decodehot_$hot"
             done ;;
    x128wide)  # one GPU: 128 rows of many columns (memory-bound), the defaults against wider Gluon tiles (128x256,
             # 128x192, 288-wide) whole and in slices of K that fill the SMs, bf16 and FP8
             run gemm_x128wide.log timeout ${X_TIMEOUT:-330} python3 benchmarks/gemm.py --shapes ${X128_SHAPES:-\
               128x4608x16384 128x9216x7168 128x4608x7168 128x12288x1536 128x5120x8192 128x38016x3584 128x7168x9216 \
               128x38016x8192 128x8192x14336 128x3584x5120 128x3456x5120 128x3584x4736 128x3584x9472 128x3072x4096 \
               128x4096x7168 128x2304x3584 128x4736x3584 128x8192x8192 128x14336x4096 128x5120x6912} \
               --configs matmul 'wgmma 128x256x32 s4*' 'wgmma 128x256x64 s3*' 'wgmma 128x128x64 s4 rem64*' \
               'wgmma 128x256x32 s5 rem32*' 'wgmma swap 128x192x64 s4 kfill' 'wgmma swap 128x128x64 s6 kfill' \
               'wgmma swap 128x64x64 s6 kfill' --out "$OUT/x128wide" ;;
    x128widefp8)  # ... the same for FP8 (precise and fast accumulation, per-tensor scales)
             run gemm_x128wide_fp8.log timeout ${X_TIMEOUT:-330} python3 benchmarks/gemm.py --fp8 --shapes \
               ${X128_FP8_SHAPES:-128x4608x16384 128x4608x7168 128x5120x6912 128x5120x8192 128x8192x3696 \
               128x9216x16384 128x9472x3584 128x3584x9472 128x38016x8192 128x38016x3584 128x8192x8192} \
               --configs default 'default, fast accum' 'wgmma fp8 128x256x64 s4 fast accum kfill' \
               'wgmma fp8 128x128x128 s6 fast accum kfill' 'wgmma fp8 128x128x128 s6 kfill' \
               'wgmma fp8 128x128x128 s4 rem64 kfill' 'wgmma fp8 128x256x128 s3 rem32 fast accum' \
               'wgmma fp8 128x64x128 s8 kfill' --out "$OUT/x128wide_fp8" ;;
    flips128)  # one GPU: the picks that thirds of K and the one-wave 288-wide tiles moved (and 128x76032, where the
             # 288-wide tiles would need two waves) against their previous picks, in one run; bf16 and FP8; tests
             gemm_gpu_tests pytest_flips128.log "few_tiles_run or gpu_defaults_pick or 288 or 128-wide"
             run gemm_flips128.log timeout ${X_TIMEOUT:-200} python3 benchmarks/gemm.py --shapes 128x2560x8192 \
               128x4608x16384 128x2304x16384 128x2304x3584 128x38016x3584 128x38016x5120 128x38016x8192 \
               128x76032x3584 128x76032x5120 128x76032x8192 1024x4608x16384 1024x4608x7168 4096x1152x3584 \
               --configs matmul '64x128x128 s4 w4' '64x128x128 s4 w4 k3' 'wgmma 128x128x64 s4 rem32' \
               'wgmma 128x128x64 s4 rem64' 'wgmma 256x128x32 s5 rem16' 'wgmma 128x256x32 s5 rem32' \
               --out "$OUT/flips128"
             run gemm_flips128_fp8.log timeout ${X_TIMEOUT:-100} python3 benchmarks/gemm.py --fp8 --shapes \
               128x4608x16384 --configs default 'default, fast accum' 'fp8 64x128x256 s4 w4' \
               'fp8 64x128x256 s4 w4 fast accum' --out "$OUT/flips128_fp8" ;;
    x128hot)  # one GPU: 128-row GEMMs on the tile loop, cool and right after heavy GEMMs (--hot), against the Gluon
             # kernel's whole and sliced tiles (TMA and warpgroup MMAs issue fewer instructions per byte)
             cool_hot x128hot --shapes 128x9216x7168 128x7168x9216 128x8192x14336 128x5120x8192 128x4608x7168 \
               128x5120x6912 128x8192x8192 128x3584x5120 128x3456x5120 128x3584x4736 128x3072x4096 128x4096x7168 \
               128x3584x9472 --configs matmul 'wgmma 128x128x64 s6' 'wgmma swap 128x128x64 s6' \
               'wgmma 128x64x64 s8' 'wgmma swap 128x64x64 s6' 'wgmma swap 128x64x64 s6 kfill' \
               'wgmma swap 128x128x64 s6 kfill' ;;
    flips128b)  # one GPU: 128 rows, whole 128x64 Gluon tiles at 64-80 tiles and long K against the tile loop's
             # previous picks, cool and hot, with neighbours the rule leaves alone; and the few-tile GPU tests
             gemm_gpu_tests pytest_flips128b.log "few_tiles_run or gpu_defaults_pick or 288"
             cool_hot flips128b --shapes 128x4096x7168 128x4608x7168 128x5120x6912 128x5120x8192 128x5120x3456 \
               128x3584x9472 --configs matmul 'wgmma 128x64x64 s8' '64x128x128 s4 w4' '64x128x128 s4 w4 k2' ;;
    fp8x96)  # one GPU: FP8 1024-row GEMMs of 72-96 128x128 tiles, the defaults against 96-wide tiles (64 + 32)
             run gemm_fp8x96.log timeout ${X_TIMEOUT:-150} python3 benchmarks/gemm.py --fp8 --shapes 1024x1280x8192 \
               1024x1536x4096 1024x1280x2880 1024x1440x2880 1024x1152x3584 1024x1280x4096 --configs default \
               'default, fast accum' 'wgmma fp8 128x64x128 s6 rem32' 'wgmma fp8 128x64x128 s6 rem32 fast accum' \
               --out "$OUT/fp8x96" ;;
    xfp8rows)  # one GPU: FP8 128-row GEMMs below their floor (the tile loop's 64x128 tiles, few 128x128 ones) and
             # 129x4096x4096, against whole 128x64 Gluon tiles and swapped ones (A's rows as the MMAs' N), whole and
             # in slices of K, precise and fast accumulation
             run gemm_xfp8rows.log timeout ${X_TIMEOUT:-330} python3 benchmarks/gemm.py --fp8 --shapes \
               ${XFP8_SHAPES:-128x4608x16384 128x4608x7168 128x5120x8192 128x8192x3696 128x5120x6912 128x5120x3456 \
               128x4736x3584 128x5120x2560 128x9216x16384 128x9472x3584 128x12288x1536 129x4096x4096} \
               --configs default 'default, fast accum' 'wgmma fp8 128x64x128 s8' 'wgmma fp8 128x64x128 s8 fast accum' \
               'wgmma fp8 swap 128x64x128 s6' 'wgmma fp8 swap 128x64x128 s6 k2' 'wgmma fp8 swap 128x64x128 s6 kfill' \
               'wgmma fp8 swap 128x64x128 s6 fast accum' 'wgmma fp8 swap 128x64x128 s6 fast accum k2' \
               'wgmma fp8 swap 128x128x128 s6' 'wgmma fp8 swap 128x128x128 s6 kfill' \
               'wgmma fp8 swap 128x128x128 s6 fast accum' 'wgmma fp8 swap 128x64x128 s6 rem16' \
               --out "$OUT/xfp8rows" ;;
    xbf16few)  # one GPU: bf16 1024- and 4096-row GEMMs below their floor on both GPUs, the defaults against tiles
             # that fill one wave (96, 144, 160, 192 wide; 192x128, swapped 256x64)
             run gemm_xbf16few.log timeout ${X_TIMEOUT:-200} python3 benchmarks/gemm.py --shapes ${XBF16_SHAPES:-\
               1024x1440x2880 1024x2304x3584 4096x720x2880 4096x640x2880 1024x1536x4096 1024x1280x2880} \
               --configs matmul 'wgmma 128x64x64 s6 rem32' 'wgmma 128x128x64 s4 rem16' 'wgmma 128x128x64 s4 rem32' \
               'wgmma 128x128x64 s4 rem64' 'wgmma 192x128x64 s4' 'wgmma swap 256x64x64 s4' \
               'wgmma 256x128x32 s5 rem16' --out "$OUT/xbf16few" ;;
    flips5)  # one GPU: the GEMMs two rules move (bf16 96-wide tiles on B's unaligned rows; FP8 whole 128x64 tiles
             # at 128 rows from 8192 deep) against their previous picks, cool and right after heavy GEMMs, with
             # neighbours the rules leave alone; swapped 256x64 tiles against 96-wide ones; the picks' GPU tests
             gemm_gpu_tests pytest_flips5.log "few_tiles_run or gpu_defaults_pick"
             cool_hot flips5 --shapes 1024x1440x2880 128x50272x2880 128x25136x2880 1024x1536x4096 1024x1280x8192 \
               1024x1280x2880 --configs matmul 'wgmma swap 256x64x64 s4' 'wgmma 128x128x64 s4 rem64' \
               'wgmma 128x64x64 s6 rem32'
             cool_hot flips5_fp8 --fp8 --shapes 128x4608x16384 128x5120x8192 128x4608x7168 128x5120x6912 \
               --configs default 'default, fast accum' 'fp8 64x128x256 s4 w4' 'fp8 64x128x256 s4 w4 fast accum' \
               'wgmma fp8 128x64x128 s8' 'wgmma fp8 128x64x128 s8 fast accum' ;;
    xfp8few)  # one GPU: FP8 1024-row GEMMs of 72-96 128x128 tiles against 192x64 tiles (three consumers; one wave
             # of 120 at 1024x1280), precise and fast accumulation; and the few-tile and pick GPU tests
             gemm_gpu_tests pytest_xfp8few.log "few_tiles_run or gpu_defaults_pick"
             run gemm_xfp8few.log timeout ${X_TIMEOUT:-200} python3 benchmarks/gemm.py --fp8 --shapes 1024x1280x8192 \
               1024x1280x2880 1024x1152x3584 1024x1280x4096 1024x1536x4096 1024x1440x2880 --configs default \
               'default, fast accum' 'wgmma fp8 128x128x128 s6' 'wgmma fp8 192x64x128 s6' \
               'wgmma fp8 192x64x128 s6 fast accum' --out "$OUT/xfp8few" ;;
    flips6)  # one GPU: FP8 precise one-wave 192x64 tiles where they moved the defaults, against the 128x128 tiles
             # before, cool and right after heavy GEMMs; their GPU tests and the FP8 Gluon kernel's against float64
             gemm_gpu_tests pytest_flips6.log "192x64 or few_tiles_run or gpu_defaults_pick or fp8_wgmma_matches"
             cool_hot flips6 --fp8 --shapes 1024x1280x8192 1024x1152x3584 1024x1280x2880 1024x1280x4096 \
               --configs default 'wgmma fp8 128x128x128 s6' ;;
    missprof)  # one GPU: the GEMMs still below their floors, torch's side and ours: cuBLAS's kernels (names carry tile,
             # cluster and split-K), then Nsight Compute's sections of both kernels where this machine has ncu
             miss="1024x2304x3584 1024x1536x4096 1024x1440x2880 4096x720x2880 128x3584x5120 128x9216x7168 \
               128x12288x1536 1x3584x4736"
             run torch_kernels_miss_bf16.log timeout 200 python3 benchmarks/torch_kernels.py --shapes $miss \
               --out "$OUT/torch_kernels_bf16"
             run torch_kernels_miss_fp8.log timeout 200 python3 benchmarks/torch_kernels.py --fp8 --shapes \
               128x5120x8192 128x8192x3696 128x4608x7168 1024x1536x4096 1024x1152x3584 1024x3584x896 \
               --out "$OUT/torch_kernels_fp8"
             NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
             if [ -n "$NCU" ]; then
               sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats \
                 --section Occupancy --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis"
               kernels='regex:wgmma_ws_kernel|gemm_kernel|sum_slices|nvjet|sm90|cutlass'
               run ncu_miss_bf16.log timeout 300 "$NCU" --clock-control none $sections -k "$kernels" \
                 python3 benchmarks/gemm_profile.py --shapes 1024x2304x3584 1024x1536x4096 128x3584x5120
               run ncu_miss_fp8.log timeout 240 "$NCU" --clock-control none $sections -k "$kernels" \
                 python3 benchmarks/gemm_profile.py --fp8 --shapes 1024x1152x3584 128x5120x8192
             else
               echo "no ncu on this machine" | tee "$OUT/ncu_miss_bf16.log"
             fi ;;
    fastprof) # one GPU: the FP8 fast-accumulation GEMMs no other tile came near (fastx_*): cuBLAS's kernels, then
             # Nsight Compute's sections of both sides where this machine has ncu
             fast_miss=${FAST_MISS:-1024x8192x3696 1024x2880x720 1024x720x2880 1024x4608x7168 1024x3584x896}
             run torch_kernels_fast.log timeout 200 python3 benchmarks/torch_kernels.py --fp8 --fast-accum \
               --shapes $fast_miss --out "$OUT/torch_kernels_fast"
             NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
             if [ -n "$NCU" ]; then
               sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats \
                 --section Occupancy --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis"
               run ncu_fast.log timeout 400 "$NCU" --clock-control none $sections \
                 -k 'regex:wgmma_ws_kernel|gemm_kernel|sum_slices|nvjet|sm90|cutlass' \
                 python3 benchmarks/gemm_profile.py --fp8 --fast-accum --shapes $fast_miss
             else
               echo "no ncu on this machine" | tee "$OUT/ncu_fast.log"
             fi ;;
    sq128)   # one GPU: whole 128x128 tiles (72-96 of them) against the defaults' 96- and 160-wide ones at 1024 rows,
             # cool and right after heavy GEMMs
             cool_hot sq128 --shapes 1024x1536x4096 1024x1280x8192 1024x1280x2880 1024x1152x3584 1024x1280x4096 \
               1024x2304x3584 --configs matmul 'wgmma 128x128x64 s6' ;;
    rows64)  # one GPU: 64-row Gluon tiles (one consumer, deep rings, 72-144 wide) at the 128-row GEMMs below their
             # floors (bf16, FP8 precise and fast) and FP8's 1024-row ones, against the defaults; their GPU tests first
             gemm_gpu_tests pytest_rows64.log "rem_cols_tiles or refused"
             run gemm_rows64_bf16.log timeout 280 python3 benchmarks/gemm.py --shapes 128x3584x5120 128x3456x5120 \
               128x3584x4736 128x3584x4096 128x3072x4096 128x4736x3584 128x3584x9472 128x4096x7168 128x12288x1536 \
               128x5120x6912 --configs matmul 'wgmma 64x64x64 s12' 'wgmma 64x64x64 s12 rem16' \
               'wgmma 64x64x64 s12 rem32' 'wgmma 64x128x64 s8' --out "$OUT/rows64_bf16"
             run gemm_rows64_fp8.log timeout 400 python3 benchmarks/gemm.py --fp8 --shapes 128x5120x8192 \
               128x4736x3584 128x5120x2560 128x5120x6912 128x4608x7168 128x9472x3584 128x5120x3456 128x8192x3696 \
               128x14784x8192 1024x1152x3584 1024x1536x4096 1024x1440x2880 --configs default 'default, fast accum' \
               'wgmma fp8 64x64x128 s12 rem8' 'wgmma fp8 64x64x128 s12 rem16' 'wgmma fp8 64x128x128 s8' \
               'wgmma fp8 64x128x128 s8 rem16' 'wgmma fp8 64x64x128 s12 rem8 fast accum' \
               'wgmma fp8 64x64x128 s12 rem16 fast accum' 'wgmma fp8 64x128x128 s8 fast accum' \
               'wgmma fp8 64x128x128 s8 rem16 fast accum' --out "$OUT/rows64_fp8" ;;
    flips64)  # one GPU: every public GEMM that config.WGMMA_ROW64_TILES moved, the new pick against the one before
             # (", no 64-row tiles"), cool and right after heavy GEMMs; the 64-row tiles' GPU tests first
             gemm_gpu_tests pytest_flips64.log "64_row or rem_cols or refused"
             cool_hot flips64_bf16 --shapes 128x4096x7168 128x3584x4096 128x3584x9472 128x3584x4736 128x3584x5120 \
               128x3456x5120 --configs matmul 'matmul, no 64-row tiles'
             cool_hot flips64_fp8 --fp8 --shapes 128x5120x8192 128x9216x16384 128x4608x16384 1024x1152x3584 \
               128x9472x3584 128x5120x6912 128x9216x7168 128x4608x7168 --configs 'default, fast accum' \
               'default, fast accum, no 64-row tiles' ;;
    turns)   # one GPU: two consumers taking turns on each 64-row Gluon tile's blocks of K, at the FP8 GEMMs below
             # their floors with precise accumulation (and two with fast), against the defaults; their GPU tests first
             gemm_gpu_tests pytest_turns.log "turns or 64_row"
             run gemm_turns_fp8.log timeout 400 python3 benchmarks/gemm.py --fp8 --shapes 128x5120x8192 \
               128x4736x3584 128x5120x2560 128x5120x6912 128x4608x7168 128x9472x3584 128x5120x3456 128x8192x3696 \
               128x14784x8192 128x9216x16384 1024x1152x3584 1024x1536x4096 1024x1440x2880 1024x1280x8192 \
               1024x1280x2880 --configs default 'default, fast accum' 'wgmma fp8 64x64x128 s10 rem16 turns' \
               'wgmma fp8 64x64x128 s10 rem8 turns' 'wgmma fp8 64x128x128 s6 turns' \
               'wgmma fp8 64x128x128 s6 rem16 turns' 'wgmma fp8 64x64x128 s10 rem16 turns fast accum' \
               'wgmma fp8 64x128x128 s6 rem16 turns fast accum' --out "$OUT/turns_fp8" ;;
    flips64p)  # one GPU: the FP8 GEMMs whose precise pick config.WGMMA_FP8_PRECISE_ROW64_TILES moved (64-row tiles, two
             # consumers taking turns on K), against the pick before, cool and right after heavy GEMMs; GPU tests first
             gemm_gpu_tests pytest_flips64p.log "turns or 64_row or pick"
             cool_hot flips64p --fp8 --shapes 128x5120x8192 128x9216x16384 128x4608x16384 1024x1152x3584 \
               128x9472x3584 1024x640x3584 128x4736x3584 128x5120x6912 128x5120x3456 128x9216x7168 128x4608x7168 \
               --configs default 'default, no 64-row tiles' ;;
    swap96)  # one GPU: swapped Gluon tiles 96 rows of A (64 + 32) by 128 or 192 columns of B, one wave of 110-132 at
             # the 1024-row GEMMs of few tiles still below their floors (cuBLAS's 96x128, 192x96), against the defaults
             gemm_gpu_tests pytest_swap96.log "rem_rows or swap"
             run gemm_swap96_bf16.log timeout 280 python3 benchmarks/gemm.py --shapes 1024x2304x3584 1024x1536x4096 \
               1024x1440x2880 1024x1280x8192 1024x1280x2880 1024x2560x2880 1024x1152x3584 4096x720x2880 \
               --configs matmul 'wgmma swap 64x128x64 s6 rem32' 'wgmma swap 64x192x64 s5 rem32' \
               'wgmma 128x128x64 s4 rem64' --out "$OUT/swap96_bf16"
             run gemm_swap96_fp8.log timeout 300 python3 benchmarks/gemm.py --fp8 --shapes 1024x1536x4096 \
               1024x1280x8192 1024x1440x2880 1024x2304x3584 1024x1280x2880 1024x2560x2880 1024x1152x3584 \
               --configs default 'default, fast accum' 'wgmma fp8 swap 64x128x128 s6 rem32' \
               'wgmma fp8 swap 64x128x128 s6 rem32 fast accum' 'wgmma fp8 swap 64x192x128 s4 rem32' \
               'wgmma fp8 swap 64x192x128 s4 rem32 fast accum' --out "$OUT/swap96_fp8" ;;
    wide64)  # one GPU: 64-row Gluon tiles 160 and 192 wide (128 + 32, 128 + 64), one consumer or two taking turns on
             # K, 128 of them at the 1024-row GEMMs of 1280-1536 columns still below their floors, against the defaults
             run gemm_wide64_bf16.log timeout 250 python3 benchmarks/gemm.py --shapes 1024x1536x4096 1024x1440x2880 \
               1024x1280x2880 1024x1280x8192 --configs matmul 'wgmma 64x128x64 s8 rem32' 'wgmma 64x128x64 s8 rem64' \
               'wgmma 64x128x64 s8 rem32 turns' 'wgmma 64x128x64 s8 rem64 turns' --out "$OUT/wide64_bf16"
             run gemm_wide64_fp8.log timeout 300 python3 benchmarks/gemm.py --fp8 --shapes 1024x1536x4096 \
               1024x1280x8192 1024x1440x2880 1024x1280x2880 1024x1280x4096 --configs default 'default, fast accum' \
               'wgmma fp8 64x128x128 s6 rem32 turns' 'wgmma fp8 64x128x128 s6 rem64 turns' \
               'wgmma fp8 64x128x128 s6 rem32 turns fast accum' 'wgmma fp8 64x128x128 s6 rem64 turns fast accum' \
               'wgmma fp8 64x128x128 s8 rem32 fast accum' 'wgmma fp8 64x128x128 s8 rem64 fast accum' \
               --out "$OUT/wide64_fp8" ;;
    flips64w)  # one GPU: the GEMMs whose pick 64-row tiles 160 and 192 wide moved (and FP8 fast 80-wide ones at K under
             # 8192, back to the tile loop), against the picks before (", narrow 64-row tiles"), cool and right after
             # heavy GEMMs; the 64-row tiles' GPU tests first
             gemm_gpu_tests pytest_flips64w.log "64_row or turns or fill_most"
             cool_hot flips64w_bf16 --shapes 1024x1536x4096 1024x1280x8192 1024x1280x2880 --configs matmul \
               'matmul, narrow 64-row tiles'
             cool_hot flips64w_fp8 --fp8 --shapes 1024x1536x4096 1024x1280x8192 128x5120x6912 128x4608x7168 \
               --configs default 'default, narrow 64-row tiles' 'default, fast accum' \
               'default, fast accum, narrow 64-row tiles' ;;
    xprecise)  # one GPU: FP8 precise accumulation at 1024 rows of 1792-8192 columns (two waves or more, 0.78-0.84x on
             # both GPUs): 64-row tiles 128-192 wide in turns against the defaults' 128x128 and 192x128 tiles
             run gemm_xprecise.log timeout 400 python3 benchmarks/gemm.py --fp8 --shapes 1024x3584x4736 \
               1024x3584x5120 1024x3584x9472 1024x8192x3696 1024x8192x14784 1024x1792x5120 1024x6912x5120 \
               --configs default 'wgmma fp8 128x128x128 s6' 'wgmma fp8 192x128x128 s4' 'wgmma fp8 64x128x128 s6 turns' \
               'wgmma fp8 64x128x128 s6 rem32 turns' 'wgmma fp8 64x128x128 s6 rem64 turns' --out "$OUT/xprecise" ;;
    deepk)   # one GPU: 128-deep blocks of K for bf16 (FP8: 256) in the Gluon kernel, half the ring's barrier waits and
             # arrivals per tile, at the GEMMs still below their floors, against the defaults
             run gemm_deepk_rows128.log timeout 200 python3 benchmarks/gemm.py --shapes 128x3584x5120 128x3584x4736 \
               128x3456x5120 128x3072x4096 128x3584x9472 128x4096x7168 128x12288x1536 128x9216x7168 --configs matmul \
               'wgmma 64x64x64 s12' 'wgmma 64x64x128 s6' '64x64x128 s4 w4' --out "$OUT/deepk_rows128"
             run gemm_deepk_rows1024.log timeout 250 python3 benchmarks/gemm.py --shapes 1024x2304x3584 1024x1440x2880 \
               1024x2560x2880 1024x5120x640 1024x768x4096 4096x640x2880 4096x640x3584 4096x1280x2880 1024x7392x8192 \
               1024x2304x16384 --configs matmul 'wgmma 128x128x128 s3' 'wgmma 128x64x128 s4' 'wgmma 64x128x128 s4' \
               'wgmma 64x128x128 s3 rem64' 'wgmma 128x64x128 s3 rem32' --out "$OUT/deepk_rows1024"
             run gemm_deepk_fp8.log timeout 150 python3 benchmarks/gemm.py --fp8 --shapes 1024x3584x4736 \
               1024x8192x3696 1024x1792x5120 128x8192x3696 1024x2304x7168 --configs default 'default, fast accum' \
               'wgmma fp8 128x128x256 s3 fast accum' 'wgmma fp8 64x128x256 s4 fast accum' --out "$OUT/deepk_fp8" ;;
    flipsdk)  # one GPU: the bf16 GEMMs whose pick 128-deep 64x64 tiles moved, against the picks before (", 64-deep
             # 64-row tiles"), cool and right after heavy GEMMs; then the same tiles at shorter K (not picked there); the
             # 64-row tiles' GPU tests first
             gemm_gpu_tests pytest_flipsdk.log "64_row or fill_most"
             cool_hot flipsdk_bf16 --shapes 128x3072x4096 128x3584x4096 128x3456x5120 128x3584x4736 128x3584x5120 \
               128x3584x9472 128x4096x7168 --configs matmul 'matmul, 64-deep 64-row tiles'
             run gemm_deepk_shortk.log timeout 150 python3 benchmarks/gemm.py --shapes 128x3584x2368 128x4096x3584 \
               128x3584x3584 128x2880x2880 128x4096x2048 128x3072x1536 --configs matmul 'wgmma 64x64x128 s6' \
               --out "$OUT/deepk_shortk" ;;
    flipsu)  # one GPU: FP8 1024x1280x2880 (B's K-major rows of 2880 bytes, off 128-byte alignment) on 64x160 tiles
             # against the defaults (192x64 precise, 128x96 fast: 64-row tiles are refused on unaligned B), cool and
             # right after heavy GEMMs; 1024x1280x3200 (aligned rows: 64x160 is the default there) beside it
             cool_hot flipsu_fp8 --fp8 --shapes 1024x1280x2880 1024x1280x3200 --configs default \
               'wgmma fp8 64x128x128 s6 rem32 turns' 'default, fast accum' 'wgmma fp8 64x128x128 s8 rem32 fast accum' ;;
    kmajor)  # one GPU: bf16 with B K-major (nn.Linear's weight.t(), as F.linear and the torch ops pass it) on the
             # public sample, fused_ops.matmul against torch.matmul on the same operands; the row-major run beside it
             run gemm_kmajor.log timeout 300 python3 benchmarks/gemm.py --shapes models --weights k-major \
               --configs matmul --out "$OUT/kmajor"
             run gemm_rowmajor.log timeout 300 python3 benchmarks/gemm.py --shapes models --configs matmul \
               --out "$OUT/rowmajor" ;;
    rows64tests)  # one GPU: the 64-row Gluon tiles' GPU tests (defaults, K-major weights, FP8) against float64
             gemm_gpu_tests pytest_rows64tests.log "64_row or refused or pick" ;;
    flipsu2)  # one GPU: FP8 1024x1280x2880 (B's rows off 128 bytes) on its 64-row default against its picks before
             # (192x64 precise, 128x96 fast), cool and right after heavy GEMMs
             cool_hot flipsu2_fp8 --fp8 --shapes 1024x1280x2880 --configs default 'wgmma fp8 192x64x128 s6' \
               'default, fast accum' 'wgmma fp8 128x64x128 s6 rem32 fast accum' ;;
    kmajorx)  # one GPU: bf16 on K-major B (nn.Linear's weight.t()) whose rows of K are off 128 bytes, where the
             # defaults take swap-AB tiles (UNALIGNED_B_COST, measured on row-major B), against unswapped tiles and
             # against the weight padded once (fused_ops.pad_weight: 'matmul, padded B')
             run gemm_kmajorx.log timeout 200 python3 benchmarks/gemm.py --weights k-major --shapes 4096x4096x3000 \
               4096x1280x2880 1024x2560x2880 16384x1440x2880 4096x1440x2880 4096x2880x360 16384x2880x2880 \
               --configs matmul 'matmul, padded B' 'wgmma 128x256x64 s3' 'wgmma 192x128x64 s4' \
               'wgmma 128x128x64 s6' 'wgmma swap 256x128x64 s3' 'wgmma swap 256x64x64 s4' --out "$OUT/kmajorx" ;;
    wide64b)  # one GPU: bf16 64-row tiles 288 and 320 wide (256 + 32, 256 + 64; one consumer), 128 tiles at 1024 rows
             # of 2304-2560 columns where the defaults run 120 of 128x160, cool and right after heavy GEMMs
             cool_hot wide64b --shapes 1024x2304x3584 1024x2304x16384 1024x2560x2880 1024x2560x8192 128x19008x3584 \
               --configs matmul 'wgmma 64x256x64 s4 rem32' 'wgmma 64x256x32 s8 rem32' 'wgmma 64x256x64 s4 rem64' \
               'wgmma 64x256x32 s8 rem64' ;;
    flips320)  # one GPU: the GEMMs whose pick bf16's 64x320 tiles moved (benchmarks/gemm_picks.py --diff), the
             # default against each one's pick before, cool and right after heavy GEMMs; then the 64-row tiles' tests
             # (at 8359b94 also 128x18432-19008 and 1024x2112x7168, which the 95% fill then left out)
             cool_hot flips320 --shapes 1024x2304x3584 1024x2304x16384 1024x2560x2880 1024x2560x8192 \
               --configs matmul 'wgmma 128x128x64 s4 rem32'
             gemm_gpu_tests pytest_flips320.log "64_row or pick" ;;
    tall320)  # one GPU: bf16 64x320 tiles at 4096-16384 rows of 640 columns (as many tiles as the defaults' 128x160 at
             # 4096 rows: 128), cool and right after heavy GEMMs
             cool_hot tall320 --shapes 4096x640x2880 4096x640x3584 16384x640x2880 16384x640x3584 4096x1280x2880 \
               --configs matmul 'wgmma 64x256x64 s4 rem64' 'wgmma 64x256x32 s8 rem64' ;;
    unal64)  # one GPU: bf16 64-row Gluon tiles where the defaults refuse them (B's rows off 128 bytes: 1000^3,
             # 1024x1440x2880, 4096x1440x2880) or where 64x128 ones make 112-128 tiles (1024x896x5120), cool and
             # right after heavy GEMMs; against the picks and the weight padded once
             cool_hot unal64 --shapes 1000x1000x1000 1024x1440x2880 1024x896x5120 1024x1000x4096 4096x1440x2880 \
               --configs matmul 'matmul, padded B' 'wgmma 64x128x64 s8' 'wgmma 64x128x128 s4' \
               'wgmma 64x128x64 s8 rem64' 'wgmma 64x128x64 s8 rem32' ;;
    flips320b)  # one GPU: the GEMMs whose pick 64x320 tiles in one or two waves up to 4096 rows moved
             # (gemm_picks.py --diff; three 2048-row ones beside the public set), the default against each one's
             # pick before, cool and right after heavy GEMMs; then the 64-row tiles' tests
             cool_hot flips320b --shapes 4096x640x2880 4096x640x3584 4096x1280x2880 4096x1280x8192 4096x1152x3584 \
               1024x5120x3456 1024x5120x6912 1024x5120x8192 2048x2304x4096 2048x2560x2880 2048x1280x4096 \
               --configs matmul 'wgmma 256x128x32 s5 rem32' 'wgmma 128x256x32 s5 rem32' 'wgmma 128x128x64 s4 rem32'
             gemm_gpu_tests pytest_flips320b.log "64_row or pick or between_powers" ;;
    flips320c)  # ... the same GEMMs where N is a multiple of 320 (the rule kept), and the tests
             cool_hot flips320c --shapes 4096x640x2880 4096x640x3584 4096x1280x2880 4096x1280x8192 1024x5120x3456 \
               1024x5120x6912 1024x5120x8192 2048x2560x2880 2048x1280x4096 \
               --configs matmul 'wgmma 256x128x32 s5 rem32' 'wgmma 128x128x64 s4 rem32'
             gemm_gpu_tests pytest_flips320c.log "64_row or pick or between_powers" ;;
    short320)  # one GPU: the 64x320 tiles' two waves at short K (1024x5120 at K of 640-2560), against the picks before
             cool_hot short320 --shapes 1024x5120x640 1024x5120x1280 1024x5120x1728 1024x5120x2560 4096x1280x2048 \
               1024x2560x2048 4096x640x2048 --configs matmul 'wgmma 256x128x32 s5 rem32' 'wgmma 128x128x64 s4 rem32' \
               'wgmma 64x256x64 s4 rem64' ;;
    pairs)   # one GPU: FP8 precise accumulation promoted two blocks at a time (wgmma.run(promote="pairs")): its GPU
             # tests, then at the FP8 precise GEMMs below their floor (1024 rows of 1792-9472 columns, 128 rows in
             # 64-row tiles) against the defaults and the same tiles promoted per block, cool and right after heavy
             # GEMMs
             gemm_gpu_tests pytest_pairs.log "pairs or precise or turns"
             HOT=0.7 cool_hot pairs --fp8 --shapes 1024x3584x4736 1024x3584x9472 1024x8192x3696 1024x1792x5120 \
               1024x3584x5120 1024x6912x5120 128x4608x7168 128x5120x6912 128x8192x3696 4096x8192x8192 \
               --configs default 'wgmma fp8 128x128x128 s6' 'wgmma fp8 128x128x128 s6 pairs' \
               'wgmma fp8 64x128x128 s8 pairs' 'wgmma fp8 128x64x128 s8 pairs' 'wgmma fp8 64x64x128 s12 pairs' \
               'wgmma fp8 64x128x128 s6 turns' ;;
    xmisc)   # one GPU: three bf16 misses of the H100's whole set: 2048x5000x2048 (B's rows unaligned; cuBLAS 160x256:
             # 256x160 tiles make 256, two waves), 128x4000x4096 (unaligned, the tile loop's 64x64), 16384x2880x360
             # (K of 5.6 blocks), against their picks, cool and right after heavy GEMMs
             cool_hot xmisc --shapes 2048x5000x2048 128x4000x4096 16384x2880x360 --configs matmul \
               'wgmma 256x128x32 s5 rem32' 'wgmma 128x256x64 s3' 'wgmma swap 256x128x64 s3' 'wgmma swap 128x64x64 s6' \
               'wgmma 128x128x64 s6' 'wgmma 192x128x64 s4' ;;
    flips320k)  # one GPU: the tenth round's moved GEMMs on K-major B (nn.Linear's weight.t()), the default against
             # each one's pick before, cool
             run gemm_flips320k.log timeout 200 python3 benchmarks/gemm.py --weights k-major --shapes 4096x640x2880 \
               4096x640x3584 4096x1280x2880 4096x1280x8192 1024x5120x640 1024x5120x1280 1024x5120x3456 \
               1024x5120x8192 --configs matmul 'wgmma 256x128x32 s5 rem32' 'wgmma 128x128x64 s4 rem32' \
               --out "$OUT/flips320k" ;;
    x288)    # one GPU: why 64x288 tiles (256 + 32) lose where 64x320 ones win: the same tiles on row-major B (the
             # 32-column box of B: 64-byte rows, 64-byte swizzle) and on K-major B (its box 128-byte rows of K), at
             # 1024x2304 (8 x 288 exactly) and 4096x1152 (4 x 288)
             for w in row-major k-major; do
               run gemm_x288_$w.log timeout 150 python3 benchmarks/gemm.py --weights $w --shapes 1024x2304x3584 \
                 1024x2304x16384 4096x1152x3584 --configs matmul 'wgmma 64x256x64 s4 rem32' 'wgmma 64x256x64 s4 rem64' \
                 'wgmma 128x256x32 s5 rem32' --out "$OUT/x288_$w"
             done ;;
    x288k)   # one GPU: bf16 64x288 tiles (256 + 32) on K-major B (nn.Linear's layout) at the public GEMMs whose pick
             # there is 64x320 (1024x2304: 8 x 288 exactly), against that pick, cool and right after heavy GEMMs
             HOT=0.7 cool_hot x288k --weights k-major --shapes 1024x2304x3584 1024x2304x16384 2048x2304x4096 \
               --configs matmul 'wgmma 64x256x64 s4 rem32' ;;
    flips11)  # one GPU (the H100 first: the eleventh round ran on an H200 only): the round's GPU tests (pairs, the
             # K-major defaults through matmul's door), then its moved GEMMs against their picks before, cool and hot:
             # FP8 precise pairs (the 111 of pairs_e897a8d/moved_shapes.txt) and bf16 64x288 tiles on K-major B
             gemm_gpu_tests pytest_flips11.log "pairs or k_major_weights or 288 or precise"
             X_TIMEOUT=${X_TIMEOUT:-330} HOT=0.7 cool_hot pairs11 --fp8 \
               --shapes $(cat results/current/gemm/pairs_e897a8d/moved_shapes.txt) \
               --configs default 'default, per-block promotion'
             HOT=0.7 cool_hot x288k2 --weights k-major --shapes 1024x2304x3584 1024x2304x16384 \
               --configs matmul 'matmul, no K-major 288-wide tiles' ;;
    fp8fast)  # one GPU: FP8 fast accumulation's misses at 1024 rows (3584 columns at short K: 112 128x256 tiles, one
             # wave of mostly load and store; 256x160 tiles at 1024x4608-4736 and 4096x1152) against other tiles and
             # the tile loop, cool and right after heavy GEMMs
             HOT=0.7 cool_hot fp8fast --fp8 --shapes 1024x3584x448 1024x3584x896 1024x3584x1792 1024x3584x2368 \
               1024x4608x7168 1024x4736x3584 4096x1152x3584 --configs 'default, fast accum' \
               'default, fast accum, tile loop' 'wgmma fp8 128x128x128 s6 fast accum' \
               'wgmma fp8 192x128x128 s4 fast accum' 'wgmma fp8 128x128x128 s4 rem32 fast accum' \
               'wgmma fp8 64x128x128 s8 fast accum' 'wgmma fp8 128x256x128 s3 fast accum' \
               'fp8 64x128x256 s4 w4 fast accum' ;;
    cat128)  # 2 GPUs: the catalog at 128 rows, where the tile loop's default moved from 64x128x128 to 64x64x128 tiles
             # (config.row_tile's costs, set for the GEMM alone) since d14fcb5: the default against 64x128x128, graph,
             # 20 replays, two rounds each (one sweep's 6 replays moved 20-40 us rows by up to 2x)
             for round in 1 2; do
               run cat128_default_$round.log timeout 150 python3 -m taxonomy sweep -r ${NRANKS:-2} --shapes \
                 128x3584x3584 128x4096x4096 128x8192x8192 --timing graph --iters 20 --warmup 3 \
                 --out "$OUT/cat128_default_$round"
               run cat128_64x128_$round.log timeout 150 python3 -m taxonomy sweep -r ${NRANKS:-2} --shapes \
                 128x3584x3584 128x4096x4096 128x8192x8192 --timing graph --iters 20 --warmup 3 --BLK_M 64 \
                 --BLK_N 128 --BLK_K 128 --num_stages 4 --num_warps 4 --out "$OUT/cat128_64x128_$round"
             done ;;
    misses)  # one GPU: the GEMMs below their floors in a whole-set run (the H100's at f77e57a unless BF16_MISS and
             # FP8_MISS name others), twice each, cool, to tell a miss that holds from one run's noise
             # (gemm_classes.py takes both runs: the lower median)
             bf16_miss=${BF16_MISS:-1x4096x3584 1024x2304x3584 1024x896x5120 1x4000x4096 1024x1440x2880 2048x5000x2048 \
                 16x2880x1440 4096x720x2880 16384x640x3584 128x4736x3584 128x4000x4096 1000x1000x1000}
             fp8_miss=${FP8_MISS:-1x3584x4096 4096x53248x16384 4096x1152x3584 1x3584x5120 128x5120x2560 128x5120x6912 \
                 1x3456x5120 128x4608x7168 1024x4608x16384 16x13312x16384 1024x3584x896 1024x640x3584 \
                 1024x2880x720 1024x640x2880 1024x720x2880 1024x4608x7168 1x4096x7168 1x2304x3584 \
                 1x3584x4736 128x5120x3456 128x8192x3696 1x2560x2880 4096x64640x7168 \
                 16384x16384x26624 1024x2304x16384 1024x3584x1792 1024x3584x448 1024x3584x2368 \
                 1024x8192x14784 1024x8192x3696 16x2560x2880 1024x1280x2880 1024x1440x2880 \
                 16384x2880x720 16384x640x2880}
             for r in 1 2; do
               run gemm_misses_bf16_run$r.log timeout ${X_TIMEOUT:-150} python3 \
                 benchmarks/gemm.py --configs matmul --shapes $bf16_miss --out "$OUT/misses_bf16_run$r"
               run gemm_misses_fp8_run$r.log timeout ${X_TIMEOUT:-200} python3 benchmarks/gemm.py --fp8 \
                 --configs default 'default, fast accum' --shapes $fp8_miss --out "$OUT/misses_fp8_run$r"
             done ;;
    wide)    # one GPU: tiles BLOCK_N + REM wide as one MMA from inline PTX (fused_ops/wide_mma) against two: the GPU
             # tests of rem and swapped tiles, then the misses (as `misses`) with both forms, FP8 and K-major bf16, cool
             gemm_gpu_tests pytest_wide.log "${WIDE_TESTS:-rem or swap or wide or compiles}"
             bf16_miss=${BF16_MISS:-1024x1440x2880 2048x5000x2048 16x2880x1440 1000x1000x1000 4096x720x2880 \
                 16384x640x3584 1024x2304x3584 1024x896x5120 128x4736x3584}
             fp8_miss=${FP8_MISS:-4096x53248x16384 4096x1152x3584 128x5120x2560 128x4608x7168 1024x4608x16384 \
                 1024x3584x896 1024x640x3584 1024x2880x720 1024x640x2880 1024x720x2880 1024x4608x7168 128x8192x3696 \
                 4096x64640x7168 16384x16384x26624 1024x2304x16384 1024x3584x1792 1024x3584x448 1024x3584x2368 \
                 1024x8192x14784 1024x8192x3696 1024x1280x2880 1024x1440x2880 16384x2880x720 16384x640x2880}
             for r in $(seq ${RUNS:-1}); do
               run gemm_wide_fp8_run$r.log timeout ${X_TIMEOUT:-300} python3 benchmarks/gemm.py --fp8 --configs \
                 default 'default, fast accum' 'default, two MMAs' 'default, fast accum, two MMAs' \
                 --shapes $fp8_miss --out "$OUT/wide_fp8_run$r"
               run gemm_wide_bf16_run$r.log timeout ${X_TIMEOUT:-200} python3 benchmarks/gemm.py --weights k-major \
                 --configs matmul 'matmul, two MMAs' --shapes $bf16_miss --out "$OUT/wide_bf16_run$r"
             done ;;
    remx)    # one GPU: tiles whose widths are sums of powers of two (one wide MMA: 224 = 128 + 96, 112 = 64 + 48), first
             # the rem tests, then FP8 against the defaults where N is a multiple of 112 or at the misses, cool, once
             gemm_gpu_tests pytest_remx.log "rem_cols or swap_rem or rem_widths"
             run gemm_remx_fp8.log timeout ${X_TIMEOUT:-300} python3 benchmarks/gemm.py --fp8 --configs default \
               'default, fast accum' 'wgmma fp8 128x128x128 s4 rem96 fast accum' \
               'wgmma fp8 128x64x128 s6 rem48 fast accum' 'wgmma fp8 128x64x128 s6 rem48' \
               'wgmma fp8 192x64x128 s5 rem48 fast accum' 'wgmma fp8 192x64x128 s5 rem48' \
               --shapes ${REMX_SHAPES:-1024x3584x448 1024x3584x896 1024x3584x1792 1024x3584x2368 1024x3584x4096 \
                 1024x3584x18944 1024x7168x2048 1024x7168x4096 1024x14336x4096 4096x3584x2368 1024x8192x3696 \
                 1024x1792x5120 4096x7168x2048 128x7168x4096} --out "$OUT/remx_fp8" ;;
    flips224) # one GPU: the FP8 fast picks that config.WGMMA_FP8_FAST_224_TILES moved (38 of the public set) against
             # their picks before, per-tensor scales, cool, RUNS times (2); first the rem tiles' GPU tests (one MMA)
             gemm_gpu_tests pytest_flips224.log "rem_cols_tiles_match_float64 and True"
             for r in $(seq 1 ${RUNS:-2}); do
               run gemm_flips224_run$r.log timeout ${X_TIMEOUT:-200} python3 benchmarks/gemm.py --fp8 --configs \
                 'default, fast accum' 'default, fast accum, no 224-wide tiles' --shapes \
                 1024x14336x4096 1024x7168x4096 1024x3584x4096 4096x3584x4096 128x28672x8192 1024x14336x8192 \
                 1024x7168x8192 128x53248x16384 128x26624x16384 1024x13312x16384 1024x3584x1792 1024x3584x9472 \
                 4096x3584x9472 1024x3584x896 1024x3584x4736 4096x3584x4736 1024x3584x448 1024x3584x2368 \
                 4096x3584x2368 1024x3584x5120 4096x3584x5120 1024x13824x5120 4096x1792x5120 1024x6912x5120 \
                 4096x896x5120 16384x896x5120 1024x3456x5120 4096x3456x5120 128x29568x8192 1024x29568x8192 \
                 1024x14784x8192 4096x14784x8192 1024x7392x8192 4096x7392x8192 1024x7168x9216 1024x7168x4608 \
                 1024x7168x2048 1024x7168x2304 \
                 --out "$OUT/flips224_run$r"
             done ;;
    fastx)   # one GPU: FP8 fast accumulation's lasting misses against other tiles (160, 192, 224 wide; 192 rows), cool,
             # once
             run gemm_fastx.log timeout ${X_TIMEOUT:-200} python3 benchmarks/gemm.py --fp8 --configs \
               'default, fast accum' 'wgmma fp8 128x128x128 s4 rem32 fast accum' \
               'wgmma fp8 128x128x128 s4 rem96 fast accum' 'wgmma fp8 192x128x128 s4 fast accum' \
               'wgmma fp8 128x128x128 s6 fast accum' 'wgmma fp8 128x128x128 s3 rem64 fast accum' \
               --shapes 16384x640x2880 16384x2880x720 1024x8192x3696 1024x1440x2880 1024x2880x720 1024x720x2880 \
               --out "$OUT/fastx" ;;
    rowwide) # one GPU: FP8 row-wise (and per-tensor) scales on the 128-row 128x128+16 picks, one MMA 144 wide against
             # two (wgmma.WIDE_MMA off), cool, RUNS times (2)
             for r in $(seq 1 ${RUNS:-2}); do
               run gemm_rowwide_run$r.log timeout ${X_TIMEOUT:-200} python3 benchmarks/gemm.py --fp8 --shapes \
                 128x18944x3584 128x19008x3584 128x38016x3584 128x76032x3584 128x19008x5120 128x38016x5120 \
                 128x76032x5120 128x19008x8192 128x38016x8192 128x76032x8192 128x18432x7168 128x53248x16384 \
                 --configs default 'default, two MMAs' --out "$OUT/rowwide_run$r"
             done ;;
    edgetests) # one GPU: the edge boxes moved inside (FUSED_OPS_EDGE_INSIDE, the default) against float64: the
             # defaults' picks at every shape class, padded views of unaligned width (TMA's 16-byte rule), FP8 at edges
             gemm_gpu_tests pytest_edge_inside.log "gpu_defaults_pick or padded_views or fp8_kernels_match" ;;
    edgefused) # one GPU: the all-reduce, all-scatter, reduce-scatter and all-gather push fused variants with the
             # tile loop's edge boxes inside (FUSED_OPS_EDGE_INSIDE 1, the default) and past the edge (0): their
             # edge-tile tests on ranks sharing the GPU (EF_TESTS=0 skips them), then world 1, graph-timed, at short,
             # wide GEMMs (edges in M) and one without edges; EF_OPS picks the ops
             ops=${EF_OPS:-gemm_all_reduce gemm_all_scatter gemm_reduce_scatter all_gather_gemm}
             [ "${EF_TESTS:-1}" = 1 ] && run pytest_edge_fused.log timeout ${TEST_TIMEOUT:-300} python3 -m pytest -q \
               tests/test_fused_ops.py -k "edge_tiles and ($(echo $ops | sed 's/ / or /g'))"
             for inside in 0 1; do
               for op in $ops; do
                 case $op in
                   gemm_all_reduce) vs="one_shot two_shot atomic wg_specialized torch_nccl" ;;
                   gemm_all_scatter) vs="fused_sequential wg_specialized torch_nccl" ;;
                   gemm_reduce_scatter) vs="fused wg_specialized torch_nccl" ;;
                   all_gather_gemm) vs="push torch_nccl" ;;
                 esac
                 run edgefused_${op}_$inside.log timeout ${SWEEP_TIMEOUT:-200} env FUSED_OPS_EDGE_INSIDE=$inside \
                   python3 -m taxonomy sweep -r 1 --ops $op --variants $vs --out "$OUT/edgefused_$inside" --iters 8 \
                   --shapes 129x4096x4096 200x4096x4096 257x4096x4096 300x5120x5120 1024x4096x4096 --warmup 2 \
                   --timing graph
               done
             done ;;
    fewrowspick) # one GPU: fused_ops.matmul's pick (the Gluon kernel's swapped or few-tile tiles at most of these)
             # against the tile loop with its edge boxes inside (`default`) at 129-255 rows: config.wgmma_few_tiles's
             # picks were timed while the tile loop still loaded past A's last row
             run gemm_fewrowspick.log timeout ${X_TIMEOUT:-400} python3 benchmarks/gemm.py --shapes 129x4096x4096 \
               160x4096x4096 200x4096x4096 255x4096x4096 129x14336x4096 200x14336x4096 129x5120x5120 \
               200x5120x5120 255x5120x5120 129x2880x2880 200x2880x2880 129x8192x8192 200x8192x8192 \
               255x8192x8192 160x28672x8192 200x1024x8192 129x4608x7168 --configs matmul default \
               --out "$OUT/fewrowspick" ;;
    remsplit) # one GPU: bf16 at 129-255 rows where config.wgmma_few_tiles keeps the swapped rem-row tiles (3-8 slices
             # of K, EDGE_REM_MIN_SPLIT) against the tile loop with its edge boxes inside (`default`)
             run gemm_remsplit.log timeout ${X_TIMEOUT:-300} python3 benchmarks/gemm.py --shapes 129x2816x4096 \
               129x1536x4096 150x2048x2048 144x2048x8192 129x2048x4096 160x2048x8192 140x1024x8192 129x2048x2048 \
               --configs matmul default --out "$OUT/remsplit" ;;
    fp8fewpick) # one GPU: FP8 (per-tensor, precise) at 129-255 rows, fused_ops.matmul's few-tile pick against the
             # tile loop with its edge boxes inside (`default`): the FP8 picks were timed before the boxes moved inside
             run gemm_fp8fewpick.log timeout ${X_TIMEOUT:-300} python3 benchmarks/gemm.py --fp8 --shapes \
               150x2048x2048 140x1024x8192 144x2048x8192 129x2048x4096 129x1536x4096 129x2048x2048 160x2048x8192 \
               129x4096x4096 160x4096x4096 200x4096x4096 255x4096x4096 150x4096x8192 --configs matmul default \
               --out "$OUT/fp8fewpick" ;;
    edgeinside) # one GPU: the tile loop's last row and column of tiles loaded past the operands' edge (0) and inside
             # (1: FUSED_OPS_EDGE_INSIDE), one process each; bf16 the catalog's tile loop (`default`) and
             # fused_ops.matmul, FP8 the tile loop; shapes with edge tiles in M, N or both, and one without
             for inside in 0 1; do
               run "gemm_edgeinside_bf16_$inside.log" timeout ${X_TIMEOUT:-200} env FUSED_OPS_EDGE_INSIDE=$inside \
                 python3 benchmarks/gemm.py --shapes 129x4096x4096 200x4096x4096 1000x1000x1000 1000x4096x4096 \
                 1024x1440x2880 2048x5000x2048 4096x720x2880 16384x640x3584 1024x4096x4096 \
                 --configs default matmul --out "$OUT/edgeinside_bf16_$inside"
               run "gemm_edgeinside_fp8_$inside.log" timeout ${X_TIMEOUT:-200} env FUSED_OPS_EDGE_INSIDE=$inside \
                 python3 benchmarks/gemm.py --fp8 --shapes 129x4096x4096 200x4096x4096 1000x1024x1024 \
                 128x8192x3696 1024x1440x2880 1024x4096x4096 --configs 'default, tile loop' \
                 'default, fast accum, tile loop' --out "$OUT/edgeinside_fp8_$inside"
             done ;;
    widex)   # one GPU: FP8 rem tiles (96, 144, 160 and 192 wide) now one MMA a k step, against the defaults, at the
             # lasting misses (as `wide`), precise and fast, per-tensor scales, cool, once
             fp8_miss=${FP8_MISS:-4096x53248x16384 4096x1152x3584 128x5120x2560 128x4608x7168 1024x4608x16384 \
                 1024x3584x896 1024x640x3584 1024x2880x720 1024x640x2880 1024x720x2880 1024x4608x7168 128x8192x3696 \
                 4096x64640x7168 16384x16384x26624 1024x2304x16384 1024x3584x1792 1024x3584x448 1024x3584x2368 \
                 1024x8192x14784 1024x8192x3696 1024x1280x2880 1024x1440x2880 16384x2880x720 16384x640x2880}
             run gemm_widex_fp8.log timeout ${X_TIMEOUT:-400} python3 benchmarks/gemm.py --fp8 --configs default \
               'default, fast accum' 'wgmma fp8 128x64x128 s6 rem32' 'wgmma fp8 128x128x128 s4 rem16' \
               'wgmma fp8 128x128x128 s4 rem32' 'wgmma fp8 128x128x128 s3 rem64' \
               'wgmma fp8 128x64x128 s6 rem32 fast accum' 'wgmma fp8 128x128x128 s4 rem16 fast accum' \
               'wgmma fp8 128x128x128 s4 rem32 fast accum' 'wgmma fp8 128x128x128 s3 rem64 fast accum' \
               --shapes $fp8_miss --out "$OUT/widex_fp8" ;;
    big128)  # one GPU (the H100 first): FP8 precise on large GEMMs, where the H100 runs the 192x128 default (three
             # consumers, each block's sum promoted) at 0.79-0.90x and the H200 at ~1.0x: 128x128 tiles in pairs and
             # per block against it, cool, twice
             for r in 1 2; do
               run gemm_big128_run$r.log timeout ${X_TIMEOUT:-200} python3 benchmarks/gemm.py --fp8 --shapes \
                 4096x64640x7168 4096x53248x16384 1024x53248x16384 4096x76032x8192 4096x32064x8192 16384x19008x5120 \
                 16384x16384x8192 4096x16384x26624 4096x8192x14784 16384x50272x2880 1024x19008x5120 --configs default \
                 'wgmma fp8 128x128x128 s6 pairs' 'wgmma fp8 128x128x128 s6' --out "$OUT/big128_run$r"
             done ;;
    flips12)  # one GPU: the FP8 precise picks that config.FP8_PAIRS_COST moved (128x128 tiles in pairs at 1024 rows, 17
             # GEMMs) against their picks before, cool, RUNS times (2); then the pairs tests
             for r in $(seq 1 ${RUNS:-2}); do
               run gemm_flips12_run$r.log timeout ${X_TIMEOUT:-150} python3 benchmarks/gemm.py --fp8 --shapes \
                 1024x53248x16384 1024x19008x5120 1024x13312x16384 1024x7168x4096 1024x7168x8192 1024x9216x16384 \
                 1024x9472x3584 1024x19008x3584 1024x13824x5120 1024x14784x8192 1024x7392x8192 1024x19008x8192 \
                 1024x7168x9216 1024x9216x7168 1024x7168x4608 1024x7168x2048 1024x7168x2304 \
                 --configs default 'default, no pairs cost' --out "$OUT/flips12_run$r"
             done ;;
    big160)  # one GPU (the H100 first): FP8 precise at the largest GEMMs, where the H100's 192x128 default reads
             # 0.81-0.85x (the H200's about 1.0x) and cuBLAS runs 128x160 / 144x128 tiles: the default against 128x160
             # and 128x144 tiles (each block's sum promoted), cool, twice
             for r in 1 2; do
               run gemm_big160_run$r.log timeout ${X_TIMEOUT:-200} python3 benchmarks/gemm.py --fp8 --shapes \
                 4096x64640x7168 4096x53248x16384 4096x76032x8192 4096x32064x8192 16384x19008x5120 16384x16384x8192 \
                 4096x16384x26624 16384x50272x2880 --configs default 'wgmma fp8 128x128x128 s4 rem32' \
                 'wgmma fp8 128x128x128 s4 rem16' --out "$OUT/big160_run$r"
             done ;;
    pairs144)  # one GPU: FP8 precise 144-wide tiles (128 + 16) promoted in pairs (wgmma.run(promote="pairs", rem=16),
             # new) against per block, at the public GEMMs whose pick they are (0.85-0.91x on both GPUs at 1024 rows),
             # cool and hot; first the pairs tests (the 144-wide cases among them)
             gemm_gpu_tests pytest_pairs144.log "pairs"
             HOT=0.7 cool_hot pairs144 --fp8 --shapes 1024x2304x16384 1024x2304x3584 1024x4608x7168 1024x2112x7168 \
               1024x4608x16384 1024x6912x5120 1024x4736x3584 128x76032x3584 128x76032x5120 128x76032x8192 \
               --configs default 'wgmma fp8 128x128x128 s4 rem16' 'wgmma fp8 128x128x128 s4 rem16 pairs' ;;
    rowsa)   # one GPU: FP8 A copied into aligned rows where its rows of K bytes are off 32 bytes (K = 3696;
             # local_gemm.FP8_COPY_A) against A as given, cool and hot; first the copies' GPU test
             run pytest_rowsa.log timeout ${TEST_TIMEOUT:-200} python3 -m pytest -v -p no:warnings tests/test_wgmma.py \
               -k "rows_off_32_bytes"
             HOT=0.7 cool_hot rowsa --fp8 --shapes 128x8192x3696 1024x8192x3696 4096x8192x3696 16384x8192x3696 \
               --configs default 'default, no A copy' 'default, fast accum' 'default, fast accum, no A copy' ;;
    rowsb)   # one GPU: 16-bit B copied into aligned rows where its rows are off 32 bytes (local_gemm.sector_copies,
             # COPY_16BIT_B) against B as given, K-major (the copy's) and row-major (as given since e7fd294; the
             # toggle then runs as "matmul"), cool and hot; first the copies' GPU tests
             run pytest_rowsb.log timeout ${TEST_TIMEOUT:-200} python3 -m pytest -v -p no:warnings tests/test_wgmma.py \
               -k "rows_off_32_bytes"
             HOT=0.7 cool_hot rowsb --shapes 4096x3000x4096 4096x1000x8192 --configs matmul 'matmul, B rows as given'
             HOT=0.7 cool_hot rowsbk --weights k-major --shapes 16384x2880x360 4096x4096x3000 \
               --configs matmul 'matmul, B rows as given' ;;
    arow)    # one GPU: 16-bit A whose rows are off 32 bytes (K = 360, 3000): 128x256 tiles against 192x128 ones and the
             # default (config.UNALIGNED_A_COST), and the two GEMMs whose pick it moved against their picks before
             HOT=0.7 cool_hot arow --shapes 16384x2880x360 8192x2880x360 4096x2880x360 1024x2880x360 4096x4096x3000 \
               --configs matmul 'wgmma 128x256x64 s3' 'wgmma 192x128x64 s4'
             HOT=0.7 cool_hot arowk --weights k-major --shapes 1024x2880x360 --configs matmul \
               'wgmma 128x128x64 s4 rem64' ;;
    widemma)  # one GPU: one 64x96 MMA a k16 step from inline PTX against Gluon's two (64 + 32 columns) in the same
             # small warp-specialized kernel: results against float64, then timed in turns (scripts/wide_mma_probe.py)
             run wide_mma.log timeout ${X_TIMEOUT:-300} python3 scripts/wide_mma_probe.py --out "$OUT/widemma" ;;
    pack)    # last stage: everything under $OUT in one archive (the device returns a limited number of files)
             tar -C "$OUT" -czf "/tmp/pack.tgz" . && rm -rf "${OUT:?}"/* && mv /tmp/pack.tgz "$OUT/pack.tgz" \
               && ls -la "$OUT" ;;
    *) echo "unknown stage $stage"; status=1 ;;
  esac
done
exit $status

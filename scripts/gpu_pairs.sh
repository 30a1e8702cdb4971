#!/usr/bin/env bash
# Two 2-GPU passes at once on a 4-GPU machine (GPUs 0,1 and GPUs 2,3; every pair of an H200 node is NV18): twice the
# work per device-minute. Each pair's logs, CSVs and plots end up in one archive, $OUT/pairs.tgz (a/ and b/).
# Usage (device machine): IRIS_COMMIT=<sha> bash scripts/gpu_pairs.sh "stages of pair a" "stages of pair b"
# (A_SWEEP_ARGS / B_SWEEP_ARGS give each pair its own sweep arguments, e.g. half of the ops each.)
set -uo pipefail
# CSVs record IRIS_COMMIT; git on the device copy can be stale (it once said e72067e for a tree at 5324bd4)
: "${IRIS_COMMIT:?set IRIS_COMMIT=<sha of the checkout being run>}"
OUT=${OUT:-out}; mkdir -p "$OUT"
CUDA_VISIBLE_DEVICES=0,1 OUT=$OUT/a SWEEP_ARGS=${A_SWEEP_ARGS:-${SWEEP_ARGS:-}} bash scripts/gpu_session.sh $1 \
  > "$OUT/a.log" 2>&1 &
pa=$!
CUDA_VISIBLE_DEVICES=2,3 OUT=$OUT/b SWEEP_ARGS=${B_SWEEP_ARGS:-${SWEEP_ARGS:-}} bash scripts/gpu_session.sh $2 \
  > "$OUT/b.log" 2>&1 &
pb=$!
wait $pa; ra=$?
wait $pb; rb=$?
echo "##### pair a (GPUs 0,1): $1"; cat "$OUT/a.log"
echo "##### pair b (GPUs 2,3): $2"; cat "$OUT/b.log"
tar -C "$OUT" -czf "$OUT/pairs.tgz" a b a.log b.log
exit $((ra | rb))

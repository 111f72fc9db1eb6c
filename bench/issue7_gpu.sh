#!/bin/sh
# issue7_gpu.sh: on the GPU machine, the quantized epilogues end to end.
#   bench/issue7_gpu.sh BUILD OUT tests
#     every GPU test (ctest -L gpu), test_gpu_quant's per-workload lines kept
#   bench/issue7_gpu.sh BUILD OUT bench BATCH DB TRIALS EARLY TUNE_SECONDS COMMIT
#     tune ResNet-50's int8-output variant (--out int8 --epilogue bias,qc) at
#     BATCH into DB (resumable), then the benchmark against cuDNN: the int32
#     column is served the tuned int8 variant's config (nearest, same shape)
set -u
B=$1 OUT=$2 WHAT=$3
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
case $WHAT in
tests)
  (cd "$B" && ctest -L gpu -E test_gpu_quant --output-on-failure --timeout 300) >"$OUT/gpu-tests.log" 2>&1
  echo "gpu tests exit $?"
  grep -E "tests passed|Passed|Failed|\*\*\*" "$OUT/gpu-tests.log" | tail -12
  (cd "$B" && ./test_gpu_quant) >"$OUT/gpu-quant.log" 2>&1
  echo "test_gpu_quant exit $?: $(grep -c ' exact ' "$OUT/gpu-quant.log") exact, $(grep -c ' WRONG ' "$OUT/gpu-quant.log") wrong"
  ;;
bench)
  BATCH=$4 DB=$5 TRIALS=$6 EARLY=$7 SECS=$8 COMMIT=$9
  tag=resnet50-b$BATCH
  if [ "$TRIALS" -gt 0 ]; then
    timeout -s TERM -k 30 "$SECS" "$B/convtune" tune --set resnet50 --batch "$BATCH" \
      --out int8 --epilogue bias,qc --trials "$TRIALS" --early-stopping "$EARLY" --db "$DB" -q \
      --json >"$OUT/tune-$tag.json" 2>"$OUT/tune-$tag.log"
    echo "tune $tag exit $?"
  fi
  CT_COMMIT=$COMMIT timeout 280 "$B/convtune" bench --set resnet50 --batch "$BATCH" --db "$DB" \
    --results-dir "$OUT" --csv "$OUT/$tag.csv" --plot "$OUT/$tag.png" >"$OUT/bench-$tag.md" \
    2>"$OUT/bench-$tag.log"
  echo "bench $tag exit $?"
  grep -E "sum" "$OUT/bench-$tag.md" | head -3
  tail -3 "$OUT/bench-$tag.log"
  ;;
esac

#!/bin/sh
# issue8_gpu.sh: on the GPU machine, the tensor-core templates end to end.
#   bench/issue8_gpu.sh BUILD OUT quick
#     random configs of every template against the CPU reference
#     (test_gpu_templates 10), the dispatch defaults on every set layer and
#     epilogue (test_gpu_quant), and two layers tuned briefly on mma
#   bench/issue8_gpu.sh BUILD OUT wgquick N
#     N random configs per layer of the wgmma templates against the CPU
#     reference, and three layers tuned briefly on wgmma and on mma
#   bench/issue8_gpu.sh BUILD OUT tests
#     every GPU test (ctest -L gpu) and test_gpu_quant's counts
#   bench/issue8_gpu.sh BUILD OUT tune SET BATCH DB TEMPLATE TRIALS EARLY SECS [FLAGS...]
#     tune SET at BATCH into DB with one template (FLAGS: more tune flags,
#     e.g. --out int8 --epilogue bias,qc); prints the wrong answers seen
#   bench/issue8_gpu.sh BUILD OUT bench SET BATCH DB COMMIT
#     the benchmark against cuDNN of what DB holds
# The device tool returns only a handful of files from $OUT: a caller that
# runs several steps should tar $OUT's files into one archive at the end.
set -u
B=$1 OUT=$2 WHAT=$3
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
case $WHAT in
quick)
  (cd "$B" && ./test_gpu_templates 10) >"$OUT/gpu-templates.log" 2>&1
  echo "test_gpu_templates exit $?"
  grep -E "exact over|FAIL" "$OUT/gpu-templates.log" | head -20
  (cd "$B" && ./test_gpu_quant) >"$OUT/gpu-quant.log" 2>&1
  echo "test_gpu_quant exit $?: $(grep -c ' exact ' "$OUT/gpu-quant.log") exact, $(grep -c ' WRONG ' "$OUT/gpu-quant.log") wrong"
  grep -E "WRONG|FAIL|error" "$OUT/gpu-quant.log" | head -5
  for L in conv2d-nchw4c-i8.i8.i32-n16-c512-k512-7x7-r3x3-s1x1-p1x1.1x1-d1x1 \
    conv2d-nchw4c-i8.i8.i32-n16-c64-k256-56x56-r1x1-s1x1-p0x0.0x0-d1x1; do
    timeout 150 "$B/convtune" tune "$L" --template conv2d_nchw4c_mma --trials 64 --db "$OUT/quick.db" -q --json \
      >"$OUT/quick-tune.json" 2>"$OUT/quick-tune.log"
    echo "tune exit $?"; grep -o '"best_us":[0-9.]*\|"best_tops":[0-9.]*\|"by_outcome":{[^}]*}' "$OUT/quick-tune.json" | head -3
    tail -2 "$OUT/quick-tune.log"
  done
  ;;
wgquick)
  (cd "$B" && CK_RUN_CASE=wgmma ./test_gpu_templates "$4") >"$OUT/gpu-wgmma.log" 2>&1
  echo "test_gpu_templates (wgmma) exit $?"
  grep -E "exact over|FAIL|Checks" "$OUT/gpu-wgmma.log" | head -24
  for L in conv2d-nchw4c-i8.i8.i32-n16-c512-k512-7x7-r3x3-s1x1-p1x1.1x1-d1x1 \
    conv2d-nchw4c-i8.i8.i32-n16-c128-k128-28x28-r3x3-s1x1-p1x1.1x1-d1x1 \
    conv2d-nchw4c-i8.i8.i32-n16-c64-k256-56x56-r1x1-s1x1-p0x0.0x0-d1x1; do
    for T in conv2d_nchw4c_wgmma conv2d_nchw4c_mma; do
      timeout 100 "$B/convtune" tune "$L" --template $T --trials 60 --db "$OUT/wgquick.db" -q --json \
        >"$OUT/wgquick-tune.json" 2>"$OUT/wgquick-tune.log"
      echo "$T $L exit $?: $(grep -o '"best_us":[0-9.]*\|"by_outcome":{[^}]*}' "$OUT/wgquick-tune.json" | tr '\n' ' ')"
      tail -1 "$OUT/wgquick-tune.log"
    done
  done
  ;;
tests)
  (cd "$B" && ctest -L gpu -E test_gpu_quant --output-on-failure --timeout 600) >"$OUT/gpu-tests.log" 2>&1
  echo "gpu tests exit $?"
  grep -E "tests passed|Passed|Failed|\*\*\*|exact over" "$OUT/gpu-tests.log" | tail -14
  (cd "$B" && ./test_gpu_quant) >"$OUT/gpu-quant.log" 2>&1
  echo "test_gpu_quant exit $?: $(grep -c ' exact ' "$OUT/gpu-quant.log") exact, $(grep -c ' WRONG ' "$OUT/gpu-quant.log") wrong"
  ;;
tune)
  SET=$4 BATCH=$5 DB=$6 TPL=$7 TRIALS=$8 EARLY=$9 SECS=${10}
  shift 10
  tag=$SET-b$BATCH-$TPL$(echo "$*" | tr -c 'a-z0-9' '_')
  timeout -s TERM -k 30 "$SECS" "$B/convtune" tune --set "$SET" --batch "$BATCH" "$@" \
    --template "$TPL" --trials "$TRIALS" --early-stopping "$EARLY" --db "$DB" -q \
    --json >"$OUT/tune-$tag.json" 2>"$OUT/tune-$tag.log"
  echo "tune $tag exit $?: $(grep -c '"best_us"' "$OUT/tune-$tag.json") workloads," \
    "$(grep -o '"WRONG_ANSWER":[[:space:]]*[0-9]*' "$OUT/tune-$tag.json" | awk -F: '{s+=$2} END {print s+0}') wrong answers"
  ;;
bench)
  SET=$4 BATCH=$5 DB=$6 COMMIT=$7
  tag=$SET-b$BATCH
  CT_COMMIT=$COMMIT timeout 290 "$B/convtune" bench --set "$SET" --batch "$BATCH" --db "$DB" \
    --results-dir "$OUT" --csv "$OUT/$tag.csv" --plot "$OUT/$tag.png" >"$OUT/bench-$tag.md" \
    2>"$OUT/bench-$tag.log"
  echo "bench $tag exit $?"
  grep -E "^\| \*\*sum" "$OUT/bench-$tag.md" | head -2
  tail -2 "$OUT/bench-$tag.log"
  ;;
esac

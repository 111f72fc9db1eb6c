#!/bin/sh
# issue6_gpu.sh: tune a set at a batch (resumable) and benchmark it against
# cuDNN, on the GPU machine.
#   bench/issue6_gpu.sh BUILD OUT SET BATCH DB TRIALS EARLY TUNE_SECONDS
# TRIALS 0 skips tuning (the database is already tuned).
set -u
B=$1 OUT=$2 SET=$3 BATCH=$4 DB=$5 TRIALS=$6 EARLY=$7 SECS=$8
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
tag=$SET-b$BATCH
if [ "$TRIALS" -gt 0 ]; then
  timeout -s TERM -k 30 "$SECS" "$B/convtune" tune --set "$SET" --batch "$BATCH" \
    --trials "$TRIALS" --early-stopping "$EARLY" --db "$DB" -q --json >"$OUT/tune-$tag.json" \
    2>"$OUT/tune-$tag.log"
  echo "tune $tag exit $?"
fi
timeout 280 "$B/convtune" bench --set "$SET" --batch "$BATCH" --db "$DB" --results-dir "$OUT" \
  --csv "$OUT/$tag.csv" --plot "$OUT/$tag.png" >"$OUT/bench-$tag.md" 2>"$OUT/bench-$tag.log"
echo "bench $tag exit $?"
tail -5 "$OUT/bench-$tag.log"

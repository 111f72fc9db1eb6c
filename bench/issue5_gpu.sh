#!/bin/sh
# issue5_gpu.sh: the dispatch library's GPU checks and measurements, plus the
# GPU tests of the earlier parts, in one call on the GPU machine.
#   bench/issue5_gpu.sh BUILD OUT
set -u
B=$1
OUT=$2
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for t in test_gpu_kernel test_runner test_tune_gpu; do
  echo "== $t"; timeout 300 "$B/$t" >"$OUT/$t.log" 2>&1; echo "rc=$?"; tail -3 "$OUT/$t.log"
done
echo "== test_gpu_templates"; timeout 300 "$B/test_gpu_templates" 12 >"$OUT/test_gpu_templates.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/test_gpu_templates.log"
echo "== tune resnet50 b1 (records and cubins of this template version)"
timeout 300 "$B/convtune" tune --set resnet50 --batch 1 --trials 192 --early-stopping 96 \
  --db "$OUT/r50.db" >"$OUT/tune.txt" 2>"$OUT/tune.log"; echo "rc=$?"; tail -2 "$OUT/tune.log"
echo "== dispatch, batch 1 (tuned: exact records; 3D: defaults)"
CT_DISPATCH_DB=$OUT/r50.db timeout 300 "$B/test_gpu_dispatch" >"$OUT/dispatch_b1.log" 2>&1
echo "rc=$?"; grep -c exact "$OUT/dispatch_b1.log"; tail -2 "$OUT/dispatch_b1.log"
echo "== dispatch, batch 2 (nearest: batch-1 configs carried over)"
CT_DISPATCH_DB=$OUT/r50.db CT_DISPATCH_BATCH=2 timeout 300 "$B/test_gpu_dispatch" \
  >"$OUT/dispatch_b2.log" 2>&1
echo "rc=$?"; tail -2 "$OUT/dispatch_b2.log"
echo "== example against the installed package"
LD_LIBRARY_PATH=$B/prefix/lib:$LD_LIBRARY_PATH timeout 200 "$B/examples/resnet50" "$OUT/r50.db" 1 \
  >"$OUT/example.log" 2>&1; echo "rc=$?"; tail -3 "$OUT/example.log"
echo "== dispatch_bench"
timeout 120 "$B/dispatch_bench" "$OUT/r50.db" resnet50 1 "$OUT/dispatch_bench.json" \
  >"$OUT/dispatch_bench.md" 2>&1; echo "rc=$?"; tail -40 "$OUT/dispatch_bench.md"

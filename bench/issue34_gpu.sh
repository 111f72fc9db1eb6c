#!/bin/bash
# issue34_gpu.sh PHASE: issue 34 on the GPU machine, from the repository root, with the
# commit before the issue's change built as .gpu-bin/base/convtune (its commit in
# .gpu-bin/base/COMMIT) and the change in build-rel (build-rel/COMMIT). Results in $OUT.
#   base|new   tune ResNet-50 b16 nhwc (h200-final's recipe, seed 1) into /tmp/PHASE.db, bench it
#   tests      the GPU suites of build-rel (ctest -L gpu)
#   templates  test_gpu_templates alone
#   rest       tune new again, bench both databases back to back, then 7 cases of
#              test_gpu_templates in parallel
#   shards     test_gpu_templates' nhwc8, pingpong and stem8 in thirds (CT_GT_SHAPES), in parallel
#   ab         tune base, new, base, new (the tuning rate, interleaved)
set -u
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
export CT_SOURCE_DIR=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
bin() { [ $1 = base ] && echo .gpu-bin/base/convtune || echo build-rel/convtune; }
jflag() { [ $1 = base ] && echo --json || echo --json-out; }
bench() { # tag run
  CT_COMMIT=$([ $1 = base ] && cat .gpu-bin/base/COMMIT || cat build-rel/COMMIT) $(bin $1) bench --set resnet50 --batch 16 --layout nhwc --db /tmp/$1.db --results-dir /tmp/res-$1-$2 \
    $(jflag $1) $OUT/bench-$1-$2.json > $OUT/bench-$1-$2.md 2> $OUT/bench-$1-$2.err
  python3 - $OUT/bench-$1-$2.json $1 $2 <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); L = d["layers"]
ct = sum(l["convtune_us"] for l in L); fp = sum(l["cudnn_fp16_us"] for l in L if l["cudnn_fp16_us"])
print("%s bench %s: commit %s, convtune sum %.1f us, cuDNN fp16 sum %.1f us, ratio %.4f, exact %d/%d" % (
  sys.argv[2], sys.argv[3], d.get("commit"), ct, fp, ct / fp, sum("exact" in (l.get("source") or "") for l in L), len(L)))
PY
}
tune() {
  rm -f /tmp/$1.db*
  s=$(date +%s)
  $(bin $1) tune --set resnet50 --batch 16 --layout nhwc --trials 150 --early-stopping 40 --time-budget 15 \
    --seed 1 --db /tmp/$1.db -q --json > $OUT/tune-$1.json 2> $OUT/tune-$1.err
  echo "$1 tune rc=$? $(( $(date +%s) - s )) s"; tail -3 $OUT/tune-$1.err
  python3 - $OUT/tune-$1.json $1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = sum(x["trials"] for x in d); w = sum(x["wall_s"] for x in d); b = sum(x["best_us"] for x in d)
print("%s tune: %d workloads, %d trials in %.1f s of tuning, %.1f trials/s, sum of bests %.2f us" % (sys.argv[2], len(d), n, w, n / w, b))
PY
}
case $1 in
base|new) tune $1; bench $1 1 ;;
tests)
  ( cd build-rel && ctest -L gpu --output-on-failure --timeout 500 ) > $OUT/gpu-tests.log 2>&1
  echo "gpu tests rc=$?"; grep -E "Test +#|tests passed|SKIP" $OUT/gpu-tests.log | tail -14
  ;;
templates)
  ( cd build-rel && timeout 580 ./test_gpu_templates ) > $OUT/gpu-templates.log 2>&1
  echo "test_gpu_templates rc=$?"; grep -E "Test +#|tests passed|SKIP|Checks" $OUT/gpu-templates.log | tail -8 ;;
shards)
  s=$(date +%s)
  for c in nhwc8 pingpong stem8; do for r in 0 1 2; do
    ( cd build-rel && CK_RUN_CASE=$c CT_GT_SHAPES=$r/3 timeout 400 ./test_gpu_templates > $OUT/gt-$c-$r.log 2>&1; echo "rc=$?" >> $OUT/gt-$c-$r.log ) &
  done; done
  wait
  echo "shards in parallel: $(( $(date +%s) - s )) s"
  for f in $OUT/gt-*.log; do echo "== $(basename $f): $(grep -E 'Checks|rc=' $f | tr '\n' ' ')"; grep -E "exact|SKIP" $f | cut -c1-120; done
  cd $OUT && tar czf shards.tgz gt-*.log && rm gt-*.log ;;
ab)
  for r in 1 2; do for v in base new; do tune $v; done; done ;;
rest)
  [ -f /tmp/base.db ] || cp .gpu-bin/base.db /tmp/base.db; tune new; bench base 2; bench new 2
  s=$(date +%s)
  for c in nhwc nhwc8 pingpong stem stem8 onnx onnx_stem; do
    ( cd build-rel && CK_RUN_CASE=$c timeout 420 ./test_gpu_templates > $OUT/gt-$c.log 2>&1; echo "rc=$?" >> $OUT/gt-$c.log ) &
  done
  wait
  echo "cases in parallel: $(( $(date +%s) - s )) s"
  for c in nhwc nhwc8 pingpong stem stem8 onnx onnx_stem; do echo "== $c: $(grep -E 'Checks|rc=' $OUT/gt-$c.log | tr '\n' ' ')"; grep -E "exact|SKIP" $OUT/gt-$c.log | cut -c1-110; done
  cd $OUT && tar czf rest.tgz --exclude=rest.tgz . && find . -type f ! -name rest.tgz -delete ;;
esac
cp /tmp/$1.db $OUT/ 2>/dev/null; true

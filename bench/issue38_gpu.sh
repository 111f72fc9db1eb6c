#!/bin/bash
# issue38_gpu.sh PHASE...: issue 38 (tuning on every GPU of a host) on a multi-GPU
# machine, from the repository root, with build-rel built here and carried (its commit in
# build-rel/COMMIT). Results in $OUT.
#   tests         test_pool, test_builder and test_tune_gpu (its pool case takes up to 4 GPUs)
#   scale T G...  the ResNet-50 set at batch 16 in nhwc (int32 output), T trials a task,
#                 tuned with --devices 0..G-1 for each G, each into a fresh database:
#                 $OUT/scale-gG.json (the command's --json) and .err (its progress and
#                 the last line's trials/s); then a table: GPUs, trials, seconds, trials/s,
#                 speed-up over the first G, the set's tuned sum and its change
#   pytest37      issue 37's package tests with this machine's PyTorch (its GPU case)
# Phases run in order: e.g. `tests scale 128 1 2 4`.
set -u
export LD_LIBRARY_PATH=$PWD/build-rel:$PWD/.gpu-libs:/usr/local/cuda/lib64
export CT_SOURCE_DIR=$PWD CT_COMMIT=$(cat build-rel/COMMIT)
for l in libconvtune.so libconvtune.so.0; do
  [ -e build-rel/$l ] || ln -sf libconvtune.so.0.1.0 build-rel/$l
done
B=build-rel/convtune
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
echo "cores: $(nproc); commit $CT_COMMIT"
s=$(date +%s)
while [ $# -gt 0 ]; do
  case $1 in
  tests)
    shift
    for t in test_pool test_builder test_tune_gpu; do
      (cd build-rel && timeout 400 ./$t > $OUT/$t.log 2>&1)
      echo "$t: rc=$? at $(( $(date +%s) - s )) s: $(grep -E '^[0-9]+%|pool:' $OUT/$t.log | tr '\n' ' ')"
    done ;;
  scale)
    trials=$2; shift 2
    gs=""
    while [ $# -gt 0 ] && [ "$1" -eq "$1" ] 2>/dev/null; do gs="$gs $1"; shift; done
    for g in $gs; do
      devs=$(seq -s, 0 $((g - 1)))
      rm -f /tmp/scale-g$g.db*
      timeout 560 $B tune --set resnet50 --batch 16 --layout nhwc --trials $trials --devices $devs \
        --db /tmp/scale-g$g.db --json > $OUT/scale-g$g.json 2> $OUT/scale-g$g.err
      echo "g=$g: rc=$? at $(( $(date +%s) - s )) s: $(grep '^\[tune\] [0-9]* GPUs:' $OUT/scale-g$g.err)"
    done
    python3 - $OUT $gs <<'PY'
import json, re, sys
out, gs = sys.argv[1], sys.argv[2:]
rows, base = [], None
for g in gs:
    try:
        res = json.load(open(f"{out}/scale-g{g}.json"))
    except Exception as e:
        print(f"g={g}: no results ({e})"); continue
    line = [l for l in open(f"{out}/scale-g{g}.err") if re.match(r"\[tune\] \d+ GPUs:", l)]
    m = re.search(r"(\d+) trials in ([\d.]+) s, ([\d.]+) trials/s", line[-1]) if line else None
    total = sum(r["best_us"] for r in res)
    trials, secs, rate = (int(m[1]), float(m[2]), float(m[3])) if m else (0, 0.0, 0.0)
    if base is None: base = (rate, total)
    rows.append(dict(gpus=int(g), trials=trials, seconds=secs, trials_per_s=rate,
                     speedup=rate / base[0] if base[0] else 0, set_sum_us=total,
                     sum_change=total / base[1] - 1 if base[1] else 0, workloads=len(res)))
json.dump(rows, open(f"{out}/scale.json", "w"), indent=1)
print("| GPUs | trials | s | trials/s | speed-up | set sum (us) | vs first |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    print(f"| {r['gpus']} | {r['trials']} | {r['seconds']:.1f} | {r['trials_per_s']:.1f} | "
          f"{r['speedup']:.2f}x | {r['set_sum_us']:.2f} | {r['sum_change']:+.1%} |")
PY
    ;;
  pytest37)
    shift
    export CONVTUNE_LIBRARY=$PWD/build-rel/libconvtune.so CONVTUNE_CLI=$PWD/build-rel/convtune
    PYTHONPATH=$PWD/python python3 -m pytest -q -rs -p no:cacheprovider python/tests > $OUT/pytest37.log 2>&1
    echo "pytest37: rc=$?: $(tail -1 $OUT/pytest37.log)" ;;
  *) echo "unknown phase $1"; exit 2 ;;
  esac
done

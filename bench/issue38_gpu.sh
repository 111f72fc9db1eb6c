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
#   smoke         before the long phases: 2 ranks, 2 workloads of ResNet-50 at 8 trials a
#                 task, with a 60 s limit; says whether --mpi runs at all here (libmpi,
#                 mpirun, the binding) and how fast a rank goes
#   mpiscale T G...  the same with `mpirun --enable-recovery -n G convtune tune --mpi`, one
#                 rank per GPU (each rank its local rank's GPU): $OUT/mpi-gG.json / .err and
#                 the table, against the first G
#   kill T        4 ranks as mpiscale (T trials a task, --rank-timeout 15); rank 2 killed
#                 with SIGKILL once the run is under way: the run must complete, rank 0
#                 naming the lost rank, with every task tuned; then the database's integrity
#                 check, its trials (uids distinct) against those the run reports, and a
#                 second run of the same command, which resumes (no new trial of a task
#                 that reached its budget)
#   capacity N    what rank 0 sustains: N records (build-rel/test_mpi --write) sent by each of
#                 1 and then 3 ranks in batches of 64 (the tuner's batch) through the records
#                 protocol into rank 0's database: records/s per sender
#   pytest37      issue 37's package tests with this machine's PyTorch (its GPU case)
# Phases run in order: e.g. `tests scale 128 1 2 4`.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$PWD/build-rel:$PWD/.gpu-libs:/usr/local/cuda/lib64
export CT_SOURCE_DIR=$PWD CT_COMMIT=$(cat build-rel/COMMIT)
for l in libconvtune.so libconvtune.so.0; do
  [ -e build-rel/$l ] || ln -sf libconvtune.so.0.1.0 build-rel/$l
done
B=build-rel/convtune
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
echo "cores: $(nproc); commit $CT_COMMIT"
s=$(date +%s)
# table PREFIX G...: the runs' table from $OUT/PREFIX-gG.json and .err (the summary line's
# trials, seconds and trials/s; the set's tuned sum), into $OUT/PREFIX.json
table() {
  python3 - $OUT "$@" <<'PY'
import json, re, sys
out, prefix, gs = sys.argv[1], sys.argv[2], sys.argv[3:]
rows, base = [], None
for g in gs:
    try:
        res = json.load(open(f"{out}/{prefix}-g{g}.json"))
    except Exception as e:
        print(f"{prefix} g={g}: no results ({e})"); continue
    line = [l for l in open(f"{out}/{prefix}-g{g}.err") if re.match(r"\[tune\] \d+ (GPUs|ranks)", l)]
    m = re.search(r"(\d+) trials in ([\d.]+) s, ([\d.]+) trials/s", line[-1]) if line else None
    total = sum(r["best_us"] for r in res)
    trials, secs, rate = (int(m[1]), float(m[2]), float(m[3])) if m else (0, 0.0, 0.0)
    if base is None: base = (rate, total)
    rows.append(dict(gpus=int(g), trials=trials, seconds=secs, trials_per_s=rate,
                     speedup=rate / base[0] if base[0] else 0, set_sum_us=total,
                     sum_change=total / base[1] - 1 if base[1] else 0, workloads=len(res)))
json.dump(rows, open(f"{out}/{prefix}.json", "w"), indent=1)
print(f"{prefix}:")
print("| GPUs | trials | s | trials/s | speed-up | set sum (us) | vs first |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    print(f"| {r['gpus']} | {r['trials']} | {r['seconds']:.1f} | {r['trials_per_s']:.1f} | "
          f"{r['speedup']:.2f}x | {r['set_sum_us']:.2f} | {r['sum_change']:+.1%} |")
PY
}
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
    table scale $gs ;;
  smoke)
    shift
    rm -f /tmp/smoke.db*
    timeout 60 mpirun --bind-to none --enable-recovery -n 2 -x LD_LIBRARY_PATH $B tune --mpi \
      '[{"op":"conv2d","n":16,"c":64,"k":64,"h":56,"w":56,"kernel":3,"pad":1,"layout":"nhwc"},
        {"op":"conv2d","n":16,"c":256,"k":64,"h":56,"w":56,"kernel":1,"layout":"nhwc"}]' \
      --trials 8 --db /tmp/smoke.db --json > $OUT/smoke.json 2> $OUT/smoke.err
    echo "smoke: rc=$? at $(( $(date +%s) - s )) s: $(grep '^\[tune\] [0-9]* ranks\|warning\|convtune' $OUT/smoke.err | tr '\n' ' ')" ;;
  mpiscale)
    trials=$2; shift 2
    gs=""
    while [ $# -gt 0 ] && [ "$1" -eq "$1" ] 2>/dev/null; do gs="$gs $1"; shift; done
    for g in $gs; do
      rm -f /tmp/mpi-g$g.db*
      timeout 560 mpirun --bind-to none --enable-recovery -n $g -x LD_LIBRARY_PATH $B tune --mpi --set resnet50 \
        --batch 16 --layout nhwc --trials $trials --db /tmp/mpi-g$g.db --json \
        > $OUT/mpi-g$g.json 2> $OUT/mpi-g$g.err
      echo "mpi g=$g: rc=$? at $(( $(date +%s) - s )) s: $(grep '^\[tune\] [0-9]* ranks' $OUT/mpi-g$g.err)"
    done
    table mpi $gs ;;
  kill)
    trials=$2; shift 2
    rm -f /tmp/kill.db*
    timeout 400 mpirun --bind-to none --enable-recovery -n 4 -x LD_LIBRARY_PATH $B tune --mpi --set resnet50 \
      --batch 16 --layout nhwc --trials $trials --rank-timeout 15 --db /tmp/kill.db --json \
      > $OUT/kill.json 2> $OUT/kill.err &
    mp=$!
    victim=""
    for i in $(seq 1 100); do
      sleep 0.2
      for p in $(pgrep -f "convtune tune --mpi"); do
        grep -qz '^OMPI_COMM_WORLD_RANK=2$' /proc/$p/environ 2>/dev/null && victim=$p
      done
      [ -n "$victim" ] && break
    done
    sleep 6
    echo "kill: rank 2 is pid ${victim:-none}; SIGKILL at $(( $(date +%s) - s )) s"
    [ -n "$victim" ] && kill -9 $victim
    wait $mp
    echo "kill: mpirun rc=$? at $(( $(date +%s) - s )) s: $(grep '^\[tune\] [0-9]* ranks' $OUT/kill.err)"
    python3 - $OUT <<'PY'
import json, sqlite3, sys
out = sys.argv[1]
res = json.load(open(f"{out}/kill.json"))
db = sqlite3.connect("/tmp/kill.db")
integrity = db.execute("pragma integrity_check").fetchone()[0]
n, uids = db.execute("select count(*), count(distinct uid) from trials").fetchone()
reported = sum(r["trials"] for r in res)
print(f"kill: {len(res)} workloads reported, {reported} trials in their best tasks; database: "
      f"{n} trials, {uids} distinct uids, integrity {integrity}")
json.dump(dict(workloads=len(res), integrity=integrity, trials=n, uids=uids),
          open(f"{out}/kill-check.json", "w"))
PY
    timeout 300 mpirun --bind-to none --enable-recovery -n 4 -x LD_LIBRARY_PATH $B tune --mpi --set resnet50 \
      --batch 16 --layout nhwc --trials $trials --db /tmp/kill.db --json \
      > $OUT/kill-rerun.json 2> $OUT/kill-rerun.err
    echo "kill: rerun rc=$? at $(( $(date +%s) - s )) s: $(grep '^\[tune\] [0-9]* ranks' $OUT/kill-rerun.err)" ;;
  capacity)
    n=$2; shift 2
    build-rel/test_mpi --write /tmp/cap.jsonl $n
    for r in 2 4; do
      rm -f /tmp/cap.db*
      timeout 300 mpirun -n $r -x LD_LIBRARY_PATH build-rel/test_mpi /tmp/cap.db /tmp/cap.jsonl 64 \
        > $OUT/capacity-n$r.log 2>&1
      echo "capacity, $((r - 1)) sender(s): rc=$?: $(grep 'records/s\|each in' $OUT/capacity-n$r.log | tr '\n' ' ')"
    done ;;
  pytest37)
    shift
    export CONVTUNE_LIBRARY=$PWD/build-rel/libconvtune.so CONVTUNE_CLI=$PWD/build-rel/convtune
    PYTHONPATH=$PWD/python python3 -m pytest -q -rs -p no:cacheprovider python/tests > $OUT/pytest37.log 2>&1
    echo "pytest37: rc=$?: $(tail -1 $OUT/pytest37.log)" ;;
  *) echo "unknown phase $1"; exit 2 ;;
  esac
done

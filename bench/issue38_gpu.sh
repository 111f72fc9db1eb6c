#!/bin/bash
# issue38_gpu.sh PHASE...: issue 38 (tuning on every GPU of a host) on a multi-GPU
# machine, from the repository root, with build-rel built here and carried (its commit:
# `build-rel/convtune -V`). Results in $OUT.
#   tests         test_pool, test_builder and test_tune_gpu (its pool case takes up to 4 GPUs)
#   warm T        a throwaway run of T trials a task on every GPU, first. Before 4272337 it
#                 filled the driver's compute cache that later runs, with the same seed, hit
#                 (the "first long run compiles twice as slowly"); runs now get a fresh
#                 cache and the builder none, so it warms only the page cache and the GPUs
#   scale T G...  the ResNet-50 set at batch 16 in nhwc (int32 output), T trials a task,
#                 tuned with --devices 0..G-1 for each G, each into a fresh database:
#                 $OUT/scale-gG.json (the command's --json) and .err (its progress and
#                 the last line's trials/s; $TUNE_ARGS, e.g. "--builders 96", go to the command);
#                 then a table: GPUs, trials, seconds, trials/s,
#                 speed-up over the first G, the set's tuned sum and its change. Runs with -v,
#                 standard error stamped (bench/stamp.py); $PREFIX (default scale) names the files
#   smoke         before the long phases: 2 ranks, 2 workloads of ResNet-50 at 8 trials a
#                 task, with a 60 s limit; says whether --mpi runs at all here (libmpi,
#                 mpirun, the binding) and how fast a rank goes
#   mpiscale T G...  the same with `mpirun --enable-recovery -n G convtune tune --mpi`, one
#                 rank per GPU (each rank its local rank's GPU): $OUT/mpi-gG.json / .err and
#                 the table, against the first G. $MPI_ARGS (e.g. "--builders 32") go to
#                 every rank, and $PREFIX (default mpi) names the files
#   kill T        4 ranks as mpiscale (T trials a task, --rank-timeout 15); rank 2 killed
#                 with SIGKILL once the database holds 6 T trials (bench/mpi_kill.py): the
#                 run must complete, rank 0 naming the lost rank, with every task tuned (a
#                 task short of T trials as short in mpiscale's 4-rank run, when there was one);
#                 nothing committed at the kill lost; the integrity check passes
#   interrupt T   4 ranks as kill, with mpirun's odls_base_sigkill_timeout at 10 s (by
#                 default mpirun kills the ranks 1 s after signalling them), mpirun sent
#                 SIGINT (Ctrl-C) once the database holds 6 T trials: every rank must stop
#                 after its batch in flight, rank 0 reporting, nothing committed lost
#   capacity N    what rank 0 sustains: N records (build-rel/test_mpi --write) sent by each of
#                 1 and then 3 ranks in batches of 64 (the tuner's batch) through the records
#                 protocol into rank 0's database: records/s per sender
#   pytest37      issue 37's package tests with this machine's PyTorch (its GPU case)
#   compile       what NVRTC costs a fresh process (build-rel/nvrtc_probe): 1, 16 and all cores'
#                 processes starting at once, each compiling one config twice, with the GPUs
#                 visible to the CUDA driver that NVRTC starts for its compute cache (visible),
#                 hidden (CUDA_VISIBLE_DEVICES empty: the driver starts, finds none, and NVRTC
#                 goes without its cache), or with --no-cache (nocache: the driver never loads;
#                 the builder's workers compile so); then all cores' processes compiling
#                 ResNet-50's configs (one per template and layer, a seed each) into a fresh
#                 cache (cold), the same again (warm), hidden and nocache: per variant the
#                 compiles' mean wall and CPU time. $FIRST and $SETS choose the variants
#                 (default "visible hidden nocache" and "cold warm hidden nocache")
#   malloc R      what glibc's allocator settings change in NVRTC's compiles (the builder's
#                 workers run them, --no-cache): all cores' processes compiling ResNet-50's
#                 configs (as compile's sets, seed = process number) R rounds, then one
#                 process one round, the variants interleaved: plain; trim (GLIBC_TUNABLES: trim and
#                 mmap thresholds at their maximum, so a compile's memory is never given back
#                 and faulted in again); huge (the same and glibc.malloc.hugetlb=1: the heap
#                 madvised for transparent huge pages). Prints the host's THP mode first
# After each run of scale and mpiscale: its CPU time (user, system) next to its wall time,
# and bench/tune_timeline.py over its database ($OUT/PREFIX-gG-timeline.json): per GPU,
# its tasks' start gaps and spans, and the compilers' average load.
# Phases run in order: e.g. `tests scale 128 1 2 4`. $TLIM: a run's time limit in tests, scale and
# mpiscale (560 s). $BIN: the convtune binary to run (build-rel/convtune). Every run of scale,
# mpiscale, kill and interrupt gets its own fresh CUDA_CACHE_PATH: a compiler that starts the
# driver (convtune before 2026-11-27) would otherwise find the configs an earlier run compiled,
# with the same seed, in the driver's compute cache, which a user's first run does not.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$PWD/build-rel:$PWD/.gpu-libs:/usr/local/cuda/lib64
# the commit: CT_COMMIT when set, else the one the binary names (`-V`: build-rel/COMMIT, written
# by hand, went stale when HEAD moved without it)
export CT_SOURCE_DIR=$PWD
export CT_COMMIT=${CT_COMMIT:-$(build-rel/convtune -V 2>/dev/null | awk '$1 == "commit" {print $2}')}
for l in libconvtune.so libconvtune.so.0; do
  [ -e build-rel/$l ] || ln -sf libconvtune.so.0.1.0 build-rel/$l
done
B=${BIN:-build-rel/convtune}
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
echo "cores: $(nproc); commit $CT_COMMIT; binary $B"
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
    line = [l for l in open(f"{out}/{prefix}-g{g}.err") if re.search(r"\[tune\] \d+ (GPUs|ranks)", l)]
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
# timeline NAME DB: bench/tune_timeline.py's summary, indented, and its rows in
# $OUT/NAME-timeline.json
timeline() {
  local e=""
  [ -e $OUT/$1.err ] && e="--err $OUT/$1.err"
  python3 bench/tune_timeline.py $2 $OUT/$1-timeline.json $e 2>&1 | sed 's/^/    /'
}
TIMEFORMAT='    wall %R s, user %U s, system %S s'
# fresh_cache NAME: an empty CUDA_CACHE_PATH for one run
fresh_cache() {
  export CUDA_CACHE_PATH=/tmp/cudacache-$1
  rm -rf $CUDA_CACHE_PATH
}
# probes N ENV... -- ARGS: N nvrtc_probe processes at once, each with ENV and ARGS, "{}" in
# ARGS replaced by its index (1..N); their JSON lines on stdout
probes() {
  local n=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  seq $n | xargs -P $n -I{} env "${envs[@]}" build-rel/nvrtc_probe "$@"
}
# variant_env V: the one environment setting of compile's variant V
variant_env() {
  case $1 in
  hidden) echo CUDA_VISIBLE_DEVICES= ;;
  nocache) echo NVRTC_PROBE_NO_CACHE=1 ;;
  *) echo CT_PROBE_VARIANT=$1 ;;
  esac
}
# probe_summary first|set FILE [T0]: one line over the probes' JSON lines in FILE (T0: when
# the set's probes started, for their wall time)
probe_summary() {
  python3 - "$@" <<'PY'
import json, statistics, sys, time
kind, path = sys.argv[1], sys.argv[2]
r = [json.loads(l) for l in open(path)]
med = lambda k: statistics.median(x[k] for x in r)
if kind == "first":
    print(f"{len(r)} processes: first compile {med('first_ms'):.0f} ms "
          f"(max {max(x['first_ms'] for x in r):.0f}), second {med('second_ms'):.0f} ms, "
          f"CPU {med('cpu_s'):.2f} s, GPU files open {max(x['gpu_files'] for x in r)}")
else:
    n = sum(x["compiles"] for x in r)
    print(f"{len(r)} processes, {n} compiles in {time.time() - float(sys.argv[3]):.1f} s: "
          f"{sum(x['sum_ms'] for x in r) / n:.0f} ms a compile, CPU "
          f"{sum(x['cpu_s'] for x in r) / (n + len(r)) * 1e3:.0f} ms a compile; "
          f"first compiles {med('first_ms'):.0f} ms")
PY
}
while [ $# -gt 0 ]; do
  case $1 in
  tests)
    shift
    for t in test_pool test_builder test_tune_gpu; do
      (cd build-rel && timeout ${TLIM:-400} ./$t > $OUT/$t.log 2>&1)
      echo "$t: rc=$? at $(( $(date +%s) - s )) s: $(grep -E '^[0-9]+%|pool:' $OUT/$t.log | tr '\n' ' ')"
    done ;;
  scale)
    trials=$2; shift 2
    gs=""
    while [ $# -gt 0 ] && [ "$1" -eq "$1" ] 2>/dev/null; do gs="$gs $1"; shift; done
    pf=${PREFIX:-scale}
    for g in $gs; do
      devs=$(seq -s, 0 $((g - 1)))
      rm -f /tmp/$pf-g$g.db*
      fresh_cache $pf-g$g
      time timeout ${TLIM:-560} python3 bench/stamp.py $OUT/$pf-g$g.err -- $B tune -v --set resnet50 \
        --batch 16 --layout nhwc --trials $trials --devices $devs ${TUNE_ARGS:-} \
        --db /tmp/$pf-g$g.db --json > $OUT/$pf-g$g.json
      echo "$pf g=$g: rc=$? at $(( $(date +%s) - s )) s: $(grep -o '\[tune\] [0-9]* GPUs:.*' $OUT/$pf-g$g.err)"
      timeline $pf-g$g /tmp/$pf-g$g.db
    done
    table $pf $gs ;;
  warm)
    # a throwaway run on every GPU (see the header: it once filled the driver's compute cache)
    trials=$2; shift 2
    rm -f /tmp/warm.db*
    n=$(nvidia-smi -L | wc -l)
    timeout ${TLIM:-560} $B tune -q --set resnet50 --batch 16 --layout nhwc --trials $trials \
      --devices all --db /tmp/warm.db > /dev/null 2>&1
    echo "warm: rc=$? at $(( $(date +%s) - s )) s on $n GPUs" ;;
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
    pf=${PREFIX:-mpi}
    for g in $gs; do
      rm -f /tmp/$pf-g$g.db*
      fresh_cache $pf-g$g
      time timeout ${TLIM:-560} python3 bench/stamp.py $OUT/$pf-g$g.err -- mpirun --bind-to none \
        --enable-recovery -n $g -x LD_LIBRARY_PATH -x CUDA_CACHE_PATH $B tune -v --mpi --set resnet50 \
        --batch 16 --layout nhwc --trials $trials ${MPI_ARGS:-} --db /tmp/$pf-g$g.db --json \
        > $OUT/$pf-g$g.json
      echo "$pf g=$g: rc=$? at $(( $(date +%s) - s )) s: $(grep -o '\[tune\] [0-9]* ranks.*' $OUT/$pf-g$g.err)"
      timeline $pf-g$g /tmp/$pf-g$g.db
    done
    table $pf $gs ;;
  kill)
    trials=$2; shift 2
    rm -f /tmp/kill.db*
    fresh_cache kill
    ref=""
    [ -e /tmp/mpi-g4.db ] && ref="--ref /tmp/mpi-g4.db"
    timeout 400 python3 bench/mpi_kill.py $OUT /tmp/kill.db 2 $((trials * 6)) $ref -- \
      mpirun --bind-to none --enable-recovery -n 4 -x LD_LIBRARY_PATH -x CUDA_CACHE_PATH $B tune \
      --mpi --set resnet50 --batch 16 --layout nhwc --trials $trials --rank-timeout 15 --db /tmp/kill.db --json
    echo "kill: rc=$? at $(( $(date +%s) - s )) s"
    timeline kill /tmp/kill.db ;;
  interrupt)
    trials=$2; shift 2
    rm -f /tmp/int.db*
    fresh_cache int
    timeout 300 python3 bench/mpi_kill.py $OUT /tmp/int.db int $((trials * 6)) -- \
      mpirun --bind-to none --enable-recovery --mca odls_base_sigkill_timeout 10 -n 4 \
      -x LD_LIBRARY_PATH -x CUDA_CACHE_PATH $B tune --mpi --set resnet50 --batch 16 --layout nhwc \
      --trials $trials --db /tmp/int.db --json
    echo "interrupt: rc=$? at $(( $(date +%s) - s )) s" ;;
  capacity)
    n=$2; shift 2
    build-rel/test_mpi --write /tmp/cap.jsonl $n
    for r in 2 4; do
      rm -f /tmp/cap.db*
      timeout 300 mpirun -n $r -x LD_LIBRARY_PATH build-rel/test_mpi /tmp/cap.db /tmp/cap.jsonl 64 \
        > $OUT/capacity-n$r.log 2>&1
      echo "capacity, $((r - 1)) sender(s): rc=$?: $(grep 'records/s\|each in' $OUT/capacity-n$r.log | tr '\n' ' ')"
    done ;;
  compile)
    shift
    n=$(nproc)
    for p in 1 16 $n; do
      for v in ${FIRST:-visible hidden nocache}; do
        hide=$(variant_env $v)
        rm -rf /tmp/cudacache-first
        probes $p $hide CUDA_CACHE_PATH=/tmp/cudacache-first -- first > $OUT/first-$v-p$p.jsonl
        echo "first p=$p $v: rc=$? $(probe_summary first $OUT/first-$v-p$p.jsonl)"
      done
    done
    rm -rf /tmp/cudacache-set
    for v in ${SETS:-cold warm hidden nocache}; do
      hide=$(variant_env $v)
      t0=$(date +%s.%N)
      probes $n $hide CUDA_CACHE_PATH=/tmp/cudacache-set -- set resnet50 1 {} > $OUT/set-$v.jsonl
      echo "set $v: rc=$? $(probe_summary set $OUT/set-$v.jsonl $t0)"
    done ;;
  malloc)
    shift
    rounds=$1; shift
    echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled) defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag)"
    trim=glibc.malloc.trim_threshold=4294967295:glibc.malloc.mmap_threshold=33554432
    for p in $(nproc) 1; do
      rr=$rounds
      [ "$p" = 1 ] && rr=1
      for r in $(seq $rr); do
        for v in plain trim huge; do
          case $v in
          plain) tun=X= ;;
          trim) tun=GLIBC_TUNABLES=$trim ;;
          huge) tun=GLIBC_TUNABLES=$trim:glibc.malloc.hugetlb=1 ;;
          esac
          t0=$(date +%s.%N)
          probes $p NVRTC_PROBE_NO_CACHE=1 $tun -- set resnet50 1 {} > $OUT/malloc-$v-p$p-r$r.jsonl
          echo "malloc p=$p $v round $r: rc=$? $(probe_summary set $OUT/malloc-$v-p$p-r$r.jsonl $t0)"
        done
      done
    done ;;
  pytest37)
    shift
    export CONVTUNE_LIBRARY=$PWD/build-rel/libconvtune.so CONVTUNE_CLI=$PWD/build-rel/convtune
    PYTHONPATH=$PWD/python python3 -m pytest -q -rs -p no:cacheprovider python/tests > $OUT/pytest37.log 2>&1
    echo "pytest37: rc=$?: $(tail -1 $OUT/pytest37.log)" ;;
  *) echo "unknown phase $1"; exit 2 ;;
  esac
done

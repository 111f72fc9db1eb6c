#!/bin/bash
# Issue 33 on the GPU machine: `bash bench/issue33_sanitize.sh BIN_DIR` from the
# repository root (BIN_DIR: test_gpu_templates, test_gpu_dispatch, test_gpu_quant).
# memcheck and racecheck: one random valid config per workload (onnx: two), a
# seed per tool, of all 12 templates on every workload of test_gpu_templates'
# cases (int32, 8-bit, ping-pong, onnx; odd sizes, stride 2, partial tiles,
# 1x1, 7x7, 3D, wide layers), cut into jobs of 17-40 configs (CT_GT_SHAPES);
# memcheck also on test_gpu_dispatch (every ResNet-50 / ResNet3D-18 layer, pack
# kernels, graphs), test_gpu_quant on ESPCN (depth_to_space) and case ref (the
# runner's GPU reference). Then synccheck and initcheck on halves. Not run under
# a tool: test_runner, test_tune_gpu, test_sched_gpu (planted faults, see
# summary.md). SAN_JOBS (10) jobs at a time, each under `timeout`
# (SAN_JOB_CAP_S, 360); none starts after SAN_BUDGET_S (540); SAN_TOOLS,
# SAN_CONFIGS (1) narrow or widen; SAN_SEED_ADD moves the seeds. Writes $OUT/summary.md (per tool and case:
# kernels launched, configs, errors, wall) and $OUT/sanitize-logs.tgz, and
# prints a short table last.
# SAN_CS names another compute-sanitizer, SAN_LIB_DIR a folder searched first
# for libraries (another NVRTC): compute-sanitizer before 2025.4 takes
# cp.async.mbarrier.arrive(.noinc) for a plain arrive, and full accuracy
# needs kernels compiled by NVRTC 13.1 or later (its release notes); both
# versions go into the summary's header.
set -u
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
  echo "usage: bash bench/issue33_sanitize.sh BIN_DIR" >&2
  exit 2
fi
B=$(cd "$1" && pwd)
OUT=${OUT:-/tmp/issue33-sanitize}
BUDGET=${SAN_BUDGET_S:-540}
SLOTS=${SAN_JOBS:-10}
CAP=${SAN_JOB_CAP_S:-360}
TOOLS=${SAN_TOOLS:-memcheck racecheck synccheck initcheck}
CONFIGS=${SAN_CONFIGS:-1}
T0=$(date +%s)
# the logs stay out of $OUT (the device returns at most 8 files): one archive
L=$(mktemp -d /tmp/issue33-sanitize.XXXXXX)/logs
mkdir -p "$L" "$OUT"
export LD_LIBRARY_PATH=${SAN_LIB_DIR:+$SAN_LIB_DIR:}$PWD/.gpu-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export CT_SOURCE_DIR=$PWD
CS=${SAN_CS:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
if [ ! -x "$CS" ]; then
  echo "issue33_sanitize: no compute-sanitizer on PATH or at $CS: nothing ran" | tee "$OUT/summary.md"
  exit 1
fi
# the commit the binaries were built at: CT_COMMIT, else BIN_DIR/COMMIT
COMMIT=${CT_COMMIT:-$(cat "$B/COMMIT" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}

# What this compute-sanitizer takes: an option it lacks is left out, so that
# an older or newer one still runs (the header of summary.md lists them).
"$CS" --version > "$L/cs-version.txt" 2>&1 || echo "compute-sanitizer not found at $CS" >> "$L/cs-version.txt"
"$CS" --help > "$L/cs-help.txt" 2>&1
has() { grep -q -- "$1" "$L/cs-help.txt"; }
# --padding 512: an access a little past one allocation lands in padding,
# not in the next allocation (which memcheck would take as valid).
COMMON="--error-exitcode 86 --launch-timeout 180 --print-limit 200 --show-backtrace device"
has --target-processes && COMMON="$COMMON --target-processes application-only"
opts() {
  case $1 in
  memcheck) has --padding && echo --padding 512 ;;
  racecheck)
    echo --racecheck-report analysis --racecheck-detect-level warn
    has --racecheck-num-workers && echo --racecheck-num-workers 2 ;;
  esac
}
{
  echo "commit=$COMMIT"
  echo "bin_dir=$B"
  echo "start=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "sanitizer=$CS"
  # the NVRTC the tests load (the same search path as theirs)
  echo "nvrtc=$(python3 -c 'import ctypes; l = ctypes.CDLL("libnvrtc.so.13"); a, b = ctypes.c_int(), ctypes.c_int(); l.nvrtcVersion(ctypes.byref(a), ctypes.byref(b)); print("%d.%d" % (a.value, b.value))' 2>&1 | tail -1)"
  printf 'budget_s=%s\nslots=%s\ncap_s=%s\ntools=%s\n' "$BUDGET" "$SLOTS" "$CAP" "$TOOLS"
  echo "common=$COMMON"
  for t in memcheck racecheck synccheck initcheck; do echo "opts_$t=$(opts $t | tr '\n' ' ')"; done
  echo "gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
  nproc | sed 's/^/cores=/'
} > "$L/run.env"

# The jobs, one a line: tool|name|binary|environment|arguments. In order of
# need (memcheck and racecheck of every template first), the longest first
# within that, so that the slots end together.
# SAN_SEED_ADD (0) moves every seed: other configs on the same workloads
seed_of() {
  local b
  case $1 in memcheck) b=331 ;; racecheck) b=332 ;; synccheck) b=333 ;; *) b=334 ;; esac
  echo $((b + ${SAN_SEED_ADD:-0}))
}
want() { case " $TOOLS " in *" $1 "*) return 0 ;; esac; return 1; }
tg() { # tool case R/M: a test_gpu_templates job, SAN_CONFIGS (1) configs per workload
  echo "$1|$2-$3|test_gpu_templates|CK_RUN_CASE=$2 CT_GT_SHAPES=$3 CT_GT_SEED=$(seed_of "$1") CT_GT_TRACE=1|$CONFIGS"
}
jobs_list() {
  want memcheck && echo "memcheck|dispatch|test_gpu_dispatch||"
  for part in onnx:0/4 onnx:1/4 onnx:2/4 onnx:3/4 onnx_stem:0/2 onnx_stem:1/2 \
    gpu_templates:0/2 gpu_templates:1/2 nhwc:0/2 nhwc:1/2 pingpong:0/2 pingpong:1/2 \
    stem:0/1 stem8:0/1 wgmma:0/1 nhwc8:0/1; do
    for t in memcheck racecheck; do want $t && tg $t "${part%%:*}" "${part#*:}"; done
  done
  want memcheck && echo "memcheck|quant-espcn|test_gpu_quant|CT_QUANT_SETS=espcn|"
  want racecheck && echo "racecheck|quant-espcn|test_gpu_quant|CT_QUANT_SETS=espcn|"
  want memcheck && echo "memcheck|ref-0/1|test_gpu_templates|CT_GT_REF=1 CK_RUN_CASE=ref CT_GT_TRACE=1|"
  # synccheck and initcheck: complementary halves of the workloads
  for t in synccheck initcheck; do
    want $t || continue
    r=0; [ $t = initcheck ] && r=1
    for c in onnx onnx_stem gpu_templates nhwc pingpong stem stem8 wgmma nhwc8; do
      m=2; [ $c = onnx ] && m=4
      tg $t $c $r/$m
    done
  done
  want initcheck && echo "initcheck|ref-0/1|test_gpu_templates|CT_GT_REF=1 CK_RUN_CASE=ref CT_GT_TRACE=1|"
  want synccheck && echo "synccheck|quant-espcn|test_gpu_quant|CT_QUANT_SETS=espcn|"
  want initcheck && echo "initcheck|quant-espcn|test_gpu_quant|CT_QUANT_SETS=espcn|"
  want initcheck && echo "initcheck|dispatch|test_gpu_dispatch||"
}

# One job: its log (the test's output with the tool's report between its
# lines) and a meta file the summary reads. The exit status tells: 0 clean,
# 86 errors found (--error-exitcode), 124 or 137 the timeout, else the test
# failed or the tool could not run it.
run_job() {
  local id=$1 tool=$2 name=$3 bin=$4 envs=$5 args=$6 limit=$7
  local log=$L/$id-$tool-${name//\//of}.log s e rc
  s=$(date +%s%N)
  # shellcheck disable=SC2086,SC2046 # envs, args and the options are word lists
  env $envs timeout -k 20 "$limit" "$CS" --tool "$tool" $COMMON $(opts "$tool") \
    --port $((20000 + 16 * id)) "$B/$bin" $args > "$log" 2>&1
  rc=$?
  e=$(date +%s%N)
  printf 'id=%s\ntool=%s\nname=%s\nbinary=%s\nenv=%s\nargs=%s\nlimit_s=%s\nstart_s=%s\nrc=%s\nwall_ms=%s\nlog=%s\n' \
    "$id" "$tool" "$name" "$bin" "$envs" "$args" "$limit" "$((s / 1000000000 - T0))" "$rc" \
    "$(((e - s) / 1000000))" "$(basename "$log")" > "$L/$id.meta"
}

not_run() { # id tool name bin envs args why
  printf 'id=%s\ntool=%s\nname=%s\nbinary=%s\nenv=%s\nargs=%s\nnot_run=%s\n' "$@" > "$L/$1.meta"
}

jobs_list > "$L/jobs.txt"
echo "issue33_sanitize: $(wc -l < "$L/jobs.txt") jobs, $SLOTS at a time, budget ${BUDGET}s; $(head -1 "$L/cs-version.txt")"
running=0 id=0
while IFS='|' read -r tool name bin envs args; do
  id=$((id + 1))
  if [ ! -x "$B/$bin" ]; then
    not_run $id "$tool" "$name" "$bin" "$envs" "$args" "binary missing: $B/$bin"
    continue
  fi
  while [ $running -ge "$SLOTS" ]; do
    wait -n
    running=$((running - 1))
  done
  left=$((BUDGET - ($(date +%s) - T0)))
  if [ $left -lt 45 ]; then
    not_run $id "$tool" "$name" "$bin" "$envs" "$args" "budget: ${left}s left of ${BUDGET}s"
    continue
  fi
  limit=$CAP
  [ $((left - 5)) -lt "$limit" ] && limit=$((left - 5))
  echo "[$(($(date +%s) - T0))s] start $id $tool $name (limit ${limit}s)"
  run_job $id "$tool" "$name" "$bin" "$envs" "$args" "$limit" < /dev/null &
  running=$((running + 1))
done < "$L/jobs.txt"
wait
echo "[$(($(date +%s) - T0))s] all jobs ended"

python3 "$(dirname "$0")/issue33_sanitize_summary.py" "$L" "$OUT/summary.md"
tar czf "$OUT/sanitize-logs.tgz" -C "$(dirname "$L")" logs
echo "wall $(($(date +%s) - T0)) s; summary: $OUT/summary.md, logs: $OUT/sanitize-logs.tgz"

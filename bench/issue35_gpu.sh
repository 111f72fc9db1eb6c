#!/bin/bash
# issue35_gpu.sh PHASE: issue 35 (grouped and depthwise convolution) on the GPU machine, from the
# repository root, with build-rel built here and carried (its commit: `build-rel/convtune -V`) and the
# MobileNetV2 QDQ model in models/ (scripts/models/grouped_models.py). Results in $OUT.
#   tests   the GPU suites that issue 35 touches, in parallel: test_runner (the grouped GPU
#           reference), test_gpu_templates' grouped, grouped8, grouped_onnx, nhwc and onnx_stem
#           cases, test_gpu_dispatch's grouped case at batch 1, 3 and 32 (every layer of the four
#           sets and the odd layer, plain and channels-last, int32 and int8) and its layers case
#   tune    the depthwise template's GPU cases, then tuning into /tmp/t.db (from .gpu-bin/t.db,
#           the first tuning call's database: ResNeXt and MobileNetV2's dense layers): the
#           depthwise layers of the sets at batch 32 in nhwc with int8 output (the benchmark's
#           int8 column: bias, per-channel scales), CSN whole, the model's depthwise layers at
#           batch 32 and the whole model at batch 1
#   bench   the four sets at batch 32 (nhwc / ndhwc) and the model at batch 32 and 1 (bench
#           --model), each against cuDNN in the same run; then test_gpu_dispatch's grouped case
#           on the tuned database at batch 1, 3 and 32
#   model   tuning of the MobileNetV2 model's depthwise layers (batch 32 and 1) on
#           conv2d_nhwc_dw_mma into /tmp/t.db
#   dwmma   the depthwise mma templates' GPU cases (int32, 8-bit, onnx), then tuning of the
#           depthwise layers of the three depthwise sets at batch 32 on them (int8 output, bias,
#           per-channel scales) into /tmp/t.db
#   dwtune  dwmma's tuning alone; gtune gmma's
#   gdense  tuning of the dense layers of 8, 16 or 32 input channels (MobileNetV2's set and model,
#           batch 32 and 1) on conv2d_nhwc_grouped_mma into /tmp/t.db
#   san     compute-sanitizer's four tools over configs of the depthwise and grouped mma
#           families
#   gmma    the grouped and depthwise mma templates' GPU cases (int32, 8-bit, onnx; their kernel
#           is one), then tuning of ResNeXt's grouped layers, 2D and 3D, at batch 32 (int8 output,
#           bias, per-channel scales) into /tmp/t.db: the 2D ones on conv2d_nhwc_grouped_mma (the
#           other templates' records stand), the 3D set on every template
#   dp4a    the depthwise CUDA-core templates (conv2d_nhwc_dw, conv3d_ndhwc_dw; mac 1 is dp4a over
#           a kernel row's taps) alone: their GPU cases (16 configs a workload, every launch
#           traced, so the mac 1 ones are counted), then the depthwise layers of the three
#           depthwise sets at batch 32 tuned on them into /tmp/t.db (int8 output, bias,
#           per-channel scales), each layer's best config listed. DW_NO_GT=1: the tuning
#           alone; DW_TRIALS, DW_ES, DW_TB: trials, early stopping, seconds a layer (80, 32, 5)
#   smallpw MobileNetV2's 1x1 nodes at 14x14 and 7x7 (batch 32, ONNX rounding, the model's
#           keys) tuned on conv2d_nhwc_wgmma and conv2d_nhwc_pw_mma (96 trials each) into
#           /tmp/t.db, each best listed; then prof of each wgmma best
#   dwsets  the three depthwise sets' bench at batch 32 (nhwc / ndhwc) against cuDNN
#   dwsan   compute-sanitizer over the depthwise CUDA-core templates' mac 1 (memcheck and
#           initcheck; racecheck and synccheck where the window is staged): direct and staged
#           windows, uint8 with a data zero point and a residual, 5x5 stride 2, 3D, 7 rows a thread
#   streams [S...]  batch 32 as S chains of 32/S images at once (bench --model --streams S; S
#           default 2): test_gpu_model_bench first (its streams case; at most 90 s; STREAMS_TEST=0:
#           not), then the model tuned STREAMS_TB s (default 150) at batch 32 and at each 32/S
#           into /tmp/t.db, then bench --model at batch 32 and at each 32/S with --streams S; a
#           table of each way against cuDNN fp16's, one chain of 32 and S chains of 32/S; every
#           file in $OUT/streams.tgz
#   dwmodel [B]  the MobileNetV2 model at batch B (default 32) tuned (150 s; batch 1: 60 s; every
#           template) into /tmp/t.db, then bench --model against cuDNN; the depthwise nodes' sums
#   dwcheck test_gpu_dispatch's grouped case on /tmp/t.db at batch 1, 3 and 32 (every layer of
#           the four sets and the odd layer, as the tuned database serves them), the three in
#           parallel, each within DWCHECK_S seconds (default 250)
#   prof T K C  ncu (--set full, clocks left alone) of template T's config C (JSON) on workload
#           key K, one launch by build-rel/config_run: the throughputs, occupancy, instructions
#           and each stall reason's share; then its timing (400 launches in a graph). Repeatable.
#   pw      the pointwise mma templates (conv2d_nhwc_pw_mma, conv3d_ndhwc_pw_mma): test_gpu_templates'
#           pointwise case (int32, the four 8-bit kinds, onnx rounding; PW_CONFIGS a workload,
#           default 12), both templates in parallel; then compute-sanitizer's memcheck,
#           racecheck and synccheck over three configs (C 24 with a residual, uint8 with a data
#           zero point and 8-byte pieces, 3D int32 with stride 2 and the weights from shared
#           memory)
#   pwset   the MobileNetV2 set's dense pointwise layers at batch 32 tuned on conv2d_nhwc_pw_mma
#           (int8 output, bias, per-channel scales) into /tmp/t.db, each layer's best listed
#   pwdw    the fused pointwise + depthwise template (conv2d_nhwc_pwdw): its GPU case, compute-
#           sanitizer over two configs, then MobileNetV2's blocks at batch 32 tuned fused and as
#           their two convs apart, the bests side by side
#   savedb  /tmp/t.db as $OUT/t.db.xz; pass it back as .gpu-bin/t.db.xz (or t.db)
#   fusechain [B] [S] [F]  MobileNetV2 at batch B tuned apart (S s) and fused (F s more), then bench
#           --model --in-chain both ways, the fused pairs' in-chain times beside the two convs'
#   autofuse [B] [S] [F]  MobileNetV2 at batch B tuned apart (S s, default 150; 0: none), then
#           with --fuse (each pair fused and apart, F s more, default 90), then bench --model
#           --in-chain apart, --fuse (fused where the records predict a gain) and --fuse=all
#           (AF_MODES picks), each against cuDNN in its run
#   quicksuite  every GPU test at small counts (test_gpu_templates' cases at QS_N configs a
#           workload, default 3; the other GPU suites whole; test_cli's GPU part), in parallel
#   mtune [B] [S]  the MobileNetV2 model at batch B (default 32) tuned S seconds (default 150;
#           every template) into /tmp/t.db
#   inchain [B]  bench --model MobileNetV2 at batch B (default 32) on /tmp/t.db with --in-chain
#           (each node timed inside the chain, cut by cut), once per binary in $BINS (default
#           build-rel/convtune; NAME=PATH labels one, NAME=PATH:DB runs it on DB instead of
#           /tmp/t.db, and a name starting nopdl runs with
#           CTX_NO_PDL=1, nopdl-K1+K2 with CTX_NO_PDL=K1+K2, which a scratch binary built with
#           that switch reads: no PDL at all, or for the kernels named); each node alone and in
#           the chain side by side
#   stem    the wgmma stems' out_stage (8-bit output staged by warp, whole rows stored) and
#           block_n 32: test_gpu_templates' stem8 and onnx_stem cases on them (8 configs a
#           workload); MobileNetV2's stem (b32) timed alone at its earlier best config with
#           each of out_stage 0 / 1 and block_n 64 / 32 (config_run, 400 launches in a graph);
#           ResNet-50's stem (onnx rounding) at batch 16 and 256 tuned on the stem template
#           (96 trials) into /tmp/stem.db and MobileNetV2's (every template) into /tmp/t.db;
#           the best of each (out_stage, block_n) per workload
#   stemsan compute-sanitizer (memcheck, racecheck, synccheck) over the stems' out_stage: MobileNetV2's
#           stem at block_n 32 and ResNet-50's at 64 with a residual (batch 2)
#   abchain M B S  this binary against $BASE (default .gpu-exp/convtune-base: one built without
#           a change) on the same configs, in a chain: model M (mobilenetv2, or an ONNX path) at
#           batch B tuned S seconds by this binary into a fresh ab-new.db; a copy
#           re-measured by $BASE with --trials 1 (each task's first trial is its best config under
#           this binary's template versions, which $BASE sees as retired); then bench --model
#           --in-chain of each binary on its database, and the nodes side by side. The
#           databases in $ABTMP (default /tmp): one directory each for abchains run at once.
#           ABFUSE="MODE ..." (none, auto, all): both tunings with --fuse (each expand +
#           depthwise pair fused and apart), then the benches once per mode (--fuse=MODE; none:
#           every conv apart)
#   chainprof [B] [M]  ncu over the first pass of bench --model M (default MobileNetV2) at batch
#           B (default 32) on /tmp/t.db: the chain's kernels one by one in graph order, caches left
#           as the kernel before left them (--cache-control none, clocks alone): each node's
#           duration and DRAM bytes read and written against its own tensors' bytes (does a node
#           pay for the write-back of earlier nodes' outputs?), and its warps' "no instruction"
#           stalls per issue (cold code: bench/results/h200-issue35/icache-probe)
#   arena M B [DB]  bench --model of model M (mobilenetv2, or an ONNX path) at batch B on DB
#           (default /tmp/t.db) twice: each node's output in its own buffer, then --arena (the
#           tensors in reused buffers, every side); the chains side by side
#   restrict B PAT KNOB=V [PAT KNOB=V ...]  does a config that loses alone win in the chain? /tmp/t.db
#           (MobileNetV2 tuned at batch B, e.g. by mtune) copied to /tmp/r.db; there, every trial
#           of a workload whose key matches the regex PAT whose config lacks KNOB=V (a knob's
#           JSON value, or template=NAME) is deleted, so that its best is the best measured
#           config with KNOB=V (a key with none such keeps all; restrict-keys-bB.txt says
#           what each kept); then inchain on t.db, r.db, t.db, r.db (e.g. restrict 32
#           'k144-56x56-r3x3.*g144' staging=1: the window staged in shared memory, less L2
#           traffic)
#   ranks B R [R ...]  does the alone ranking hold in the chain? /tmp/t.db (MobileNetV2 tuned at
#           batch B) copied to /tmp/rank-R.db for each R, where every workload keeps only its R-th
#           best measured config (distinct configs, any template; a workload with fewer keeps
#           its last); then inchain on t.db, each rank-R.db, t.db; each node's in-chain time at
#           every rank, and the chain that would take each node's best in-chain rank
#   values [B] [S]  does tuning on the model's own epilogue values (tune --model since the
#           twentieth session) change the chain? MobileNetV2 at batch B (default 32) tuned S s
#           (default 150) by $BASE (default .gpu-exp/convtune-base: random values) into
#           /tmp/v-rand.db and by this binary into /tmp/v-model.db, in the order $VORDER
#           (default "rand model"); then bench --model on each database by this binary,
#           $VROUNDS times (default 2), alternating, with $VBENCH's options (e.g. --in-chain);
#           the chains and the nodes alone side by side
# Phases run in one call share /tmp/t.db: e.g. dwmma, model, bench, savedb.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
# the commit: CT_COMMIT when set, else the one the binary names (`-V`: build-rel/COMMIT, written
# by hand, went stale when HEAD moved without it)
export CT_SOURCE_DIR=$PWD
export CT_COMMIT=${CT_COMMIT:-$(build-rel/convtune -V 2>/dev/null | awk '$1 == "commit" {print $2}')}
B=${CT_BIN:-build-rel/convtune}
SETS2="mobilenetv2 efficientnet_b0_dw resnext50_g"
SETS="$SETS2 csn_dw3d resnext3d_g"
MODEL=models/mobilenetv2_qdq.onnx
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
[ -f /tmp/t.db ] || { [ -f .gpu-bin/t.db ] && cp .gpu-bin/t.db /tmp/t.db; }
[ -f /tmp/t.db ] || { [ -f .gpu-bin/t.db.xz ] && xz -dc .gpu-bin/t.db.xz > /tmp/t.db; }
# tune NAME ARGS...: one tuning into /tmp/t.db, its JSON and log in $OUT (a phase sets s, its start)
tq() {
  local n=$1; shift
  timeout ${TQ_LIMIT:-200} $B tune "$@" --seed 1 --db /tmp/t.db -q --json > $OUT/tune-$n.json 2> $OUT/tune-$n.err
  echo "tune $n rc=$? at $(( $(date +%s) - s )) s $(tail -1 $OUT/tune-$n.err)"
}
# csan TEMPLATE KEY CONFIG TOOL...: compute-sanitizer's tools, one after another, over one launch
# of the config (build-rel/config_run); each tool's summary and exit status
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
csan() {
  local t=$1 k=$2 c=$3; shift 3
  for tool in "$@"; do
    out=$($CS --tool $tool --error-exitcode 9 build-rel/config_run $t $k "$c" 2>&1); rc=$?
    echo "$tool $t $k $c: $(echo "$out" | grep -E "SUMMARY|config_run" | tr '\n' ' ') rc=$rc"
  done
}
# a summary of a set's results JSON: the sums and the per-layer ratios the issue judges
summary() { # json
  python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); L = d["layers"]
def s(f): return sum(l[f] for l in L if l.get(f))
# a layer's convtune columns are timed only after their check passed; a wrong one is a note
ok = sum(bool(l.get("convtune_i8_us")) and not (l.get("notes") or {}).get("convtune_i8_us") for l in L)
print("%s b%s %s: %d layers, %d checked exact (int8 out); convtune int8 out %.1f us, int32 %.1f, cuDNN fp16 %.1f, int8 floor %.1f" % (
  d.get("set"), d.get("batch"), d.get("layout"), len(L), ok, s("convtune_i8_us"), s("convtune_us"),
  s("cudnn_fp16_us"), s("floor_i8_us")))
for l in L:
  t8, fp, sh = l.get("convtune_i8_us"), l.get("cudnn_fp16_us"), l.get("share_of_floor_i8")
  print("  %-18s g%-5s int8 %8.2f  fp16 %8s  fp16/int8 %5s  floor share %4s  %s" % (
    l["name"], l.get("groups"), t8 or -1, "%.2f" % fp if fp else "-", "%.2f" % (fp / t8) if fp and t8 else "-",
    "%.0f%%" % (100 * sh) if sh else "-", (l.get("source") or "")[:60]))
PY
}
# gt_cases FILTER...: test_gpu_templates' grouped, grouped8 and grouped_onnx cases on the
# templates CT_GT_TEMPLATE=FILTER selects (16 configs a workload, every launch traced), in
# parallel; a summary per log with its launches and those of mac 1 (the depthwise CUDA-core family)
gt_cases() {
  for c in grouped grouped8 grouped_onnx; do
    for t in "$@"; do
      f=$OUT/gt-${t//[^A-Za-z0-9_]/}-$c.log
      ( cd build-rel && CT_GT_TRACE=1 CT_GT_TEMPLATE="$t" CK_RUN_CASE=$c timeout 200 ./test_gpu_templates 16 > $f 2>&1; echo "rc=$?" >> $f ) &
    done
  done
  wait
  echo "tests: $(( $(date +%s) - s )) s"
  for f in $OUT/gt-*.log; do
    echo "== $(basename $f): $(grep -E 'Checks|rc=' $f | tr '\n' ' ') launches $(grep -c '^launch' $f), mac=1 $(grep '^launch' $f | grep -c 'mac=1')"
    grep -E "exact over|FAIL|F:|E:" $f | head -8 | cut -c1-200
  done
}
# the depthwise layers of the three depthwise sets at batch 32 on the depthwise mma templates
dwtune() {
  local Q="--batch 32 --out int8 --epilogue bias,qc --trials 80 --early-stopping 32 --time-budget 5"
  tq mobilenetv2 --set mobilenetv2 --layout nhwc $Q --template conv2d_nhwc_dw_mma
  tq efficientnet --set efficientnet_b0_dw --layout nhwc $Q --template conv2d_nhwc_dw_mma
  tq csn --set csn_dw3d --layout ndhwc $Q --template conv3d_ndhwc_dw_mma
}
# ResNeXt's grouped layers, 2D and 3D, at batch 32 (the 2D set on the grouped mma template)
gtune() {
  local Q="--batch 32 --out int8 --epilogue bias,qc --trials 96 --early-stopping 40 --time-budget 6"
  tq resnext --set resnext50_g --layout nhwc $Q --template conv2d_nhwc_grouped_mma
  tq resnext3d --set resnext3d_g --layout ndhwc $Q
}
if [ "$1" = prof ]; then
  shift
  np=0
  while [ $# -ge 3 ]; do
    timeout 200 ncu --clock-control none --set full -c 1 -o $OUT/prof-$np build-rel/config_run "$1" "$2" "$3" > $OUT/prof-$np.log 2>&1
    echo "== prof $np rc=$?: $1 $2 $3"
    ncu --import $OUT/prof-$np.ncu-rep --page raw --csv > $OUT/prof-$np.csv 2>&1
    python3 - $OUT/prof-$np.csv <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
h, u, v = rows[0], rows[1], rows[2]
m = dict(zip(h, v))
def g(k): return m.get(k, "-")
for k in ["gpu__time_duration.sum", "launch__registers_per_thread", "launch__occupancy_limit_registers",
          "sm__warps_active.avg.pct_of_peak_sustained_active", "smsp__issue_active.avg.pct_of_peak_sustained_active",
          "dram__throughput.avg.pct_of_peak_sustained_elapsed", "l1tex__throughput.avg.pct_of_peak_sustained_active",
          "lts__throughput.avg.pct_of_peak_sustained_elapsed", "smsp__inst_executed.sum", "l1tex__t_sector_hit_rate.pct",
          "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
          "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
          "dram__bytes_read.sum", "dram__bytes_write.sum", "launch__grid_size", "launch__waves_per_multiprocessor",
          "sm__cycles_active.avg", "gpc__cycles_elapsed.max", "launch__shared_mem_per_block_dynamic"]:
  print("  %-62s %s" % (k, g(k)))
st = [(float(v or 0), k) for k, v in m.items() if k.startswith("smsp__average_warps_issue_stalled_") and k.endswith("_per_issue_active.ratio")]
st.sort(reverse=True)
print("  stalls per issued instruction: " + ", ".join("%s %.2f" % (k[len("smsp__average_warps_issue_stalled_"):-len("_per_issue_active.ratio")], x) for x, k in st[:7]))
PY
    echo "  timing: $(timeout 60 build-rel/config_run "$1" "$2" "$3" 400 2>&1 | tail -1)"
    np=$((np + 1)); shift 3
  done
  cd $OUT && tar czf prof.tgz prof-* && rm -f prof-*
  exit 0
fi
case $1 in
quicksuite)
  # every GPU test after a change to the tests' random values (core/quant.c): each of
  # test_gpu_templates' cases at QS_N configs a workload (default 3), the other GPU suites
  # whole, and test_cli (its GPU part: tune --fuse and bench --fuse on the tiny fused model),
  # in parallel in two waves
  s=$(date +%s) N=${QS_N:-3}
  run() { # NAME DIR CMD...: a log and its exit status
    local n=$1; shift
    ( timeout ${QS_LIMIT:-420} "$@" > $OUT/qs-$n.log 2>&1; echo "rc=$?" >> $OUT/qs-$n.log )
  }
  cases="gpu_templates wgmma nhwc nhwc8 pingpong nhwc_zpad stem stem8 onnx onnx_stem grouped grouped8 grouped_onnx grouped_zw pointwise pwdw ref"
  for c in $cases; do ( cd build-rel && CK_RUN_CASE=$c run gt-$c ./test_gpu_templates $N ) & done
  wait
  echo "test_gpu_templates cases: $(( $(date +%s) - s )) s"
  # test_gpu_quant a set a process: whole, it takes about 370 s alone on an H200
  for q in resnet50 resnet3d18 espcn; do ( cd build-rel && CT_QUANT_SETS=$q run quant-$q ./test_gpu_quant ) & done
  ( cd build-rel && run runner ./test_runner ) &
  ( cd build-rel && run model_bench ./test_gpu_model_bench ) &
  ( cd build-rel && run kernel ./test_gpu_kernel ) &
  ( cd build-rel && run tune ./test_tune_gpu ) &
  ( cd build-rel && CK_RUN_CASE=layers run dispatch-layers ./test_gpu_dispatch ) &
  ( cd build-rel && CK_RUN_CASE=graph run dispatch-graph ./test_gpu_dispatch ) &
  run cli sh tests/test_cli.sh $PWD/$B $PWD &
  wait
  echo "all: $(( $(date +%s) - s )) s"
  for f in $OUT/qs-*.log; do
    echo "== $(basename $f .log): $(grep -E 'Checks|rc=|passed|failed' $f | tail -3 | tr '\n' ' ')"
    grep -E "exact over|F:|E:|FAIL|not ok|differ" $f | head -6 | cut -c1-200
  done
  cd $OUT && tar czf quicksuite.tgz qs-*.log && rm qs-*.log ;;
autofuse)
  # MobileNetV2 at batch B (default 32) tuned with --fuse (each expand + depthwise pair both
  # ways, one budget of S seconds, default 240) into /tmp/t.db; then bench --model --in-chain
  # apart, --fuse (by records) and --fuse=all on that database, each against cuDNN in its run
  s=$(date +%s) MB=${2:-32} TQ_LIMIT=$(( ${3:-150} + ${4:-90} + 30 ))
  [ ${3:-150} -gt 0 ] && tq model-apart-b$MB --model $MODEL --batch $MB --time-budget ${3:-150}
  tq model-fuse-b$MB --model $MODEL --batch $MB --time-budget ${4:-90} --fuse
  for mode in ${AF_MODES:-apart auto all}; do
    f=; [ $mode = auto ] && f=--fuse; [ $mode = all ] && f=--fuse=all
    timeout 200 $B bench --model $MODEL --batch $MB --db /tmp/t.db --in-chain $f --results-dir $OUT \
      --json-out $OUT/chain-$mode-b$MB.json > $OUT/chain-$mode-b$MB.md 2> $OUT/chain-$mode-b$MB.err
    echo "bench $mode b$MB rc=$? at $(( $(date +%s) - s )) s"
    grep -E "as fast as|every node|^- [0-9]+ .*: (fused|apart):" $OUT/chain-$mode-b$MB.md | head -24 | cut -c1-220
  done
  python3 - $OUT $MB <<'PY'
import json, sys
out, mb = sys.argv[1], sys.argv[2]
import os
for m in ("apart", "auto", "all"):
    if not os.path.exists("%s/chain-%s-b%s.json" % (out, m, mb)): continue
    d = json.load(open("%s/chain-%s-b%s.json" % (out, m, mb)))
    print("%-5s: chain %.1f us, cuDNN fp16 %.1f, %.2fx; %d fused nodes; nodes alone %.1f, in chain %.1f" % (
        m, d["chain"]["convtune_us"], d["chain"]["cudnn_fp16_us"], d["chain"]["cudnn_fp16_us"] / d["chain"]["convtune_us"],
        d["n_fused_nodes"], d["sum_of_nodes"]["convtune_us"], d.get("convtune_in_chain_sum_us") or -1))
PY
  cd $OUT && tar czf autofuse-b$MB.tgz chain-* tune-model-* && rm -f chain-* tune-model-* ;;
tests)
  s=$(date +%s)
  ( cd build-rel && timeout 560 ./test_runner > $OUT/runner.log 2>&1; echo "rc=$?" >> $OUT/runner.log ) &
  for c in grouped grouped8 grouped_onnx nhwc onnx_stem; do
    ( cd build-rel && CK_RUN_CASE=$c timeout 560 ./test_gpu_templates > $OUT/gt-$c.log 2>&1; echo "rc=$?" >> $OUT/gt-$c.log ) &
  done
  for b in 1 3 32; do
    ( cd build-rel && CK_RUN_CASE=grouped CT_DISPATCH_BATCH=$b timeout 560 ./test_gpu_dispatch > $OUT/gd-b$b.log 2>&1; echo "rc=$?" >> $OUT/gd-b$b.log ) &
  done
  ( cd build-rel && CK_RUN_CASE=layers timeout 560 ./test_gpu_dispatch > $OUT/gd-layers.log 2>&1; echo "rc=$?" >> $OUT/gd-layers.log ) &
  wait
  echo "tests in parallel: $(( $(date +%s) - s )) s"
  for f in $OUT/runner.log $OUT/gt-*.log $OUT/gd-*.log; do
    echo "== $(basename $f): $(grep -E 'Checks|rc=' $f | tr '\n' ' ')"
    grep -E "exact over|SKIP|FAIL|not exact|differ|refused|F:|E:" $f | head -12 | cut -c1-160
  done
  for b in 1 3 32; do echo "dispatch b$b: $(grep -c ' exact$' $OUT/gd-b$b.log) exact lines, $(grep -vc ' exact$' $OUT/gd-b$b.log) other"; done
  cd $OUT && tar czf tests.tgz *.log && rm *.log ;;
tune)
  # the depthwise template's and the grouped template's GPU cases, in parallel, then the tuning
  s=$(date +%s)
  for c in grouped grouped8 grouped_onnx; do
    ( cd build-rel && CT_GT_TEMPLATE=_dw CK_RUN_CASE=$c timeout 140 ./test_gpu_templates 12 > $OUT/gt-dw-$c.log 2>&1; echo "rc=$?" >> $OUT/gt-dw-$c.log ) &
  done
  ( cd build-rel && CT_GT_TEMPLATE=nhwc_grouped CK_RUN_CASE=grouped_zw timeout 140 ./test_gpu_templates 8 > $OUT/gt-zw.log 2>&1; echo "rc=$?" >> $OUT/gt-zw.log ) &
  # the 8-bit grouped case's templates the first call's timeout cut
  for t in conv3d_ndhwc_grouped conv2d_nchw4c_grouped conv3d_ncdhw4c_grouped; do
    ( cd build-rel && CT_GT_TEMPLATE=$t CK_RUN_CASE=grouped8 timeout 140 ./test_gpu_templates 12 > $OUT/gt-$t-8.log 2>&1; echo "rc=$?" >> $OUT/gt-$t-8.log ) &
  done
  ( cd build-rel && timeout 140 ./test_runner > $OUT/runner.log 2>&1; echo "rc=$?" >> $OUT/runner.log ) &
  wait
  echo "tests: $(( $(date +%s) - s )) s"
  for f in $OUT/gt-*.log $OUT/runner.log; do
    echo "== $(basename $f): $(grep -E 'Checks|rc=' $f | tr '\n' ' ')"
    grep -E "exact over|FAIL|F:|E:" $f | head -6 | cut -c1-150
  done
  Q="--batch 32 --out int8 --epilogue bias,qc --trials 64 --early-stopping 24 --time-budget 4"
  tq mobilenetv2 --set mobilenetv2 --layout nhwc $Q --template conv2d_nhwc_dw
  tq efficientnet --set efficientnet_b0_dw --layout nhwc $Q --template conv2d_nhwc_dw
  tq csn --set csn_dw3d --layout ndhwc $Q
  # issue 35's odd layer and its 3D counterpart, int32 and int8 output
  O2="--layout nhwc --batch 3 --c 12 --k 20 --size 17x17 --kernel 5 --stride 2 --pad 2 --trials 64 --early-stopping 24 --time-budget 4"
  O3="--op conv3d --layout ndhwc --batch 3 --c 12 --k 20 --size 7x17x17 --kernel 3x5x5 --stride 2 --pad 1x2x2 --trials 64 --early-stopping 24 --time-budget 4"
  tq odd2d $O2; tq odd2d-i8 $O2 --out int8 --epilogue bias,qc; tq odd3d $O3; tq odd3d-i8 $O3 --out int8 --epilogue bias,qc
  tq model-b32 --model $MODEL --batch 32 --template conv2d_nhwc_dw --time-budget 60
  tq model-b1 --model $MODEL --batch 1 --time-budget 60
  python3 -c "import sqlite3; c = sqlite3.connect('/tmp/t.db'); c.execute('pragma wal_checkpoint(TRUNCATE)')"
  cp /tmp/t.db $OUT/t.db
  cd $OUT && tar czf tune.tgz *.log tune-* && rm -f *.log tune-* ;;
smallpw)
  # MobileNetV2's 1x1 nodes at 14x14 and 7x7 (batch 32, ONNX rounding, as the model's keys):
  # each tuned on the channels-last wgmma and the pointwise mma templates, then ncu of the
  # wgmma best (prof)
  s=$(date +%s)
  P=conv2d-nhwc-i8.i8.i8-n32
  KS="$P-c64-k384-14x14-r1x1-s1x1-p0x0.0x0-d1x1-bias-qc-onnx $P-c576-k96-14x14-r1x1-s1x1-p0x0.0x0-d1x1-bias-qc-res-onnx
      $P-c576-k160-7x7-r1x1-s1x1-p0x0.0x0-d1x1-bias-qc-onnx $P-c160-k960-7x7-r1x1-s1x1-p0x0.0x0-d1x1-bias-qc-onnx
      $P-c960-k320-7x7-r1x1-s1x1-p0x0.0x0-d1x1-bias-qc-onnx"
  i=0; args=
  for k in $KS; do
    for t in conv2d_nhwc_wgmma conv2d_nhwc_pw_mma; do
      tq sp$i-$t $k --template $t --trials 96 --early-stopping 40 --time-budget 8
    done
    c=$(python3 -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))[0]['best_config'], separators=(',', ':')))" $OUT/tune-sp$i-conv2d_nhwc_wgmma.json)
    args="$args conv2d_nhwc_wgmma $k $c"
    i=$((i + 1))
  done
  for f in $OUT/tune-sp*.json; do
    python3 -c "import json,sys; w=json.load(open(sys.argv[1]))[0]; print('  %-40s %-20s %7.2f us %s' % (w['key'][21:61], w['template'], w['best_us'] or -1, json.dumps(w['best_config'])[:150]))" $f
  done
  cd $OUT && tar czf smallpw.tgz tune-* && rm -f tune-* && cd - > /dev/null
  bash bench/issue35_gpu.sh prof $args ;;
dwmma)
  s=$(date +%s)
  gt_cases _dw_mma
  dwtune
  cd $OUT && tar czf dwmma.tgz *.log tune-* && rm -f *.log tune-* ;;
dp4a)
  s=$(date +%s)
  [ -n "${DW_NO_GT:-}" ] || gt_cases 'conv2d_nhwc_dw$' 'conv3d_ndhwc_dw$'
  Q="--batch 32 --out int8 --epilogue bias,qc --trials ${DW_TRIALS:-80} --early-stopping ${DW_ES:-32} --time-budget ${DW_TB:-5}"
  tq mobilenetv2-dw --set mobilenetv2 --layout nhwc $Q --template conv2d_nhwc_dw
  tq efficientnet-dw --set efficientnet_b0_dw --layout nhwc $Q --template conv2d_nhwc_dw
  tq csn-dw --set csn_dw3d --layout ndhwc $Q --template conv3d_ndhwc_dw
  for f in $OUT/tune-*-dw.json; do
    python3 - "$f" <<'PY'
import json, sys
for w in json.load(open(sys.argv[1])):
  print("  %-22s %8.2f us %4d trials  %s" % (w["name"][:22], w["best_us"] or -1, w["trials"],
        (" ".join("%s=%s" % kv for kv in w["best_config"].items()) if isinstance(w["best_config"], dict) else str(w["best_config"]))[:130]))
PY
  done
  cd $OUT && tar czf dp4a.tgz *.log tune-* && rm -f *.log tune-* ;;
pwset)
  s=$(date +%s)
  tq mobilenetv2-pw --set mobilenetv2 --layout nhwc --batch 32 --out int8 --epilogue bias,qc --trials 96 \
    --early-stopping 40 --time-budget 5 --template conv2d_nhwc_pw_mma
  python3 - $OUT/tune-mobilenetv2-pw.json <<'PY'
import json, sys
for w in json.load(open(sys.argv[1])):
  print("  %-22s %8.2f us %4d trials" % (w["name"][:22], w["best_us"] or -1, w["trials"]))
PY
  cd $OUT && tar czf pwset.tgz tune-* && rm -f tune-* ;;
dwsets)
  s=$(date +%s)
  for set in mobilenetv2 efficientnet_b0_dw csn_dw3d; do
    l=nhwc; [ $set = csn_dw3d ] && l=ndhwc
    timeout 150 $B bench --set $set --batch 32 --layout $l --db /tmp/t.db --results-dir $OUT --json-out $OUT/$set-b32.json \
      > $OUT/$set-b32.md 2> $OUT/$set-b32.err
    echo "bench $set rc=$? at $(( $(date +%s) - s )) s"; summary $OUT/$set-b32.json
  done
  cd $OUT && tar czf dwsets.tgz *.md *.json *.err && find . -type f ! -name '*.tgz' ! -name '*.xz' -delete ;;
dwsan)
  K2=conv2d-nhwc-i8.i8.i8-n2-c48-k48-15x13-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-g48
  K2Z=conv2d-nhwc-u8.i8.u8-n2-c40-k40-13x11-r5x5-s2x2-p2x2.2x2-d1x1-zd-bias-qc-res-g40
  K3=conv3d-ndhwc-i8.i8.i32-n1-c32-k32-4x9x9-r3x3x3-s1x1x1-p1x1x1.1x1x1-d1x1x1-g32
  D='"blocks_per_sm":1,"mac":1'
  csan conv2d_nhwc_dw $K2 '{"chans":4,"pix":2,"rows":8,"block_c":4,"block_w":4,"block_h":2,"staging":0,'"$D"'}' memcheck initcheck
  csan conv2d_nhwc_dw $K2 '{"chans":8,"pix":2,"rows":4,"block_c":2,"block_w":4,"block_h":4,"staging":1,'"$D"'}' memcheck initcheck racecheck synccheck
  csan conv2d_nhwc_dw $K2Z '{"chans":4,"pix":2,"rows":2,"block_c":2,"block_w":4,"block_h":4,"staging":0,'"$D"'}' memcheck initcheck
  csan conv2d_nhwc_dw $K2Z '{"chans":8,"pix":2,"rows":2,"block_c":2,"block_w":4,"block_h":4,"staging":1,'"$D"'}' memcheck initcheck racecheck
  csan conv3d_ndhwc_dw $K3 '{"chans":4,"pix":2,"rows":4,"block_c":8,"block_w":2,"block_h":2,"staging":0,"depths":1,'"$D"'}' memcheck initcheck
  # depths 2 and 4: 7 output planes (a tail tile), and stride 2 along depth; int8 output
  K3T=conv3d-ndhwc-i8.i8.i8-n2-c32-k32-7x9x9-r3x3x3-s1x1x1-p1x1x1.1x1x1-d1x1x1-bias-qc-g32
  K3S=conv3d-ndhwc-u8.i8.u8-n2-c32-k32-7x9x9-r3x3x3-s2x2x2-p1x1x1.1x1x1-d1x1x1-zd-bias-qc-res-g32
  csan conv3d_ndhwc_dw $K3T '{"chans":4,"pix":2,"rows":2,"block_c":8,"block_w":2,"block_h":2,"staging":0,"depths":4,'"$D"'}' memcheck initcheck
  csan conv3d_ndhwc_dw $K3S '{"chans":4,"pix":1,"rows":4,"block_c":8,"block_w":4,"block_h":1,"staging":0,"depths":2,'"$D"'}' memcheck initcheck
  # 7 rows a thread, 12 threads along channels
  csan conv2d_nhwc_dw $K2 '{"chans":4,"pix":2,"rows":7,"block_c":12,"block_w":8,"block_h":1,"staging":0,'"$D"'}' memcheck initcheck ;;
pw)
  s=$(date +%s)
  for t in conv2d_nhwc_pw_mma conv3d_ndhwc_pw_mma; do
    ( cd build-rel && CT_GT_TEMPLATE=$t CK_RUN_CASE=pointwise timeout 250 ./test_gpu_templates ${PW_CONFIGS:-12} \
        > $OUT/gt-$t.log 2>&1; echo "rc=$?" >> $OUT/gt-$t.log ) &
  done
  wait
  echo "pointwise tests: $(( $(date +%s) - s )) s"
  for t in conv2d_nhwc_pw_mma conv3d_ndhwc_pw_mma; do
    echo "== $t: $(grep -E 'Checks|rc=' $OUT/gt-$t.log | tr '\n' ' ')"; grep -E "exact over|F:|E:" $OUT/gt-$t.log | head -8 | cut -c1-220
  done
  PT="memcheck racecheck synccheck"
  P1=conv2d-nhwc-i8.i8.i8-n2-c24-k144-9x9-r1x1-s1x1-p0x0.0x0-d1x1-bias-qc-res
  P2=conv2d-nhwc-u8.i8.u8-n1-c40-k24-11x13-r1x1-s1x1-p0x0.0x0-d1x1-zd-bias-qc
  P3=conv3d-ndhwc-i8.i8.i32-n2-c288-k40-5x7x6-r1x1x1-s2x2x2-p0x0x0.0x0x0-d1x1x1
  csan conv2d_nhwc_pw_mma $P1 '{"m_tiles":2,"n_tiles":6,"n_per_warp":3,"warps_m":2,"m_unroll":1,"stages":3,"blocks_per_sm":2}' $PT
  csan conv2d_nhwc_pw_mma $P2 '{"m_tiles":4,"n_tiles":3,"n_per_warp":1,"warps_m":1,"m_unroll":2,"stages":2,"blocks_per_sm":2}' $PT
  csan conv3d_ndhwc_pw_mma $P3 '{"m_tiles":2,"n_tiles":2,"n_per_warp":1,"warps_m":2,"m_unroll":1,"stages":4,"blocks_per_sm":1}' $PT
  cd $OUT && tar czf pw.tgz gt-*.log && rm -f gt-*.log ;;
pwdw)
  # the fused pointwise + depthwise template: its GPU case (PWDW_CONFIGS a workload, default 10),
  # compute-sanitizer over two configs, then MobileNetV2's blocks at batch 32 (as the model's
  # QDQ nodes: int8, bias, per-channel scales, onnx rounding), each tuned fused and as its two
  # convs apart into /tmp/t.db (PWDW_TRIALS, default 96, early stopping 40; PWDW_KINDS: which of
  # e (the expansion), d (the depthwise conv) and f (fused) to tune, default all), the bests side by side
  s=$(date +%s)
  ( cd build-rel && CK_RUN_CASE=pwdw timeout 280 ./test_gpu_templates ${PWDW_CONFIGS:-10} > $OUT/gt-pwdw.log 2>&1
    echo "rc=$?" >> $OUT/gt-pwdw.log )
  echo "== pwdw tests, $(( $(date +%s) - s )) s: $(grep -E 'Checks|rc=' $OUT/gt-pwdw.log | tr '\n' ' ')"
  grep -E "exact over|FAIL|F:|E:" $OUT/gt-pwdw.log | head -8 | cut -c1-240
  F1=conv2d-nhwc-i8.i8.i8-n2-c144-k144-15x13-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-onnx-g144-pre24.i8.bias.qc.onnx
  F2=conv2d-nhwc-u8.i8.u8-n3-c40-k40-17x17-r5x5-s2x2-p2x2.2x2-d1x1-zd-bias-g40-pre16.u8.zd.bias
  csan conv2d_nhwc_pwdw $F1 '{"tile_h":4,"tile_w":8,"cb8":6,"warps":4,"pixt":4,"blocks_per_sm":2}' memcheck racecheck synccheck
  csan conv2d_nhwc_pwdw $F2 '{"tile_h":7,"tile_w":8,"cb8":1,"warps":2,"pixt":2,"blocks_per_sm":2}' memcheck racecheck
  for b in "1 16 96 112 2" "2 24 144 56 1" "3 24 144 56 2" "4 32 192 28 1" "6 32 192 28 2" "7 64 384 14 1" \
           "11 96 576 14 1" "13 96 576 14 2" "14 160 960 7 1"; do
    set -- $b
    blk=$1
    E=conv2d-nhwc-i8.i8.i8-n32-c$2-k$3-$4x$4-r1x1-s1x1-p0x0.0x0-d1x1-bias-qc-onnx
    D=conv2d-nhwc-i8.i8.i8-n32-c$3-k$3-$4x$4-r3x3-s$5x$5-p1x1.1x1-d1x1-bias-qc-onnx-g$3
    for k in "e $E" "d $D" "f $D-pre$2.i8.bias.qc.onnx"; do
      set -- $k
      case " ${PWDW_KINDS:-e d f} " in *" $1 "*) ;; *) continue ;; esac
      tq pwdw-$1$blk $2 --trials ${PWDW_TRIALS:-96} --early-stopping 40 --time-budget 40 >/dev/null
    done
  done
  python3 - $OUT <<'PY'
import glob, json, os, sys
def best(f):
    try: d = json.load(open(f))
    except Exception: return None
    rs = d if isinstance(d, list) else d.get("results", [d])
    v = [r.get("best_us") for r in rs if isinstance(r, dict) and r.get("best_us")]
    return min(v) if v else None
print("block  expand us  depthwise us  sum   fused us  sum / fused")
for b in sorted({os.path.basename(f)[len("tune-pwdw-e"):-5] for f in glob.glob(sys.argv[1] + "/tune-pwdw-e*.json")},
                key=int):
    e, d, f = (best("%s/tune-pwdw-%s%s.json" % (sys.argv[1], k, b)) for k in "edf")
    s = e + d if e and d else None
    print("%-6s %9s %13s %6s %9s %9s" % (b, "%.2f" % e if e else "-", "%.2f" % d if d else "-",
          "%.2f" % s if s else "-", "%.2f" % f if f else "-", "%.2fx" % (s / f) if s and f else "-"))
PY
  cd $OUT && tar czf pwdw.tgz gt-*.log tune-pwdw-* && rm -f gt-*.log tune-pwdw-* ;;
streams)
  s=$(date +%s); shift; SS=${*:-2}
  if [ "${STREAMS_TEST:-1}" = 1 ]; then
    ( cd build-rel && CK_RUN_CASE=gpu timeout 90 ./test_gpu_model_bench > $OUT/streams-gputest.log 2>&1
      echo "test_gpu_model_bench rc=$?: $(grep -E 'Checks' $OUT/streams-gputest.log)" )
    grep -E "FAIL|E:|F:" $OUT/streams-gputest.log | head -5
  fi
  for b in 32 $(for S in $SS; do echo $((32 / S)); done); do
    tq model-b$b --model $MODEL --batch $b --time-budget ${STREAMS_TB:-150}
  done
  runs=""
  for S in 1 $SS; do
    b=$((32 / S)) a=""; [ $S -gt 1 ] && a="--streams $S"
    timeout 200 $B bench --model $MODEL --batch $b $a --db /tmp/t.db --no-results \
      --json-out $OUT/streams-b$b-s$S.json > $OUT/streams-b$b-s$S.md 2> $OUT/streams-b$b-s$S.err
    echo "bench b$b $a rc=$? at $(( $(date +%s) - s )) s"; runs="$runs $OUT/streams-b$b-s$S.json"
  done
  python3 - $runs <<'PY'
import json, sys
D = [json.load(open(f)) for f in sys.argv[1:]]
one = D[0]  # batch 32, one chain
fp = one["chain"]["cudnn_fp16_us"]
print("32 images, each way (us); cuDNN fp16's best way of the same run's calls is the anchor")
rows = [("one chain of 32", one["chain"]["convtune_us"], fp, one["all_exact"], None)]
for d in D[1:]:
  st = d["streams"]
  rows.append(("%d chains of %d at once" % (st["copies"], d["batch"]), st["chain"]["convtune_us"],
               st["chain"]["cudnn_fp16_us"], d["all_exact"], st["copies_identical"]))
best = min(r[2] for r in rows if r[2])
for name, ct, cu, ex, ident in rows:
  print("  %-26s convtune %8.1f  cuDNN fp16 %8.1f  cuDNN fp16 / convtune %.3fx, against cuDNN's best way %.3fx; exact %s%s" % (
    name, ct, cu, cu / ct, best / ct, ex, "" if ident is None else ", copies identical %s" % ident))
PY
  # one archive: a call brings back at most 8 files
  cd $OUT && tar czf streams.tgz streams-* tune-model-b* && rm -f streams-* tune-model-b* ;;
dwmodel)
  s=$(date +%s) MB=${2:-32}
  tq model-b$MB --model $MODEL --batch $MB --time-budget $((MB > 1 ? 150 : 60))
  timeout 150 $B bench --model $MODEL --batch $MB --db /tmp/t.db --results-dir $OUT --json-out $OUT/model-b$MB.json \
    > $OUT/model-b$MB.md 2> $OUT/model-b$MB.err
  echo "bench model b$MB rc=$? at $(( $(date +%s) - s )) s"; grep -E "as fast as|images per second|convtune / side|exact" $OUT/model-b$MB.md | head -6
  python3 - $OUT/model-b$MB.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); N = d["nodes"]
dw = [n for n in N if "-g" in n["key"].split("-")[-1] or n["key"].split("-")[-1].startswith("g")]
def s(L, f): return sum(n.get(f) or 0 for n in L)
print("chain %s us, cuDNN fp16 %s; %d depthwise nodes: convtune %.1f us, cuDNN fp16 %.1f; the %d others %.1f against %.1f" % (
  d.get("chain", {}).get("convtune_us") if isinstance(d.get("chain"), dict) else d.get("chain"), d.get("convtune_over_cudnn_fp16"),
  len(dw), s(dw, "convtune_us"), s(dw, "cudnn_fp16_us"), len(N) - len(dw), s(N, "convtune_us") - s(dw, "convtune_us"),
  s(N, "cudnn_fp16_us") - s(dw, "cudnn_fp16_us")))
PY
  cd $OUT && tar czf dwmodel.tgz model-b$MB.* tune-model-b$MB.* && rm -f model-b$MB.* tune-model-b$MB.* ;;
stem)
  s=$(date +%s)
  for c in stem8 onnx_stem; do
    ( cd build-rel && CT_GT_TEMPLATE=_wgmma_stem CK_RUN_CASE=$c timeout 240 ./test_gpu_templates 8 \
        > $OUT/stem-gt-$c.log 2>&1; echo "rc=$?" >> $OUT/stem-gt-$c.log ) &
  done
  wait
  for c in stem8 onnx_stem; do echo "$c: $(grep -E 'Checks|rc=' $OUT/stem-gt-$c.log | tr '\n' ' ')"; done
  MK=conv2d-nhwc-i8.i8.i8-n32-c3-k32-224x224-r3x3-s2x2-p1x1.1x1-d1x1-bias-qc-onnx
  for bn in 64 32; do for os in 0 1; do
    c="{\"block_m\":128,\"block_n\":$bn,\"warpgroups\":1,\"a_buffers\":2,\"blocks_per_sm\":4,\"out_stage\":$os}"
    echo "mobilenetv2 stem b32 $c: $(timeout 120 build-rel/config_run conv2d_nhwc_wgmma_stem $MK "$c" 400 2>&1 | tail -1)"
  done; done
  for n in 16 256; do
    tq stem-r50-b$n conv2d-nhwc-i8.i8.i8-n$n-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1-bias-qc-onnx \
      --trials 96 --template conv2d_nhwc_wgmma_stem
  done
  tq stem-mbv2-b32 $MK --trials 96
  python3 - <<'PY'
import json, sqlite3
for db in ["/tmp/t.db"]:
  c = sqlite3.connect(db)
  rows = c.execute("select w.key, r.config_json, r.median_us from trials r join workloads w on "
                   "w.id = r.workload_id join templates t on t.id = r.template_id where t.name like "
                   "'%wgmma_stem' and r.outcome = 'OK' and w.key like '%-c3-%' and t.id = (select max(id) "
                   "from templates where name = t.name)").fetchall()
  best = {}
  for k, cj, us in rows:
    cf = json.loads(cj); g = (k.split("-")[3], cf.get("out_stage"), cf.get("block_n"))
    if g not in best or us < best[g][0]: best[g] = (us, cj)
  for g in sorted(best): print("  %s out_stage %s block_n %s: %.2f us %s" % (g + best[g]))
PY
  cd $OUT && tar czf stemrun.tgz stem-* tune-stem-* && rm -f stem-* tune-stem-* ;;
stemsan)
  csan conv2d_nhwc_wgmma_stem conv2d-nhwc-i8.i8.i8-n2-c3-k32-224x224-r3x3-s2x2-p1x1.1x1-d1x1-bias-qc-onnx \
    '{"block_m":128,"block_n":32,"warpgroups":2,"a_buffers":2,"blocks_per_sm":1,"out_stage":1}' memcheck racecheck synccheck
  csan conv2d_nhwc_wgmma_stem conv2d-nhwc-u8.i8.u8-n2-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1-zd-bias-qc-res \
    '{"block_m":64,"block_n":64,"warpgroups":2,"a_buffers":1,"blocks_per_sm":1,"out_stage":1}' memcheck racecheck synccheck ;;
abchain)
  s=$(date +%s) m=$2 MB=$3 S=$4 BASE=${BASE:-.gpu-exp/convtune-base} T=${ABTMP:-/tmp}
  [ $m = mobilenetv2 ] && m=$MODEL
  tag0=$(basename $m .onnx)-b$MB
  rm -f $T/ab-new.db* $T/ab-base.db*
  tf=; [ -n "${ABFUSE:-}" ] && tf=--fuse tag0=$tag0-fuse
  timeout 400 $B tune --model $m --batch $MB --time-budget $S --seed 1 --db $T/ab-new.db -q --json $tf \
    > $OUT/ab-tune-$tag0.json 2> $OUT/ab-tune-$tag0.err
  echo "abchain $tag0: tune rc=$? at $(( $(date +%s) - s )) s: $(tail -1 $OUT/ab-tune-$tag0.err)"
  cp $T/ab-new.db $T/ab-base.db
  timeout 300 $BASE tune --model $m --batch $MB --trials 1 --seed 1 --db $T/ab-base.db -q --json $tf \
    > $OUT/ab-retune-$tag0.json 2> $OUT/ab-retune-$tag0.err
  echo "  base re-measured rc=$? at $(( $(date +%s) - s )) s: $(tail -1 $OUT/ab-retune-$tag0.err)"
  files="ab-tune-$tag0.* ab-retune-$tag0.*"
  for mode in ${ABFUSE:-none}; do
    bf=; tag=$tag0; [ $mode != none ] && bf=--fuse=$mode tag=$tag0-$mode
    for spec in new=$B:$T/ab-new.db base=$BASE:$T/ab-base.db; do
      name=${spec%%=*} r=${spec#*=}; bin=${r%%:*} db=${r#*:}
      timeout 300 $bin bench --model $m --batch $MB --db $db --in-chain --no-results $bf \
        --json-out $OUT/ab-$name-$tag.json > $OUT/ab-$name-$tag.md 2> $OUT/ab-$name-$tag.err
      echo "  bench $name $bf rc=$? at $(( $(date +%s) - s )) s"
    done
    files="$files ab-new-$tag.* ab-base-$tag.*"
    python3 - $OUT $tag <<'PY'
import json, sys
out, tag = sys.argv[1:]
D = {l: json.load(open("%s/ab-%s-%s.json" % (out, l, tag))) for l in ("new", "base")}
for l, d in D.items():
  print("%s: chain %.1f us, cuDNN fp16 %.1f (%.2fx), nodes alone %.1f, in the chain %.1f; %d of %d exact" % (l,
    d["chain"]["convtune_us"], d["chain"]["cudnn_fp16_us"], d["chain"]["cudnn_fp16_us"] / d["chain"]["convtune_us"],
    d["sum_of_nodes"]["convtune_us"], d.get("convtune_in_chain_sum_us") or -1, d["n_exact"], d["n_nodes"]))
print("%-26s %13s %13s %6s  %s" % ("node", "new alone/in", "base alone/in", "floor", "template (new; base if other)"))
for a, b in zip(D["new"]["nodes"], D["base"]["nodes"]):
  if not a["runs"]: continue
  tpl = lambda n: (n.get("source") or "").split(",")[-1].split("(")[0].strip()
  ta, tb = tpl(a), tpl(b)
  v = lambda n, k: n.get(k) if n.get(k) is not None else -1
  print("%-26s %6.2f %6.2f %6.2f %6.2f %6.2f  %s%s" % (a["name"][:26], v(a, "convtune_us"), v(a, "convtune_in_chain_us"),
    v(b, "convtune_us"), v(b, "convtune_in_chain_us"), v(a, "floor_us"), ta, "" if ta == tb else "; " + tb))
PY
  done
  # its own files only: a caller's ab-*.txt in $OUT stays
  cd $OUT && tar czf abchain-$tag0.tgz $(ls $files 2>/dev/null) && rm -f $(ls $files 2>/dev/null) ;;
values)
  s=$(date +%s) MB=${2:-32} S=${3:-150} BASE=${BASE:-.gpu-exp/convtune-base}
  for v in ${VORDER:-rand model}; do
    bin=$B; [ $v = rand ] && bin=$BASE
    rm -f /tmp/v-$v.db*
    timeout $((S + 60)) $bin tune --model $MODEL --batch $MB --time-budget $S --seed 1 --db /tmp/v-$v.db \
      --json > $OUT/v-tune-$v.json 2> $OUT/v-tune-$v.err
    echo "tune $v rc=$? at $(( $(date +%s) - s )) s: $(grep -c 'epilogue values' $OUT/v-tune-$v.err) lines name the model's values"
  done
  for r in $(seq ${VROUNDS:-2}); do
    for v in ${VORDER:-rand model}; do
      timeout 150 $B bench --model $MODEL --batch $MB --db /tmp/v-$v.db --no-results ${VBENCH:-} \
        --json-out $OUT/v-bench-$v-$r.json > $OUT/v-bench-$v-$r.md 2> $OUT/v-bench-$v-$r.err
      echo "bench $v round $r rc=$? at $(( $(date +%s) - s )) s"
    done
  done
  python3 - $OUT <<'PY'
import json, sys, glob
out = sys.argv[1]
D = {}
for f in sorted(glob.glob(out + "/v-bench-*.json")):
  v, r = f.split("v-bench-")[1][:-5].split("-")
  D.setdefault(v, []).append(json.load(open(f)))
for v, L in D.items():
  for d in L:
    c = d["chain"]
    print("%-5s chain %.1f us, cuDNN fp16 %.1f (%.3fx), nodes alone %.1f; %d of %d exact" % (v, c["convtune_us"],
      c["cudnn_fp16_us"], c["cudnn_fp16_us"] / c["convtune_us"], d["sum_of_nodes"]["convtune_us"], d["n_exact"], d["n_nodes"]))
print("each node alone, the mean of the rounds (us)")
print("%-26s %8s %8s %9s %9s" % ("node", "rand", "model", "rand in", "model in"))
for i, x in enumerate(D["rand"][0]["nodes"]):
  if not x["runs"]: continue
  m = lambda v, k="convtune_us": sum(d["nodes"][i].get(k) or 0 for d in D[v]) / len(D[v])
  print("%-26s %8.2f %8.2f %9.2f %9.2f" % (x["name"][:26], m("rand"), m("model"),
    m("rand", "convtune_in_chain_us"), m("model", "convtune_in_chain_us")))
PY
  cd $OUT && tar czf values-b$MB.tgz v-* && rm -f v-* ;;
chainprof)
  s=$(date +%s) MB=${2:-32} cm=${3:-$MODEL}
  [ "$cm" = mobilenetv2 ] && cm=$MODEL
  nk=$(python3 -c "import onnx, sys; print(sum(n.op_type == 'Conv' for n in onnx.load(sys.argv[1]).graph.node))" $cm 2>/dev/null || echo 52)
  timeout 400 ncu --clock-control none --cache-control none -k regex:^conv_ -c $nk \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio \
    --csv --page raw --print-units base $B bench --model $cm --batch $MB --db /tmp/t.db --no-results \
    --json-out $OUT/cp-bench-b$MB.json > $OUT/cp-b$MB.csv 2> $OUT/cp-b$MB.err
  echo "chainprof b$MB rc=$? at $(( $(date +%s) - s )) s"
  python3 - $OUT/cp-b$MB.csv $OUT/cp-bench-b$MB.json <<'PY'
import csv, json, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
h = rows[0]; data = [dict(zip(h, r)) for r in rows[2:]]
d = json.load(open(sys.argv[2])); N = [n for n in d["nodes"] if n["runs"]]
def f(r, k):
  v = r.get(k, "0").replace(",", "")
  try: return float(v)
  except ValueError: return 0.0
print("%d kernels profiled, %d nodes" % (len(data), len(N)))
print("%-26s %8s %8s %8s %8s %8s %8s %8s" % ("node", "ncu us", "rd MB", "wr MB", "own MB", "L2 MB", "alone", "no-inst"))
T = [0, 0, 0, 0]
for n, r in zip(N, data):
  us = f(r, "gpu__time_duration.sum") / 1e3; rd = f(r, "dram__bytes_read.sum") / 1e6
  wr = f(r, "dram__bytes_write.sum") / 1e6; l2 = f(r, "lts__t_bytes.sum") / 1e6
  T[0] += us; T[1] += rd; T[2] += wr; T[3] += n["bytes"] / 1e6
  ni = f(r, "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio")
  print("%-26s %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f  %s" % (n["name"][:26], us, rd, wr, n["bytes"] / 1e6, l2, n["convtune_us"], ni, r.get("Kernel Name", "")[:24]))
print("sums: %.1f us, DRAM read %.1f MB, written %.1f MB, the nodes' own bytes %.1f MB" % tuple(T))
PY
  cd $OUT && tar czf chainprof-b$MB.tgz cp-* && rm -f cp-* ;;
restrict)
  s=$(date +%s) MB=$2; shift 2
  rm -f /tmp/r.db /tmp/r.db-wal /tmp/r.db-shm
  # a copy through SQLite's backup, so that pages still in t.db's WAL come along
  python3 -c "import sqlite3; s = sqlite3.connect('/tmp/t.db'); d = sqlite3.connect('/tmp/r.db'); s.backup(d); d.close()" || exit 1
  python3 - /tmp/r.db "$@" > $OUT/restrict-keys.txt 2>&1 <<'PY' || { echo "restrict: $(tail -1 $OUT/restrict-keys.txt)"; exit 1; }
import json, re, sqlite3, sys
db, args = sys.argv[1], sys.argv[2:]
if not args or len(args) % 2:
    sys.exit("restrict: PAT KNOB=V pairs expected")
c = sqlite3.connect(db)
for pat, kv in zip(args[::2], args[1::2]):
    k, v = kv.split("=", 1)
    rx = re.compile(pat)
    for wid, key in c.execute("select id, key from workloads").fetchall():
        if not rx.search(key):
            continue
        rows = c.execute("select t.id, t.config_json, t.outcome, t.median_us, tp.name from trials t "
                         "join templates tp on tp.id = t.template_id where t.workload_id = ?", (wid,)).fetchall()
        has = (lambda r: r[4] == v) if k == "template" else (lambda r: json.loads(r[1]).get(k) == json.loads(v))
        ok = [r for r in rows if r[2] == "OK"]
        best = min(ok, key=lambda r: r[3], default=None)
        kept = sorted((r for r in ok if has(r)), key=lambda r: r[3])
        if not kept:
            print("%s: no measured config with %s=%s; left as it was" % (key, k, v))
            continue
        c.executemany("delete from trials where id = ?", [(r[0],) for r in rows if not has(r)])
        print("%s: best %.2f us (%s %s) -> with %s=%s %.2f us (%s %s), %d of %d trials kept" % (
            key, best[3], best[4], best[1], k, v, kept[0][3], kept[0][4], kept[0][1],
            sum(map(has, rows)), len(rows)))
c.commit()
PY
  cut -c1-300 $OUT/restrict-keys.txt
  BINS="t1=$B r1=$B:/tmp/r.db t2=$B r2=$B:/tmp/r.db" bash bench/issue35_gpu.sh inchain $MB
  mv $OUT/restrict-keys.txt $OUT/restrict-keys-b$MB.txt ;;
ranks)
  s=$(date +%s) MB=$2; shift 2
  bins="t1=$B"
  for R in "$@"; do
    rm -f /tmp/rank-$R.db /tmp/rank-$R.db-wal /tmp/rank-$R.db-shm
    python3 - /tmp/t.db /tmp/rank-$R.db $R >> $OUT/ranks-keys-b$MB.txt 2>&1 <<'PY' || { echo "ranks: $(tail -1 $OUT/ranks-keys-b$MB.txt)"; exit 1; }
import json, sqlite3, sys
src, dst, rank = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = sqlite3.connect(src); c = sqlite3.connect(dst); s.backup(c); s.close()
for wid, key in c.execute("select id, key from workloads").fetchall():
    rows = c.execute("select t.template_id, t.config_json, t.median_us, tp.name from trials t join templates tp "
                     "on tp.id = t.template_id where t.workload_id = ? and t.outcome = 'OK' "
                     "order by t.median_us", (wid,)).fetchall()
    if not rows:
        continue
    seen, distinct = set(), []
    for r in rows:
        if (r[0], r[1]) not in seen:
            seen.add((r[0], r[1])); distinct.append(r)
    keep = distinct[min(rank, len(distinct)) - 1]
    c.execute("delete from trials where workload_id = ? and not (template_id = ? and config_json = ?)",
              (wid, keep[0], keep[1]))
    print("rank %d %s: %.2f us %s %s (best %.2f, %d distinct)" % (rank, key, keep[2], keep[3], keep[1],
          distinct[0][2], len(distinct)))
c.commit()
PY
    bins="$bins rk$R=$B:/tmp/rank-$R.db"
  done
  BINS="$bins t2=$B" INCHAIN_KEEP=1 bash bench/issue35_gpu.sh inchain $MB
  python3 - $OUT $MB t1 t2 $(for R in "$@"; do echo rk$R; done) <<'PY'
import json, sys
out, mb, labels = sys.argv[1], sys.argv[2], sys.argv[3:]
D = {l: json.load(open("%s/inchain-%s-b%s.json" % (out, l, mb))) for l in labels}
nodes = D["t1"]["nodes"]
base = pick = 0.0
for i, n in enumerate(nodes):
    if not n["runs"]: continue
    v = {l: D[l]["nodes"][i].get("convtune_in_chain_us") for l in labels}
    if any(x is None for x in v.values()): continue
    b = (v["t1"] + v["t2"]) / 2
    best = min([("rk1", b)] + [(l, v[l]) for l in labels[2:]], key=lambda t: t[1])
    base += b; pick += best[1]
print("ranks: in-chain sum at rank 1 (mean of t1, t2) %.1f us; each node at its best rank %.1f us "
      "(%.1f us less, noise included)" % (base, pick, base - pick))
PY
  cd $OUT && tar czf ranks-b$MB.tgz inchain-* ranks-keys-* && rm -f inchain-* ranks-keys-* ;;
arena)
  s=$(date +%s) m=$2 MB=$3 db=${4:-/tmp/t.db}
  [ $m = mobilenetv2 ] && m=$MODEL
  tag=$(basename $m .onnx)-b$MB
  for mode in own arena; do
    a=; [ $mode = arena ] && a=--arena
    timeout 300 $B bench --model $m --batch $MB --db $db $a --no-results \
      --json-out $OUT/ar-$mode-$tag.json > $OUT/ar-$mode-$tag.md 2> $OUT/ar-$mode-$tag.err
    echo "arena $tag $mode rc=$? at $(( $(date +%s) - s )) s"
  done
  python3 - $OUT $tag <<'PY'
import json, sys
out, tag = sys.argv[1:]
for mode in ("own", "arena"):
  d = json.load(open("%s/ar-%s-%s.json" % (out, mode, tag)))
  c = d["chain"]
  print("%-5s chain: convtune %.1f us, cuDNN fp16 %s, cuDNN int8 %s; fp16 / convtune %s; nodes alone %.1f; "
        "%s of %s exact; buffers %s (%s MB) for %s MB of outputs" % (mode, c["convtune_us"], c["cudnn_fp16_us"],
        c["cudnn_int8_us"], d.get("convtune_over_cudnn_fp16") and round(1 / d["convtune_over_cudnn_fp16"], 3),
        d["sum_of_nodes"]["convtune_us"], d["n_exact"], d["n_run"], d.get("arena_buffers", "-"),
        d.get("arena_mb", "-"), d["outputs_mb"]))
PY
  cd $OUT && tar czf arena-$tag.tgz ar-* && rm -f ar-* ;;
fusechain)
  # MobileNetV2 at batch B (default 32) tuned apart (S seconds, default 150) and then with its
  # expand + depthwise pairs fused (--fuse; the fused workloads alone are new: F seconds, default
  # 90), into /tmp/t.db; then bench --model --in-chain both ways on that database, each against
  # cuDNN in its run, and the pairs' in-chain times side by side
  s=$(date +%s) MB=${2:-32}
  tq model-apart-b$MB --model $MODEL --batch $MB --time-budget ${3:-150}
  tq model-fused-b$MB --model $MODEL --batch $MB --time-budget ${4:-90} --fuse
  for mode in apart fused; do
    f=; [ $mode = fused ] && f=--fuse
    timeout 200 $B bench --model $MODEL --batch $MB --db /tmp/t.db --in-chain $f --results-dir $OUT \
      --json-out $OUT/chain-$mode-b$MB.json > $OUT/chain-$mode-b$MB.md 2> $OUT/chain-$mode-b$MB.err
    echo "bench $mode b$MB rc=$? at $(( $(date +%s) - s )) s"
    grep -E "as fast as|images per second|convtune / side|exact|fused" $OUT/chain-$mode-b$MB.md | head -6
  done
  python3 - $OUT $MB <<'PY'
import json, sys
out, mb = sys.argv[1], sys.argv[2]
A = json.load(open("%s/chain-apart-b%s.json" % (out, mb))); F = json.load(open("%s/chain-fused-b%s.json" % (out, mb)))
for n, d in (("apart", A), ("fused", F)):
    print("%s: chain %.1f us, cuDNN fp16 %.1f, %.2fx; nodes alone %.1f, in chain %.1f" % (n, d["chain"]["convtune_us"],
          d["chain"]["cudnn_fp16_us"], d["chain"]["cudnn_fp16_us"] / d["chain"]["convtune_us"],
          d["sum_of_nodes"]["convtune_us"], d.get("convtune_in_chain_sum_us") or -1))
a = {x["name"]: x for x in A["nodes"]}
print("%-26s %8s %8s %8s %8s" % ("fused node", "alone", "chain", "pair", "pair ch"))
for x in F["nodes"]:
    pre = x.get("pre") or (x.get("fused_pre") or {}).get("name")
    if not pre: continue
    p1, p2 = a.get(pre, {}), a.get(x["name"], {})
    def g(d, k): return d.get(k) or 0
    print("%-26s %8.2f %8.2f %8.2f %8.2f" % (x["name"][:26], g(x, "convtune_us"), g(x, "convtune_in_chain_us"),
          g(p1, "convtune_us") + g(p2, "convtune_us"), g(p1, "convtune_in_chain_us") + g(p2, "convtune_in_chain_us")))
PY
  cd $OUT && tar czf fusechain-b$MB.tgz chain-* tune-model-* && rm -f chain-* tune-model-* ;;
mtune)
  s=$(date +%s) MB=${2:-32}
  tq model-b$MB --model $MODEL --batch $MB --time-budget ${3:-150}
  cd $OUT && tar czf mtune-b$MB.tgz tune-model-b$MB.* && rm -f tune-model-b$MB.* ;;
inchain)
  s=$(date +%s) MB=${2:-32} labels=""
  for spec in ${BINS:-build-rel/convtune}; do
    name=${spec%%=*} bin=${spec#*=} db=/tmp/t.db
    case $bin in *:*) db=${bin#*:} bin=${bin%%:*} ;; esac
    [ "$name" = "$spec" ] && name=$(basename $bin)
    nopdl=; case $name in nopdl-*) nopdl=${name#nopdl-} ;; nopdl*) nopdl=1 ;; esac
    CTX_NO_PDL=$nopdl timeout 300 $bin bench --model $MODEL --batch $MB --db $db --in-chain \
      --no-results --json-out $OUT/inchain-$name-b$MB.json > $OUT/inchain-$name-b$MB.md 2> $OUT/inchain-$name-b$MB.err
    echo "inchain $name b$MB rc=$? at $(( $(date +%s) - s )) s"; labels="$labels $name"
  done
  python3 - $MB $OUT $labels <<'PY'
import json, sys
mb, out, labels = sys.argv[1], sys.argv[2], sys.argv[3:]
D = {l: json.load(open("%s/inchain-%s-b%s.json" % (out, l, mb))) for l in labels}
for l, d in D.items():
  print("%s: chain %.1f us, cuDNN fp16 %s, nodes alone %.1f, in the chain %s; all exact %s" % (l,
    d["chain"]["convtune_us"], d["chain"]["cudnn_fp16_us"], d["sum_of_nodes"]["convtune_us"],
    d.get("convtune_in_chain_sum_us"), d["all_exact"]))
print("node" + "".join("  %14s" % (l[:8] + " a/in") for l in labels) + "  floor")
N = [d["nodes"] for d in D.values()]
for i, n in enumerate(N[0]):
  if not n["runs"]: continue
  print("%-28s" % n["name"][:28] + "".join("  %6.2f %6.2f" % (M[i]["convtune_us"] or -1, M[i].get("convtune_in_chain_us") or -1) for M in N) + "  %5.2f" % n["floor_us"])
PY
  [ -n "${INCHAIN_KEEP:-}" ] || { cd $OUT && tar czf inchainrun-b$MB.tgz inchain-* && rm -f inchain-*; } ;;
dwcheck)
  for b in 1 3 32; do
    ( cd build-rel && CK_RUN_CASE=grouped CT_DISPATCH_DB=/tmp/t.db CT_DISPATCH_BATCH=$b timeout ${DWCHECK_S:-250} ./test_gpu_dispatch > $OUT/gd-b$b.log 2>&1; echo "rc=$?" >> $OUT/gd-b$b.log ) &
  done
  wait
  for b in 1 3 32; do echo "dispatch b$b: $(grep -E 'Checks|rc=' $OUT/gd-b$b.log | tr '\n' ' ') $(grep -c ' exact$' $OUT/gd-b$b.log) exact"; grep -vE ' exact$|^Running|^database|Checks|rc=' $OUT/gd-b$b.log | head -5; echo "  of them served by conv2d_nhwc_dw / conv3d_ndhwc_dw: $(grep -cE '_dw +exact$' $OUT/gd-b$b.log), by the pointwise mma ones: $(grep -cE '_pw_mma +exact$' $OUT/gd-b$b.log)"; done
  cd $OUT && tar czf dwcheck.tgz gd-*.log && rm -f gd-*.log ;;
dwtune)
  s=$(date +%s)
  dwtune
  cd $OUT && tar czf dwtune.tgz tune-* && rm -f tune-* ;;
san)
  # compute-sanitizer (memcheck, racecheck, synccheck, initcheck) over the depthwise mma family,
  # one launch a config (build-rel/config_run): TMA and cp.async windows, prefetched tiles, a
  # data zero point with a residual and uint8, 3D
  K2=conv2d-nhwc-i8.i8.i8-n2-c48-k48-15x13-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-g48
  K2Z=conv2d-nhwc-u8.i8.u8-n2-c40-k40-13x11-r5x5-s2x2-p2x2.2x2-d1x1-zd-bias-qc-res-g40
  K3=conv3d-ndhwc-i8.i8.i32-n1-c32-k32-4x9x9-r3x3x3-s1x1x1-p1x1x1.1x1x1-d1x1x1-g32
  G2=conv2d-nhwc-i8.i8.i8-n2-c128-k128-9x9-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-res-g32
  G2Z=conv2d-nhwc-u8.i8.u8-n1-c80-k40-7x9-r3x3-s2x2-p1x1.1x1-d1x1-zd-bias-qc-g5
  G3=conv3d-ndhwc-i8.i8.i32-n2-c64-k64-1x4x4-r3x3x3-s1x1x1-p1x1x1.1x1x1-d1x1x1-g2
  csan conv2d_nhwc_dw_mma $K2 '{"tile_w":8,"tile_h":4,"n_tiles":2,"warps_m":2,"m_unroll":1,"blocks_per_sm":2,"tiles":2,"tma":1}' memcheck racecheck synccheck initcheck
  csan conv2d_nhwc_dw_mma $K2 '{"tile_w":16,"tile_h":4,"n_tiles":4,"warps_m":1,"m_unroll":2,"blocks_per_sm":2,"tiles":4,"tma":0}' memcheck racecheck synccheck initcheck
  csan conv2d_nhwc_dw_mma $K2Z '{"tile_w":4,"tile_h":8,"n_tiles":1,"warps_m":2,"m_unroll":1,"blocks_per_sm":2,"tiles":2,"tma":0}' memcheck racecheck synccheck initcheck
  csan conv3d_ndhwc_dw_mma $K3 '{"tile_w":8,"tile_h":4,"n_tiles":4,"warps_m":1,"m_unroll":2,"blocks_per_sm":2,"tiles":2,"tma":1}' memcheck racecheck synccheck initcheck
  csan conv2d_nhwc_grouped_mma $G2 '{"tile_w":8,"tile_h":4,"n_tiles":4,"warps_m":2,"m_unroll":1,"blocks_per_sm":2,"tiles":2,"tma":1,"sg_c":8,"n_per_warp":1}' memcheck racecheck synccheck initcheck
  csan conv2d_nhwc_grouped_mma $G2 '{"tile_w":4,"tile_h":8,"n_tiles":8,"warps_m":1,"m_unroll":2,"blocks_per_sm":2,"tiles":4,"tma":0,"sg_c":16,"n_per_warp":2}' memcheck racecheck synccheck initcheck
  csan conv2d_nhwc_grouped_mma $G2Z '{"tile_w":4,"tile_h":4,"n_tiles":4,"warps_m":1,"m_unroll":1,"blocks_per_sm":2,"tiles":2,"tma":0,"sg_c":16,"n_per_warp":1}' memcheck racecheck synccheck initcheck
  csan conv3d_ndhwc_grouped_mma $G3 '{"tile_w":4,"tile_h":4,"n_tiles":4,"warps_m":1,"m_unroll":1,"blocks_per_sm":1,"tiles":2,"tma":1,"sg_c":32,"n_per_warp":1}' memcheck racecheck synccheck initcheck ;;
gmma)
  s=$(date +%s)
  gt_cases _dw_mma _grouped_mma
  gtune
  cd $OUT && tar czf gmma.tgz *.log tune-* && rm -f *.log tune-* ;;
gtune)
  s=$(date +%s)
  gtune
  cd $OUT && tar czf gtune.tgz tune-* && rm -f tune-* ;;
gdense)
  # the dense layers of 8, 16 or 32 input channels on conv2d_nhwc_grouped_mma: MobileNetV2's set
  # (int8 out, as the benchmark) and the model's nodes (ONNX rounding) at batch 32 and 1
  s=$(date +%s)
  Q="--batch 32 --out int8 --epilogue bias,qc --trials 80 --early-stopping 32 --time-budget 5"
  tq mnv2-dense --set mobilenetv2 --layout nhwc $Q --template conv2d_nhwc_grouped_mma
  tq model-b32-dense --model $MODEL --batch 32 --template conv2d_nhwc_grouped_mma --trials 80 --early-stopping 32 --time-budget 40
  tq model-b1-dense --model $MODEL --batch 1 --template conv2d_nhwc_grouped_mma --trials 48 --early-stopping 24 --time-budget 30
  cd $OUT && tar czf gdense.tgz tune-* && rm -f tune-* ;;
savedb)
  python3 -c "import sqlite3; c = sqlite3.connect('/tmp/t.db'); c.execute('pragma wal_checkpoint(TRUNCATE)')"
  xz -T4 -c /tmp/t.db > $OUT/t.db.xz ;;
model)
  # the model's depthwise layers (ONNX Runtime's rounding) on the depthwise mma templates
  s=$(date +%s)
  tq model-b32 --model $MODEL --batch 32 --template conv2d_nhwc_dw_mma --trials 80 --early-stopping 32 --time-budget 50
  tq model-b1 --model $MODEL --batch 1 --template conv2d_nhwc_dw_mma --trials 48 --early-stopping 24 --time-budget 40
  cd $OUT && tar czf model-tune.tgz tune-* && rm -f tune-* ;;
bench)
  s=$(date +%s)
  for set in $SETS; do
    l=nhwc; case $set in csn_dw3d|resnext3d_g) l=ndhwc ;; esac
    timeout 120 $B bench --set $set --batch 32 --layout $l --db /tmp/t.db --results-dir $OUT --json-out $OUT/$set-b32.json \
      > $OUT/$set-b32.md 2> $OUT/$set-b32.err
    echo "bench $set rc=$? at $(( $(date +%s) - s )) s"; summary $OUT/$set-b32.json
  done
  for b in 32 1; do
    timeout 120 $B bench --model $MODEL --batch $b --db /tmp/t.db --results-dir $OUT --json-out $OUT/model-b$b.json \
      > $OUT/model-b$b.md 2> $OUT/model-b$b.err
    echo "bench model b$b rc=$?"; grep -E "as fast as|images per second|convtune / side|exact" $OUT/model-b$b.md | head -6
  done
  # every layer of the sets as the tuned database serves it, exact at batch 1, 3 and 32
  for b in 1 3 32; do
    ( cd build-rel && CK_RUN_CASE=grouped CT_DISPATCH_DB=/tmp/t.db CT_DISPATCH_BATCH=$b timeout 200 ./test_gpu_dispatch > $OUT/gd-b$b.log 2>&1; echo "rc=$?" >> $OUT/gd-b$b.log ) &
  done
  wait
  for b in 1 3 32; do echo "dispatch b$b: $(grep -E 'Checks|rc=' $OUT/gd-b$b.log | tr '\n' ' ') $(grep -c ' exact$' $OUT/gd-b$b.log) exact"; grep -vE ' exact$|^Running|^database|Checks|rc=' $OUT/gd-b$b.log | head -5; done
  cd $OUT && tar czf bench.tgz *.md *.json *.err *.log && find . -type f ! -name '*.tgz' ! -name '*.xz' -delete ;;
esac
true

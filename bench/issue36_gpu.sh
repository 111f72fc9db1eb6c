#!/bin/bash
# issue36_gpu.sh PHASE...: issue 36 (the int8 network path) on the GPU machine, from the
# repository root, with build-rel built here and carried (its commit: `build-rel/convtune -V`).
# Results in $OUT; each phase tars its files (a call brings back a few files).
#   models        ResNet-50 qdq-s8, qdq-u8 and qdq-a8 (scripts/models/make_models.py, symbolic
#                 batch) into /tmp/models, unless there
#   model V B S   ResNet-50 qdq-V at batch B: tuned as one unit for S seconds into /tmp/m-V-bB.db
#                 (kept across phases of a call: a second run tunes on), then `bench --model`
#                 against cuDNN in the same run; prints the chain's summary
#   set S B       a shipped set (resnet50: nhwc; resnet3d18: ndhwc) at batch B, tuned into
#                 /tmp/set-S-bB.db with h200-final's budgets (int32, then int8 output with bias
#                 and per-channel scales), then `bench --set` against cuDNN: the issue's set
#                 targets (ResNet-50 b16's 23 layers, ResNet3D-18 b8) and its regressions
#   tests         the GPU cases that issue 36's changes touch, in parallel: test_gpu_templates
#                 nhwc8, pingpong and nhwc_zpad on the channels-last wgmma templates (16 configs a
#                 workload), stem8 on the 3D stem (8), and every family's onnx rounding (onnx,
#                 onnx_stem, grouped_onnx: quant.cuh's conversions; 2 configs a workload);
#                 test_gpu_quant
#   tests3d       the 3D channels-last wgmma template's nhwc8 and nhwc_zpad cases (8 configs a
#                 workload) and test_gpu_quant, which tests' parallel run left unfinished
#   onnxtests     every family's onnx rounding (onnx, onnx_stem, grouped_onnx, 2 configs a
#                 workload) and the channels-last wgmma templates' onnx case with 3 a workload
#   prof T K C    ncu (--set full, the clocks left alone) over one launch of template T's
#                 config C (JSON) on workload key K (build-rel/config_run), e.g. a residual
#                 layer's tuned config from a results folder's tune-*.json: $OUT/prof-N.ncu-rep
#                 and its details as text
#   cfg T K C     template T's config C on workload key K timed alone (build-rel/config_run, a
#                 CUDA graph of 400 launches, the best of 5 replays): a tuned config of an
#                 earlier commit against this one's, on the same card
#   savedb V B    /tmp/m-V-bB.db as $OUT/m-V-bB.db.xz
#   stems         the stems' packed stages: test_gpu_templates stem, stem8 and onnx_stem on the
#                 wgmma stems (GT_N configs a workload, default 10); each stem's earlier best config timed
#                 (config_run); each stem tuned 96 trials into /tmp/rp.db, its best; then
#                 compute-sanitizer memcheck, racecheck and synccheck over two packed configs
#                 (two parts a pixel, 3D, uint8 with a zero point and a residual; int32 with
#                 a_prefetch, rows not word-aligned). At b8b34e5, where packing was the knob
#                 row_pack, the phase rowpack timed each config both ways
#                 (git show b8b34e5:bench/issue36_gpu.sh)
#   regress TAGS  the no-regression target against h200-final (ed77a80): its four set tunings
#                 (ResNet-50 b1 and b16, ResNet3D-18 b1 and b8) again with its budgets, int32
#                 then 8-bit output, each database seeded with h200-final's best configs as
#                 retired records (bench/regress36.py seed), so that each task measures the
#                 earlier best first, as an upgraded user's database does; then `bench --set`
#                 and each layer against h200-final's CSV (regress36.py compare). One GPU a
#                 set, as many sets at once as the host has GPUs (up to four), the cores
#                 shared among them. TAGS: all, or a comma list of r50b16, r50b1, r3d8, r3d1.
#                 REG_T (default 480): the seconds after which a set's 8-bit tuning is cut
#                 (it gets at least 30)
#   ab TAG DIR    the same target on one card without the tuner (regress36.py ab): each
#                 layer's h200-final best timed by ed77a80's library (build-old/config_run_old,
#                 made here by `sh bench/build_old_config_run.sh ed77a80` and carried) and by
#                 this build, and the best of DIR/tune-TAG-*.json by this build (abx for one set)
#   abx DIR       ab for all four sets at once, every GPU a part of each (AB_PART); first,
#                 the layers named in AB_SUSPECTS ("TAG:layer,layer TAG:layer ...") on this
#                 build and on each build-old/config_run_VAR of AB_VARS (same configs only;
#                 "TAG:" with no layers: the whole set);
#                 the merged rows in abx/*.json, a summary line each. AB_GPUS="0 1": those
#                 GPUs only; AB_SETS="r3d1 r3d8": those sets only
#   forms TAGS    regress36.py forms: each residual-free 8-bit layer's h200-final best config
#                 on this build with its values' clamp top at 127 (the saturating epilogue form
#                 may apply) and at 126 (it may not); TAGS as regress's
#   pads TAG LAYERS DIR  regress36.py pads on this call's GPU: the named layers of set TAG (as
#                 regress's TAGS; "name" or "name:int32,name:int8") timed with the buffers at
#                 several offsets (config_run's CT_ALLOC_PAD), the earlier best on ed77a80's
#                 build and this one, and DIR/tune-TAG-*.json's best on this one; PAD_ROUNDS
#                 rounds (2). The change is between the means over the offsets
# Phases run in order: e.g. `models model s8 256 150 model s8 16 90`.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
# the commit: CT_COMMIT when set, else the one the binary names (`-V`: build-rel/COMMIT, written
# by hand, went stale when HEAD moved without it)
export CT_SOURCE_DIR=$PWD
export CT_COMMIT=${CT_COMMIT:-$(build-rel/convtune -V 2>/dev/null | awk '$1 == "commit" {print $2}')}
B=build-rel/convtune
M=/tmp/models
mkdir -p $M
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
s=$(date +%s)
# pack NAME: $OUT's loose files (not the archives, databases or make.log) into NAME.tgz
pack() {
  (cd $OUT && find . -maxdepth 1 -type f ! -name '*.tgz' ! -name '*.xz' ! -name make.log |
    sed 's|^./||' > /tmp/l && tar czf $1.tgz -T /tmp/l && xargs rm -f < /tmp/l)
}
while [ $# -gt 0 ]; do
  case $1 in
  models)
    shift
    [ -f $M/resnet50.qdq-a8.onnx ] ||
      timeout 300 python3 scripts/models/make_models.py --out $M --models resnet50 --variants s8,u8,a8 \
        --calib 2 >> $OUT/make.log 2>&1 || { echo "make_models failed"; tail -5 $OUT/make.log; }
    echo "models at $(( $(date +%s) - s )) s: $(ls $M | tr '\n' ' ')" ;;
  model)
    v=$2 n=$3 budget=$4; shift 4
    tag=resnet50-$v-b$n f=$M/resnet50.qdq-$v.onnx
    timeout 560 $B tune --model $f --batch $n --time-budget $budget --db /tmp/m-$v-b$n.db -q --json \
      > $OUT/tune-$tag.json 2> $OUT/tune-$tag.err
    echo "$tag: tune rc=$? at $(( $(date +%s) - s )) s; $(tail -1 $OUT/tune-$tag.err)"
    timeout 300 $B bench --model $f --batch $n --db /tmp/m-$v-b$n.db --results-dir $OUT \
      --json-out $OUT/bench-$tag.json > $OUT/bench-$tag.md 2> $OUT/bench-$tag.err
    echo "  bench rc=$? at $(( $(date +%s) - s )) s"
    grep -E "every node|not every|chain, one|images per|as fast" $OUT/bench-$tag.md | head -5
    python3 - $OUT/bench-$tag.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
nodes = d.get("nodes") or d.get("layers") or []
rows = {}
for n in nodes:
    k = n.get("workload") or n.get("key")
    r = rows.setdefault(k, [0, 0.0, 0.0, 0.0])
    r[0] += 1; r[1] += n.get("convtune_us") or 0; r[2] += n.get("cudnn_fp16_us") or 0; r[3] += n.get("floor_us") or 0
for k, r in sorted(rows.items(), key=lambda kv: -kv[1][1]):
    print("  %2d x %-62s ct %8.1f fp16 %8.1f floor %8.1f (%3.0f%%)" % (r[0], k[:62], r[1], r[2], r[3], 100 * r[3] / r[1] if r[1] else 0))
PY
    pack model-$tag ;;
  set)
    set=$2 n=$3; shift 3
    l=nhwc; [ $set = resnet3d18 ] && l=ndhwc
    db=/tmp/set-$set-b$n.db tag=$set-b$n
    timeout 560 $B tune --set $set --batch $n --layout $l --trials 150 --early-stopping 40 \
      --time-budget 15 --db $db -q --json > $OUT/tune-$tag-i32.json 2> $OUT/tune-$tag-i32.err
    echo "$tag int32: tune rc=$? at $(( $(date +%s) - s )) s"
    timeout 560 $B tune --set $set --batch $n --layout $l --out int8 --epilogue bias,qc --trials 100 \
      --early-stopping 30 --time-budget 12 --db $db -q --json > $OUT/tune-$tag-i8.json 2> $OUT/tune-$tag-i8.err
    echo "$tag int8: tune rc=$? at $(( $(date +%s) - s )) s"
    timeout 300 $B bench --set $set --batch $n --layout $l --db $db --results-dir $OUT \
      --json-out $OUT/bench-$tag.json > $OUT/bench-$tag.md 2> $OUT/bench-$tag.err
    echo "  bench rc=$? at $(( $(date +%s) - s )) s"
    python3 - $OUT/bench-$tag.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); L = d["layers"]
def s(f): return sum(l.get(f) or 0 for l in L)
print("  %s b%s: int8 out %.1f us, int32 %.1f, cuDNN fp16 %.1f, int8 floor %.1f" % (
    d.get("set"), d.get("batch"), s("convtune_i8_us"), s("convtune_us"), s("cudnn_fp16_us"), s("floor_i8_us")))
PY
    pack set-$tag ;;
  regress|ab|abx|forms|pads)
    # regress TAGS: the four jobs (all, or a comma list of r50b16, r50b1, r3d8, r3d1), one GPU
    # each, as many at once as the host has GPUs (up to four); ab TAG DIR: regress36.py ab for one job, its new tuning
    # documents from DIR (a regress run's tune-TAG-*.json), old build at build-old/config_run_old
    ph=$1 sel=$2; shift 2
    F=bench/results/h200-final
    ngpu=$(nvidia-smi -L | wc -l)
    par=$(( ngpu >= 4 ? 4 : ngpu < 1 ? 1 : ngpu ))   # regress: jobs at once, one a GPU
    nb=$(( $(nproc) / par ))
    # TAG SET BATCH LAYOUT OLD_CSV "INT32 BUDGET" "INT8 BUDGET" SEED_DOC...
    rjob() {
      local tag=$1 set=$2 n=$3 l=$4 old=$5 b32=$6 b8=$7 db=/tmp/reg-$1.db t0=$(date +%s); shift 7
      rm -f $db*
      python3 bench/regress36.py seed "$@" > $OUT/seed-$tag.jsonl &&
        $B import --db $db $OUT/seed-$tag.jsonl > $OUT/import-$tag.log 2>&1 || echo "$tag: seed failed"
      timeout 250 $B tune --set $set --batch $n --layout $l $b32 --builders $nb --db $db -q --json \
        > $OUT/tune-$tag-i32.json 2> $OUT/tune-$tag-i32.err
      echo "$tag int32: tune rc=$? at $(( $(date +%s) - s )) s"
      local left=$(( ${REG_T:-480} - $(date +%s) + t0 )); [ $left -ge 30 ] || left=30
      timeout $left $B tune --set $set --batch $n --layout $l --out int8 \
        --epilogue bias,qc $b8 --builders $nb --db $db -q --json > $OUT/tune-$tag-i8.json 2> $OUT/tune-$tag-i8.err
      echo "$tag int8: tune rc=$? at $(( $(date +%s) - s )) s"
      timeout 100 $B bench --set $set --batch $n --layout $l --db $db --results-dir $OUT \
        --json-out $OUT/bench-$tag.json --csv-out $OUT/$set-b$n-$l.csv > $OUT/bench-$tag.md 2> $OUT/bench-$tag.err
      echo "$tag: bench rc=$? at $(( $(date +%s) - s )) s"
      python3 bench/regress36.py compare $OUT/bench-$tag.json $old > $OUT/regress-$tag.md
      echo "$tag: $(tail -1 $OUT/regress-$tag.md)"
      $B list --db $db > $OUT/list-$tag.txt 2>&1
    }
    jobs36=(
      "r50b16 resnet50 16 nhwc $F/call9-ed77a80/resnet50-b16-nhwc.csv|--trials 150 --early-stopping 40 --time-budget 15|--trials 100 --early-stopping 30 --time-budget 12|$F/call9-ed77a80/tune-r50b16.json $F/call9-ed77a80/tune-r50b16-i8.json"
      "r50b1 resnet50 1 nhwc $F/call10-ed77a80/resnet50-b1-nhwc.csv|--trials 150 --early-stopping 40 --time-budget 15|--trials 40 --early-stopping 12 --time-budget 10|$F/call10-ed77a80/tune-r50b1.json $F/call10-ed77a80/tune-r50b1-i8.json"
      "r3d8 resnet3d18 8 ndhwc $F/call10-ed77a80/resnet3d18-b8-ndhwc.csv|--trials 300 --early-stopping 100 --time-budget 25|--trials 100 --early-stopping 30 --time-budget 12|$F/call10-ed77a80/tune-r3d8.json"
      "r3d1 resnet3d18 1 ndhwc $F/call10-ed77a80/resnet3d18-b1-ndhwc.csv|--trials 600 --early-stopping 200 --time-budget 25|--trials 100 --early-stopping 30 --time-budget 12|$F/call10-ed77a80/tune-r3d1.json"
    )
    if [ $ph = ab ]; then
      # ab TAG DIR: abx for that set alone, on this call's GPU
      export AB_SETS=$sel AB_SUSPECTS= AB_GPUS=${AB_GPUS:-${CUDA_VISIBLE_DEVICES:-0}}
      ph=abx sel=$1; shift
    fi
    if [ $ph = pads ]; then
      # pads TAG LAYERS DIR: regress36.py pads for those layers of one set, on this call's GPU
      lay=$1 dir=$2; shift 2
      case " r50b16 r50b1 r3d8 r3d1 " in *" $sel "*) ;; *) echo "pads: no set '$sel' (r50b16, r50b1, r3d8, r3d1)" ;; esac
      for j in "${jobs36[@]}"; do
        IFS='|' read -r a b32 b8 docs <<< "$j"; [ "${a%% *}" = "$sel" ] || continue
        AB_QUANT_DIR=${AB_QUANT_DIR:-/tmp/abx-quant} AB_SET=$sel AB_JSON=$OUT/pads-$sel.json timeout 500 \
          python3 bench/regress36.py pads build-old/config_run_old build-rel/config_run ${PAD_ROUNDS:-2} $lay \
          $docs -- $dir/tune-$sel-i32.json $dir/tune-$sel-i8.json > $OUT/pads-$sel.md 2> $OUT/pads-$sel.err
        echo "pads $sel rc=$? at $(( $(date +%s) - s )) s"; cat $OUT/pads-$sel.md
      done
      pack pads-$sel
    elif [ $ph = forms ]; then
      # forms TAGS: regress36.py forms on this build, one set a GPU where the host has four
      export AB_QUANT_DIR=${AB_QUANT_DIR:-/tmp/forms-quant}
      i=0 ngpu=$(nvidia-smi -L | wc -l)
      for j in "${jobs36[@]}"; do
        IFS='|' read -r a b32 b8 docs <<< "$j"; t=${a%% *}
        case ",$sel," in ,all,|*,"$t",*) ;; *) continue ;; esac
        ( export CUDA_VISIBLE_DEVICES=$(( i % ngpu ))
          AB_JSON=$OUT/forms-$t.json timeout 500 python3 bench/regress36.py forms build-rel/config_run 2 \
            $docs > $OUT/forms-$t.md 2> $OUT/forms-$t.err
          echo "forms $t rc=$? at $(( $(date +%s) - s )) s" ) &
        i=$((i + 1))
        [ $ngpu -ge 4 ] || wait
      done
      wait
      cat $OUT/forms-*.md
      pack forms
    elif [ $ph = abx ]; then
      # one set of requantization values per key for every build and variant (config_run's
      # CT_QUANT_FILE): the first run of a key writes them
      export AB_QUANT_DIR=${AB_QUANT_DIR:-/tmp/abx-quant}
      dir=$sel gpus=${AB_GPUS:-$(seq 0 $(( $(nvidia-smi -L | wc -l) - 1 )))} i=0
      ngpu=$(echo $gpus | wc -w)
      for g in $gpus; do
        ( export CUDA_VISIBLE_DEVICES=$g AB_PART=$i/$ngpu
          abj() { # NAME BIN LAYERS DOCS... [-- NEW DOCS...]
            local n=$1 bin=$2 lay=$3; shift 3
            AB_LAYERS=$lay AB_JSON=$OUT/abx-$n-p$g.json timeout 500 python3 bench/regress36.py ab \
              ${AB_OLD:-build-old/config_run_old} $bin 2 "$@" > $OUT/abx-$n-p$g.md 2> $OUT/abx-$n-p$g.err
            echo "gpu $g $n rc=$? at $(( $(date +%s) - s )) s: $(tail -1 $OUT/abx-$n-p$g.md)"
          }
          for p in ${AB_SUSPECTS:-}; do
            for j in "${jobs36[@]}"; do
              IFS='|' read -r a b32 b8 docs <<< "$j"
              [ "${a%% *}" = "${p%%:*}" ] || continue
              for v in this ${AB_VARS:-}; do
                bin=build-old/config_run_$v; [ $v = this ] && bin=${AB_THIS:-build-rel/config_run}
                abj sus-${p%%:*}-$v $bin "${p#*:}" $docs --
              done
            done
          done
          for j in "${jobs36[@]}"; do
            IFS='|' read -r a b32 b8 docs <<< "$j"; t=${a%% *}
            case " ${AB_SETS:-$t} " in *" $t "*) ;; *) continue ;; esac
            abj $t ${AB_THIS:-build-rel/config_run} "" $docs -- $dir/tune-$t-i32.json $dir/tune-$t-i8.json
          done ) > $OUT/abx-gpu$g.log 2>&1 &
        i=$((i + 1))
      done
      wait
      cat $OUT/abx-gpu*.log
      python3 - $OUT <<'PY'
import glob, json, os, re, sys
parts = {}
for f in sorted(glob.glob(sys.argv[1] + "/abx-*-p*.json")):
    n = re.sub(r"-p\d+\.json$", "", os.path.basename(f))[4:]
    parts.setdefault(n, []).extend(json.load(open(f)))
for n, rows in sorted(parts.items()):
    os.makedirs(sys.argv[1] + "/abx", exist_ok=True)
    json.dump(rows, open("%s/abx/%s.json" % (sys.argv[1], n), "w"), indent=1)
    same = [r for r in rows if r["this_build_same_config_us"] and r["earlier_build_us"]]
    ch = [r["this_build_same_config_us"] / r["earlier_build_us"] - 1 for r in same]
    over = ["%s %s %+.1f%%" % (r["layer"], r["output"], 100 * c) for r, c in zip(same, ch) if c > 0.02]
    tov = ["%s %s %s" % (r["layer"], r["output"], "n/a" if r["change"] is None else "%+.1f%%" % (100 * r["change"]))
           for r in rows if r["change"] is None or r["change"] > 0.02]
    print("%-22s %3d rows; same config: mean %+.2f%%, over 2%%: %s; change over 2%%: %s" % (
        n, len(rows), 100 * sum(ch) / max(len(ch), 1), ", ".join(over) or "none", ", ".join(tov) or "none"))
PY
      pack abx
    else
      i=0
      for j in "${jobs36[@]}"; do
        IFS='|' read -r a b32 b8 docs <<< "$j"
        case ",$sel," in ,all,|*,"${a%% *}",*) ;; *) continue ;; esac
        ( export CUDA_VISIBLE_DEVICES=$(( i % par )); rjob $a "$b32" "$b8" $docs ) > $OUT/regress-job$i.log 2>&1 &
        i=$((i + 1))
        [ $(( i % par )) -ne 0 ] || wait
      done
      wait
      cat $OUT/regress-job*.log 2>/dev/null
      pack regress-${sel//,/-}
    fi ;;
  tests|tests3d|onnxtests)
    ph=$1; shift
    gt() { # CASE FILTER CONFIGS
      ( cd build-rel && CT_GT_TEMPLATE=$2 CK_RUN_CASE=$1 timeout 270 ./test_gpu_templates $3 \
          > $OUT/gt-$1.log 2>&1; echo "rc=$?" >> $OUT/gt-$1.log ) &
    }
    if [ $ph = tests3d ]; then
      for c in nhwc8 nhwc_zpad; do gt $c conv3d_ndhwc_wgmma 8; done
    elif [ $ph = onnxtests ]; then
      for c in onnx onnx_stem grouped_onnx; do gt $c "" 10; done
      ( cd build-rel && CT_GT_TEMPLATE=hwc_wgmma CK_RUN_CASE=onnx timeout 270 ./test_gpu_templates 16 \
          > $OUT/gt-onnx-wgmma.log 2>&1; echo "rc=$?" >> $OUT/gt-onnx-wgmma.log ) &
    else
    for c in nhwc8 pingpong nhwc_zpad; do gt $c hwc_wgmma 16; done
    gt stem8 conv3d_ndhwc_wgmma_stem 8
    for c in onnx onnx_stem grouped_onnx; do gt $c "" 10; done
    fi
    [ $ph = onnxtests ] ||
      ( cd build-rel && timeout 270 ./test_gpu_quant > $OUT/gt-quant.log 2>&1; echo "rc=$?" >> $OUT/gt-quant.log ) &
    wait
    echo "tests at $(( $(date +%s) - s )) s"
    for f in $OUT/gt-*.log; do
      echo "== $(basename $f): $(grep -E 'Checks|rc=' $f | tr '\n' ' ')"
      grep -E "exact over|FAIL|F:|E:" $f | head -8 | cut -c1-200
    done
    (cd $OUT && tar czf $ph.tgz gt-*.log && rm -f gt-*.log) ;;
  prof)
    np=$(ls $OUT/prof-*.ncu-rep 2>/dev/null | wc -l)
    timeout 300 ncu --clock-control none --set full -c 1 -o $OUT/prof-$np build-rel/config_run "$2" "$3" "$4" \
      > $OUT/prof-$np.log 2>&1
    echo "prof $np rc=$? at $(( $(date +%s) - s )) s: $2 $3"
    ncu --import $OUT/prof-$np.ncu-rep --page details > $OUT/prof-$np.txt 2>&1
    grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Issue Slots Busy|Achieved Occupancy|Registers Per|No Eligible|One or More" \
      $OUT/prof-$np.txt | head -12
    shift 4 ;;
  cfg)
    echo "cfg $2 $3 $4: $(timeout 120 build-rel/config_run "$2" "$3" "$4" 400 2>&1 | tail -1)"
    shift 4 ;;
  stems)
    shift
    for c in stem stem8 onnx_stem; do
      ( cd build-rel && CT_GT_TEMPLATE=_wgmma_stem CK_RUN_CASE=$c timeout 300 ./test_gpu_templates ${GT_N:-10} \
          > $OUT/rp-gt-$c.log 2>&1; echo "rc=$?" >> $OUT/rp-gt-$c.log ) &
    done
    wait
    for c in stem stem8 onnx_stem; do echo "$c: $(grep -E 'Checks|rc=' $OUT/rp-gt-$c.log | tr '\n' ' ')"; done
    R50=conv2d-nhwc-i8.i8.i8-n256-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1-bias-qc-onnx
    R16=conv2d-nhwc-i8.i8.i8-n16-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1-bias-qc-onnx
    R16I=conv2d-nhwc-i8.i8.i32-n16-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1
    MB=conv2d-nhwc-i8.i8.i8-n32-c3-k32-224x224-r3x3-s2x2-p1x1.1x1-d1x1-bias-qc-onnx
    R3=conv3d-ndhwc-i8.i8.i8-n8-c3-k64-16x112x112-r3x7x7-s1x2x2-p1x3x3.1x3x3-d1x1x1-bias-qc
    R3I=conv3d-ndhwc-i8.i8.i32-n8-c3-k64-16x112x112-r3x7x7-s1x2x2-p1x3x3.1x3x3-d1x1x1
    T2=conv2d_nhwc_wgmma_stem T3=conv3d_ndhwc_wgmma_stem
    rp() { # TAG TEMPLATE KEY CONFIG
      echo "cfg $1: $(timeout 120 build-rel/config_run $2 $3 "$4" 400 2>&1 | tail -1)"
    }
    O8='"block_m":128,"block_n":64,"warpgroups":'
    rp r50-b256 $T2 $R50 "{${O8}1,\"a_buffers\":1,\"blocks_per_sm\":4,\"out_stage\":1}"
    rp r50-b16 $T2 $R16 "{${O8}2,\"a_buffers\":1,\"blocks_per_sm\":2,\"out_stage\":1}"
    rp r50-b16-i32 $T2 $R16I "{${O8}2,\"a_buffers\":1,\"blocks_per_sm\":1,\"a_prefetch\":1,\"out_tma\":1}"
    rp mbv2-b32 $T2 $MB '{"block_m":128,"block_n":32,"warpgroups":1,"a_buffers":2,"blocks_per_sm":4,"out_stage":1}'
    rp r3d-b8 $T3 $R3 "{${O8}2,\"a_buffers\":2,\"blocks_per_sm\":1,\"out_stage\":1}"
    rp r3d-b8-m64 $T3 $R3 '{"block_m":64,"block_n":64,"warpgroups":2,"a_buffers":2,"blocks_per_sm":2,"out_stage":1}'
    rp r3d-b8-i32 $T3 $R3I "{${O8}2,\"a_buffers\":2,\"blocks_per_sm\":1,\"a_prefetch\":0,\"out_tma\":1}"
    echo "config_run at $(( $(date +%s) - s )) s"
    rm -f /tmp/rp.db*
    for k in "$R50 $T2" "$R16 $T2" "$R16I $T2" "$MB $T2" "$R3 $T3" "$R3I $T3"; do
      read -r key tpl <<< "$k"
      timeout 120 $B tune $key --template $tpl --trials 96 --seed 1 --db /tmp/rp.db -q --json \
        >> $OUT/rp-tune.json 2>> $OUT/rp-tune.err
      echo "tune ${key:0:40}.. rc=$? at $(( $(date +%s) - s )) s"
    done
    python3 - <<'PY' | tee $OUT/rp-best.txt
import json, sqlite3
c = sqlite3.connect("/tmp/rp.db")
rows = c.execute("select w.key, r.config_json, r.median_us, r.outcome from trials r join workloads w on "
                 "w.id = r.workload_id join templates t on t.id = r.template_id").fetchall()
best, bad = {}, 0
for k, cj, us, oc in rows:
  if oc != "OK": bad += 1; continue
  g = (k,)
  if g not in best or us < best[g][0]: best[g] = (us, cj)
print("trials %d, not OK %d" % (len(rows), bad))
for g in sorted(best): print("  %s: %.2f us %s" % (g + best[g]))
PY
    CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    for tc in "$T3 conv3d-ndhwc-u8.i8.u8-n2-c3-k64-4x30x33-r3x7x7-s1x2x2-p1x3x3.1x3x3-d1x1x1-zd-bias-qc-res {\"block_m\":64,\"block_n\":64,\"warpgroups\":2,\"a_buffers\":1,\"blocks_per_sm\":1,\"out_stage\":1}" \
              "$T2 conv2d-nhwc-i8.i8.i32-n2-c3-k64-61x58-r7x7-s2x2-p3x3.3x3-d1x1 {\"block_m\":128,\"block_n\":64,\"warpgroups\":2,\"a_buffers\":1,\"blocks_per_sm\":1,\"a_prefetch\":1,\"out_tma\":0}"; do
      read -r tpl key cfg <<< "$tc"
      for tool in memcheck racecheck synccheck; do
        out=$($CS --tool $tool --error-exitcode 9 build-rel/config_run $tpl $key "$cfg" 2>&1); rc=$?
        echo "$tool $tpl $key: $(echo "$out" | grep -E "SUMMARY|us" | tail -2 | tr '\n' ' ') rc=$rc"
      done
    done
    pack stems ;;
  savedb)
    v=$2 n=$3; shift 3
    python3 -c "import sqlite3; c = sqlite3.connect('/tmp/m-$v-b$n.db'); c.execute('pragma wal_checkpoint(TRUNCATE)')"
    xz -T4 -c /tmp/m-$v-b$n.db > $OUT/m-$v-b$n.db.xz ;;
  *) echo "unknown phase $1"; exit 2 ;;
  esac
done

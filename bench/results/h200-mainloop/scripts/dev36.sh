#!/bin/sh
# call 1 (2026-11-26 session): a_regs: GPU tests, A/B probe, ResNet-50 b16 int32 tuned + benched
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$DEV"
B=build-rel O=$OUT C=$(cat bench/work/commit)
(cd $B && CK_RUN_CASE=aregs timeout 200 ./test_gpu_templates 8) > $O/gpu-aregs.txt 2>&1; echo aregs $? $(el); grep -E "exact|FAIL|Checks" $O/gpu-aregs.txt | head -12
timeout 150 bench/work/probe bench/work/ar-probe.txt > $O/probe-ar.txt 2>&1; echo probe $? $(el)
timeout 130 $B/convtune tune --set resnet50 --batch 16 --layout nhwc --trials 150 --early-stopping 40 --time-budget 15 --db $O/r50b16.db -q --json > $O/tune-r50b16.json 2>$O/tune-r50b16.log; echo tune i32 $? $(el)
CT_COMMIT=$C timeout 60 $B/convtune bench --set resnet50 --batch 16 --layout nhwc --db $O/r50b16.db --results-dir $O --csv $O/resnet50-b16-nhwc.csv > $O/bench-resnet50-b16-nhwc.md 2>$O/bench.log; echo bench $? $(el)
grep -E "^\| \*\*sum" $O/bench-resnet50-b16-nhwc.md | cut -d'|' -f2,5,8,12
echo "wrong: $(grep -o '"WRONG_ANSWER":[[:space:]]*[0-9]*' $O/tune-r50b16.json | awk -F: '{s+=$2} END {print s+0}')"
python3 - $O <<'PY'
import json,sys
d=json.load(open(sys.argv[1]+'/tune-r50b16.json'))
for r in d: print(r['name'].split('/')[1][:18].ljust(18), '%6.2f'%r['best_us'], r['best_config'].get('a_regs','-'), r['best_config'].get('block_n'), r['best_config'].get('warpgroups'), r['best_config'].get('persistent'))
PY
rm -f $O/*.db-*; cd $O && tar czf all.tgz * && echo done $(el)

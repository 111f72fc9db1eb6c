#!/bin/sh
# call 1 (2026-11-26): ResNet3D-18 b1 tuned from scratch, an exhaustive grid over l2_3x3x3_s2, benchmarked; on an H200 also ResNet-50 b16 int32
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$DEV"
B=build-rel O=$OUT C=$(cat bench/work/commit)
bn() { CT_COMMIT=$C timeout $4 $B/convtune bench --set $1 --batch $2 --layout $3 --db $O/$5.db --results-dir $O --csv $O/$1-b$2-$3.csv > $O/bench-$1-b$2-$3.md 2>$O/bench-$5.log; echo bench $1 b$2 $? $(el); grep -E "^\| \*\*sum" $O/bench-$1-b$2-$3.md | cut -d'|' -f2,5,8,12; }
KEY=conv3d-ndhwc-i8.i8.i32-n1-c64-k128-16x56x56-r3x3x3-s2x2x2-p1x1x1.1x1x1-d1x1x1
timeout 100 $B/convtune tune --set resnet3d18 --batch 1 --layout ndhwc --trials 600 --early-stopping 200 --time-budget 25 --db $O/r3d1.db -q --json > $O/tune-r3d1.json 2>$O/tune-r3d1.log; echo tune r3d1 $? $(el)
$B/convtune query --db $O/r3d1.db $KEY > $O/q-before.txt 2>&1; cut -c1-300 $O/q-before.txt
timeout 280 $B/convtune tune $KEY --tuner grid --template conv3d_ndhwc_wgmma --trials 5000 --time-budget 260 --db $O/r3d1.db -q --json > $O/tune-grid.json 2>$O/tune-grid.log; echo grid $? $(el)
$B/convtune query --db $O/r3d1.db $KEY > $O/q-after.txt 2>&1; cut -c1-300 $O/q-after.txt
$B/convtune history --db $O/r3d1.db $KEY > $O/hist-l2s2.txt 2>&1; wc -l $O/hist-l2s2.txt
bn resnet3d18 1 ndhwc 30 r3d1
grep -h "l2_3x3x3_s2 " $O/bench-resnet3d18-b1-ndhwc.md | cut -d'|' -f2,5,12
case "$DEV" in *H200*)
  L=$(( 560 - $(el) )); [ $L -gt 90 ] && { timeout $((L-30)) $B/convtune tune --set resnet50 --batch 16 --layout nhwc --trials 150 --early-stopping 40 --time-budget 15 --db $O/r50b16.db -q --json > $O/tune-r50b16.json 2>$O/tune-r50b16.log; echo tune r50b16 $? $(el)
  bn resnet50 16 nhwc 25 r50b16; } ;;
esac
for f in $O/tune-*.json; do echo "$(basename $f) wrong: $(grep -o '"WRONG_ANSWER":[[:space:]]*[0-9]*' $f | awk -F: '{s+=$2} END {print s+0}')"; done
$B/convtune list --db $O/r3d1.db > $O/list-r3d1.txt 2>&1
rm -f $O/*.db-*; cd $O && tar czf all.tgz *.txt *.log *.json *.md *.csv *.db && rm -f *.txt *.log *.json *.csv *.db; echo done $(el)

#!/bin/sh
# final call E (2026-11-26, the stems' out_tma and a_prefetch): ResNet-50 b1 (int32, then int8), ResNet3D-18 b1 and b8, each tuned from scratch and benchmarked against cuDNN
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$DEV"
B=build-rel O=$OUT C=$(cat bench/work/commit)
bn() { CT_COMMIT=$C timeout $4 $B/convtune bench --set $1 --batch $2 --layout $3 --db $O/$5.db --results-dir $O --csv $O/$1-b$2-$3.csv > $O/bench-$1-b$2-$3.md 2>$O/bench-$5.log; echo bench $1 b$2 $? $(el); grep -E "^\| \*\*sum" $O/bench-$1-b$2-$3.md | cut -d'|' -f2,5,8,12; }
timeout 80 $B/convtune tune --set resnet50 --batch 1 --layout nhwc --trials 150 --early-stopping 40 --time-budget 15 --db $O/r50b1.db -q --json > $O/tune-r50b1.json 2>$O/tune-r50b1.log; echo tune b1 $? $(el)
timeout 90 $B/convtune tune --set resnet50 --batch 1 --layout nhwc --out int8 --epilogue bias,qc --trials 40 --early-stopping 12 --time-budget 10 --db $O/r50b1.db -q --json > $O/tune-r50b1-i8.json 2>$O/tune-r50b1-i8.log; echo tune b1 i8 $? $(el)
bn resnet50 1 nhwc 45 r50b1
timeout 110 $B/convtune tune --set resnet3d18 --batch 1 --layout ndhwc --trials 600 --early-stopping 200 --time-budget 25 --db $O/r3d1.db -q --json > $O/tune-r3d1.json 2>$O/tune-r3d1.log; echo tune r3d1 $? $(el)
bn resnet3d18 1 ndhwc 40 r3d1
L=$(( 560 - $(el) )); [ $L -gt 80 ] && { timeout $((L-45)) $B/convtune tune --set resnet3d18 --batch 8 --layout ndhwc --trials 300 --early-stopping 100 --time-budget 25 --db $O/r3d8.db -q --json > $O/tune-r3d8.json 2>$O/tune-r3d8.log; echo tune r3d8 $? $(el)
bn resnet3d18 8 ndhwc 40 r3d8; }
for f in $O/tune-*.json; do echo "$(basename $f) wrong: $(grep -o '"WRONG_ANSWER":[[:space:]]*[0-9]*' $f | awk -F: '{s+=$2} END {print s+0}') layers: $(grep -c '"name"' $f)"; done
for d in r50b1 r3d1 r3d8; do $B/convtune list --db $O/$d.db > $O/list-$d.txt 2>&1; done
rm -f $O/*.db-*; cd $O && tar czf all.tgz *.txt *.log *.json *.md *.csv *.db && rm -f *.txt *.log *.json *.csv *.db; echo done $(el)

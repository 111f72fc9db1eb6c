#!/bin/sh
# call 2 (2026-11-26): ResNet-50 b16 int8 and int32 tuned from scratch and benchmarked; ResNet3D-18 b8 likewise
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$DEV"
B=build-rel O=$OUT C=$(cat bench/work/commit)
bn() { CT_COMMIT=$C timeout $4 $B/convtune bench --set $1 --batch $2 --layout $3 --db $O/$5.db --results-dir $O --csv $O/$1-b$2-$3.csv > $O/bench-$1-b$2-$3.md 2>$O/bench-$5.log; echo bench $1 b$2 $? $(el); grep -E "^\| \*\*sum" $O/bench-$1-b$2-$3.md | cut -d'|' -f2,5,8,12; }
timeout 230 $B/convtune tune --set resnet50 --batch 16 --layout nhwc --out int8 --epilogue bias,qc --trials 100 --early-stopping 30 --time-budget 12 --db $O/r50b16.db -q --json > $O/tune-r50b16-i8.json 2>$O/tune-r50b16-i8.log; echo tune i8 $? $(el)
timeout 90 $B/convtune tune --set resnet50 --batch 16 --layout nhwc --trials 150 --early-stopping 40 --time-budget 15 --db $O/r50b16.db -q --json > $O/tune-r50b16.json 2>$O/tune-r50b16.log; echo tune i32 $? $(el)
bn resnet50 16 nhwc 90 r50b16
L=$(( 570 - $(el) )); [ $L -gt 100 ] && { timeout $((L-45)) $B/convtune tune --set resnet3d18 --batch 8 --layout ndhwc --trials 300 --early-stopping 100 --time-budget 25 --db $O/r3d8.db -q --json > $O/tune-r3d8.json 2>$O/tune-r3d8.log; echo tune r3d8 $? $(el)
bn resnet3d18 8 ndhwc 40 r3d8; }
for f in $O/tune-*.json; do echo "$(basename $f) wrong: $(grep -o '"WRONG_ANSWER":[[:space:]]*[0-9]*' $f | awk -F: '{s+=$2} END {print s+0}')"; done
rm -f $O/*.db-*; cd $O && tar czf all.tgz *.log *.json *.md *.csv *.db && rm -f *.log *.json *.csv *.db; echo done $(el)

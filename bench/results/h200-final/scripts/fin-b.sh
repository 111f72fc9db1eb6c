#!/bin/sh
# final call B (2026-11-26, 991ab67): test_gpu_dispatch; ResNet-50 b1 (int32, then int8), tuned from scratch and benchmarked against cuDNN
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$DEV"
B=build-rel O=$OUT C=$(cat bench/work/commit)
bn() { CT_COMMIT=$C timeout $4 $B/convtune bench --set $1 --batch $2 --layout $3 --db $O/$5.db --results-dir $O --csv $O/$1-b$2-$3.csv > $O/bench-$1-b$2-$3.md 2>$O/bench-$5.log; echo bench $1 b$2 $? $(el); grep -E "^\| \*\*sum" $O/bench-$1-b$2-$3.md | cut -d'|' -f2,5,8,12; }
(cd $B && timeout 200 ./test_gpu_dispatch) > $O/t-gpu-dispatch.log 2>&1; echo test_gpu_dispatch $? $(el); grep -E "Checks|:F:|:E:" $O/t-gpu-dispatch.log | cut -c1-300
timeout 80 $B/convtune tune --set resnet50 --batch 1 --layout nhwc --trials 150 --early-stopping 40 --time-budget 15 --db $O/r50b1.db -q --json > $O/tune-r50b1.json 2>$O/tune-r50b1.log; echo tune b1 $? $(el)
timeout 90 $B/convtune tune --set resnet50 --batch 1 --layout nhwc --out int8 --epilogue bias,qc --trials 40 --early-stopping 12 --time-budget 10 --db $O/r50b1.db -q --json > $O/tune-r50b1-i8.json 2>$O/tune-r50b1-i8.log; echo tune b1 i8 $? $(el)
bn resnet50 1 nhwc 45 r50b1
for d in r50b1; do $B/convtune list --db $O/$d.db > $O/list-$d.txt 2>&1; done
for f in $O/tune-*.json; do echo "$(basename $f) wrong: $(grep -o '"WRONG_ANSWER":[[:space:]]*[0-9]*' $f | awk -F: '{s+=$2} END {print s+0}') layers: $(grep -c '"name"' $f)"; done
rm -f $O/*.db-*; cd $O && tar czf all.tgz *.txt *.log *.json *.md *.csv *.db && rm -f *.txt *.log *.json *.csv *.db; echo done $(el)

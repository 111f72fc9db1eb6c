#!/bin/sh
# final call D (2026-11-26, ed77a80, a_prefetch for int32 only): ResNet-50 b16 tuned from scratch (int32, then int8) and benchmarked against cuDNN
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$DEV"
B=build-rel O=$OUT C=$(cat bench/work/commit)
bn() { CT_COMMIT=$C timeout $4 $B/convtune bench --set $1 --batch $2 --layout $3 --db $O/$5.db --results-dir $O --csv $O/$1-b$2-$3.csv > $O/bench-$1-b$2-$3.md 2>$O/bench-$5.log; echo bench $1 b$2 $? $(el); grep -E "^\| \*\*sum" $O/bench-$1-b$2-$3.md | cut -d'|' -f2,5,8,12; }
timeout 90 $B/convtune tune --set resnet50 --batch 16 --layout nhwc --trials 150 --early-stopping 40 --time-budget 15 --db $O/r50b16.db -q --json > $O/tune-r50b16.json 2>$O/tune-r50b16.log; echo tune i32 $? $(el)
L=$(( 520 - $(el) ))
timeout $L $B/convtune tune --set resnet50 --batch 16 --layout nhwc --out int8 --epilogue bias,qc --trials 100 --early-stopping 30 --time-budget 12 --db $O/r50b16.db -q --json > $O/tune-r50b16-i8.json 2>$O/tune-r50b16-i8.log; echo tune i8 $? $(el) limit $L
bn resnet50 16 nhwc 60 r50b16
for f in $O/tune-*.json; do echo "$(basename $f) wrong: $(grep -o '"WRONG_ANSWER":[[:space:]]*[0-9]*' $f | awk -F: '{s+=$2} END {print s+0}') layers: $(grep -c '"name"' $f)"; done
$B/convtune list --db $O/r50b16.db > $O/list-r50b16.txt 2>&1
rm -f $O/*.db-*; cd $O && tar czf all.tgz *.txt *.log *.json *.md *.csv *.db && rm -f *.txt *.log *.json *.csv *.db; echo done $(el)

#!/bin/sh
# call 12: ResNet-50 b16 tuned from scratch (int32, then int8) and benchmarked at the commit (the tiled 1x1 data)
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
B=build-rel O=$OUT C=$(cat bench/work/commit)
timeout 90 $B/convtune tune --set resnet50 --batch 16 --layout nhwc --trials 150 --early-stopping 40 --time-budget 15 --db $O/r50b16.db -q --json > $O/tune-r50b16.json 2>$O/tune-r50b16.log; echo tune i32 $? $(el)
L=$(( 530 - $(el) ))
timeout $L $B/convtune tune --set resnet50 --batch 16 --layout nhwc --out int8 --epilogue bias,qc --trials 100 --early-stopping 30 --time-budget 12 --db $O/r50b16.db -q --json > $O/tune-r50b16-i8.json 2>$O/tune-r50b16-i8.log; echo tune i8 $? $(el) limit $L
CT_COMMIT=$C timeout 55 $B/convtune bench --set resnet50 --batch 16 --layout nhwc --db $O/r50b16.db --results-dir $O --csv $O/resnet50-b16-nhwc.csv > $O/bench-resnet50-b16-nhwc.md 2>$O/bench.log; echo bench $? $(el)
grep -E "^\| \*\*sum" $O/bench-resnet50-b16-nhwc.md | cut -d'|' -f2,5,8,12
for f in $O/tune-*.json; do echo "$(basename $f) wrong: $(grep -o '"WRONG_ANSWER":[[:space:]]*[0-9]*' $f | awk -F: '{s+=$2} END {print s+0}') layers: $(grep -c '"name"' $f)"; done
rm -f $O/*.db-*; cd $O && tar czf all.tgz *.log *.json *.md *.csv *.db && rm -f *.log *.json *.csv *.db; echo done $(el)

#!/bin/sh
# final call C (2026-11-26, 991ab67): ResNet3D-18 b1 and b8, each tuned from scratch and benchmarked against cuDNN; then test_gpu_dispatch three times, line-buffered (call A killed it at 90 s in its nhwc chain or graph test; call B ran it in 31 s)
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$DEV"
B=build-rel O=$OUT C=$(cat bench/work/commit)
bn() { CT_COMMIT=$C timeout $4 $B/convtune bench --set $1 --batch $2 --layout $3 --db $O/$5.db --results-dir $O --csv $O/$1-b$2-$3.csv > $O/bench-$1-b$2-$3.md 2>$O/bench-$5.log; echo bench $1 b$2 $? $(el); grep -E "^\| \*\*sum" $O/bench-$1-b$2-$3.md | cut -d'|' -f2,5,8,12; }
timeout 110 $B/convtune tune --set resnet3d18 --batch 1 --layout ndhwc --trials 600 --early-stopping 200 --time-budget 25 --db $O/r3d1.db -q --json > $O/tune-r3d1.json 2>$O/tune-r3d1.log; echo tune r3d1 $? $(el)
bn resnet3d18 1 ndhwc 40 r3d1
L=$(( 560 - $(el) )); [ $L -gt 80 ] && { timeout $((L-45)) $B/convtune tune --set resnet3d18 --batch 8 --layout ndhwc --trials 300 --early-stopping 100 --time-budget 25 --db $O/r3d8.db -q --json > $O/tune-r3d8.json 2>$O/tune-r3d8.log; echo tune r3d8 $? $(el)
bn resnet3d18 8 ndhwc 40 r3d8; }
for i in 1 2 3; do L=$(( 590 - $(el) )); [ $L -gt 20 ] || break; T1=$(date +%s); (cd $B && CK_VERBOSITY=verbose timeout $L stdbuf -oL -eL ./test_gpu_dispatch) > $O/t-gpu-dispatch-$i.log 2>&1; echo test_gpu_dispatch run $i rc $? $(( $(date +%s) - T1 )) s; grep -E "Checks|:F:|:E:" $O/t-gpu-dispatch-$i.log | cut -c1-200; done
for f in $O/tune-*.json; do echo "$(basename $f) wrong: $(grep -o '"WRONG_ANSWER":[[:space:]]*[0-9]*' $f | awk -F: '{s+=$2} END {print s+0}') layers: $(grep -c '"name"' $f)"; done
for d in r3d1 r3d8; do $B/convtune list --db $O/$d.db > $O/list-$d.txt 2>&1; done
rm -f $O/*.db-*; cd $O && tar czf all.tgz *.txt *.log *.json *.md *.csv *.db && rm -f *.txt *.log *.json *.csv *.db; echo done $(el)

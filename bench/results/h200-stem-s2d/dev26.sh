#!/bin/sh
# call 5 (2026-11-26): the stems' s2d (working tree on 1d23874): GPU cases stem and stem8, every stem config timed (s2d 0 and 1), then ResNet3D-18 b1 tuned from scratch and benchmarked
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$DEV"
B=build-rel O=$OUT C=$(cat bench/work/commit)
bn() { CT_COMMIT=$C timeout $4 $B/convtune bench --set $1 --batch $2 --layout $3 --db $O/$5.db --results-dir $O --csv $O/$1-b$2-$3.csv > $O/bench-$1-b$2-$3.md 2>$O/bench-$5.log; echo bench $1 b$2 $? $(el); grep -E "^\| \*\*sum" $O/bench-$1-b$2-$3.md | cut -d'|' -f2,5,8,12; }
ok=1
for c in stem stem8; do (cd $B && CK_RUN_CASE=$c timeout 170 ./test_gpu_templates 3) > $O/t-$c.log 2>&1; r=$?; echo test $c $r $(el); [ $r = 0 ] || ok=0
  grep -hE "Checks|:F:|:E:|exact over" $O/t-$c.log | cut -c1-240 | head -8; done
timeout 150 ./bench/work/probe bench/work/s2d-all.txt > $O/p-s2d.txt 2>&1; echo probe $? $(el)
grep -v INVALID $O/p-s2d.txt | grep " us " | sort -k1,1 | awk '{split($1,a,"_"); k=a[1]"_"a[2]; if (!(k in b) || $2 < b[k]) {b[k]=$2; n[k]=$1}} END {for (k in b) print k, b[k], n[k]}' | sort
if [ $ok = 1 ]; then
timeout 110 $B/convtune tune --set resnet3d18 --batch 1 --layout ndhwc --trials 600 --early-stopping 200 --time-budget 25 --db $O/r3d1.db -q --json > $O/tune-r3d1.json 2>$O/tune-r3d1.log; echo tune r3d1 $? $(el)
bn resnet3d18 1 ndhwc 30 r3d1
grep -hE "^\| (stem|l2_3x3x3_s2) " $O/bench-resnet3d18-b1-ndhwc.md | cut -d'|' -f2,5,8,12,18
fi
for f in $O/tune-*.json; do echo "$(basename $f) wrong: $(grep -o '"WRONG_ANSWER":[[:space:]]*[0-9]*' $f | awk -F: '{s+=$2} END {print s+0}')"; done
rm -f $O/*.db-*; cd $O && tar czf all.tgz *.log *.txt *.json *.md *.csv *.db 2>/dev/null; rm -f *.log *.json *.csv *.db; echo done $(el)

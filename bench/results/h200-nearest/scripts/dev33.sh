#!/bin/sh
# call 12 (2026-11-26): what the dispatch runs for untuned 8-bit layers whose int32 twins are tuned: ResNet-50 b16 tuned for int32 only, then benchmarked by 4f1a8ae (the twin's config, the 8-bit knobs from the default) and by 1d23874 (no 8-bit record: the default)
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$DEV"
B=build-rel O=$OUT C=$(cat bench/work/commit)
timeout 80 $B/convtune tune --set resnet50 --batch 16 --layout nhwc --trials 150 --early-stopping 40 --time-budget 15 --db $O/r50b16.db -q --json > $O/tune-r50b16.json 2>$O/tune-r50b16.log; echo tune i32 $? $(el)
for v in new old; do X=$B/convtune; [ $v = old ] && X=bench/work/old/convtune-1d23874
  CT_COMMIT=$C timeout 60 $X bench --set resnet50 --batch 16 --layout nhwc --db $O/r50b16.db --results-dir $O/$v --csv $O/$v.csv > $O/bench-$v.md 2>$O/bench-$v.log; echo bench $v $? $(el); grep -E "^\| \*\*sum" $O/bench-$v.md | cut -d'|' -f2,5,8,12; done
rm -f $O/*.db-*; cd $O && tar czf all.tgz *.log *.json *.md *.csv *.db; rm -f *.db; echo done $(el)

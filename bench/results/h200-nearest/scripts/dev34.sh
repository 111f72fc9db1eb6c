#!/bin/sh
# call 13 (2026-11-26): the untuned 8-bit layers again on call 12's int32-only database, benchmarked by this commit (a carried config's missing knobs: the first values that fit)
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$DEV"
B=build-rel O=$OUT C=$(cat bench/work/commit)
cp bench/work/r50b16-i32only.db $O/r50b16.db
CT_COMMIT=$C timeout 60 $B/convtune bench --set resnet50 --batch 16 --layout nhwc --db $O/r50b16.db --results-dir $O/x --csv $O/fill.csv > $O/bench-fill.md 2>$O/bench-fill.log; echo bench $? $(el); grep -E "^\| \*\*sum" $O/bench-fill.md | cut -d'|' -f2,5,8,12
grep -hE "^\| (l2_3x3_128_s2|l3_3x3_256_s2) " $O/bench-fill.md | cut -d'|' -f2,5,8
rm -f $O/r50b16.db*; rm -rf $O/x; echo done $(el)

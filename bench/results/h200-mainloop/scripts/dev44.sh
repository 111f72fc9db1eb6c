#!/bin/sh
# call 11: GPU tests of the tiled 1x1 data (nhwc, nhwc8); TMA L2 promotion 256B (probe-l2256B) against 128B (probe-at), twice
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
B=build-rel O=$OUT
(cd $B && CK_RUN_CASE=nhwc timeout 200 ./test_gpu_templates) > $O/gpu-nhwc.txt 2>&1; echo nhwc $? $(el); grep -E "exact|FAIL|Checks" $O/gpu-nhwc.txt | head
(cd $B && CK_RUN_CASE=nhwc8 timeout 200 ./test_gpu_templates) > $O/gpu-nhwc8.txt 2>&1; echo nhwc8 $? $(el); grep -E "exact|FAIL|Checks" $O/gpu-nhwc8.txt | head
for r in 1 2; do
  timeout 60 bench/work/probe-at bench/work/l2ab.txt 2>&1 | grep -E " us |WRONG|ERROR" | awk '{print $1, $2}' | sort > $O/p128-$r.txt
  timeout 60 bench/work/probe-l2256B bench/work/l2ab.txt 2>&1 | grep -E " us |WRONG|ERROR" | awk '{print $1, $2}' | sort > $O/p256-$r.txt
done
join $O/p128-1.txt $O/p256-1.txt | join - $O/p128-2.txt | join - $O/p256-2.txt
awk '{a+=$2;b+=$3;c+=$4;d+=$5} END {print "sum", a, b, c, d}' <(join $O/p128-1.txt $O/p256-1.txt | join - $O/p128-2.txt | join - $O/p256-2.txt)
echo done $(el)

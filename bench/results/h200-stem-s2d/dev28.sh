#!/bin/sh
# call 7 (2026-11-26): s2d with the weight slabs from an offset table: GPU case stem; s2d configs timed; ncu of ResNet-50's stem at s2d 1
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$DEV"
B=build-rel O=$OUT P=bench/work/probe
for c in stem; do (cd $B && CK_RUN_CASE=$c timeout 170 ./test_gpu_templates 3) > $O/t-$c.log 2>&1; r=$?; echo test $c $r $(el)
  grep -hE "Checks|:F:|:E:|exact over" $O/t-$c.log | cut -c1-240 | head -8; done
timeout 120 $P bench/work/s2d-b.txt > $O/p-s2d-c.txt 2>&1; echo probe $? $(el)
grep -v INVALID $O/p-s2d-c.txt | grep " us " | sort -k2 -n | awk '{split($1,a,"_"); k=a[1]"_"a[2]; c[k]++; if (c[k]<=2) print}' | sort | cut -c1-40
NCU=/usr/local/cuda/bin/ncu
S="--section SpeedOfLight --section WarpStateStats --section InstructionStats --section LaunchStats"
timeout 100 $NCU --launch-skip 3 --launch-count 1 $S $P bench/work/n-s1.txt > $O/ncu-n-s1b.txt 2>&1; echo ncu $? $(el)
grep -hE "Duration|Warp Cycles Per Issued|Executed Instructions  " $O/ncu-n-s1b.txt | head
cd $O && tar czf all.tgz *.txt *.log; echo done $(el)

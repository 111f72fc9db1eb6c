#!/bin/sh
# call 6 (2026-11-26): s2d with a stage's loads issued together: GPU cases stem, stem8; s2d configs timed; ncu of ResNet-50's stem at s2d 1 and 0
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$DEV"
B=build-rel O=$OUT P=bench/work/probe
for c in stem stem8; do (cd $B && CK_RUN_CASE=$c timeout 170 ./test_gpu_templates 3) > $O/t-$c.log 2>&1; r=$?; echo test $c $r $(el)
  grep -hE "Checks|:F:|:E:|exact over" $O/t-$c.log | cut -c1-240 | head -8; done
timeout 120 $P bench/work/s2d-b.txt > $O/p-s2d-b.txt 2>&1; echo probe $? $(el)
grep -v INVALID $O/p-s2d-b.txt | grep " us " | sort -k2 -n | awk '{split($1,a,"_"); k=a[1]"_"a[2]; c[k]++; if (c[k]<=2) print}' | sort | cut -c1-40
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1); echo "ncu: $NCU"
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis_Tables --section LaunchStats"
for l in n-s1 n-s0; do timeout 100 $NCU --launch-skip 3 --launch-count 1 $S $P bench/work/$l.txt > $O/ncu-$l.txt 2>&1; echo ncu $l $? $(el); done
grep -hE "Duration|Executed Ipc A|Issue Slots Busy|Shared.*Bank|Stall|Warp Cycles Per Issued|Executed Instructions  " $O/ncu-n-s1.txt | head -20
cd $O && tar czf all.tgz *.txt *.log; echo done $(el)

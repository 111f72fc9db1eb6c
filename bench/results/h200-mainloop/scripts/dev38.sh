#!/bin/sh
# call 3: a_regs with two consumer warpgroups (two warps per scheduler); stall reasons of the one-warpgroup kernel
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
B=build-rel O=$OUT
timeout 120 bench/work/probe bench/work/ar-probe3.txt > $O/probe-ar3.txt 2>&1; echo probe $? $(el)
grep -E " us " $O/probe-ar3.txt | awk '{print $1, $2}'
timeout 120 /usr/local/cuda/bin/ncu --launch-skip 3 --launch-count 1 --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\$,smsp__inst_executed.sum,smsp__cycles_active.avg bench/work/probe bench/work/ar-x.txt > $O/ncu-stall.txt 2>&1; echo ncu $? $(el)
grep -E "stalled|inst_executed|cycles_active" $O/ncu-stall.txt | awk '$NF+0 > 0.05 || /inst|cycles/' | head -30
cd $O && tar czf all.tgz * && echo done $(el)

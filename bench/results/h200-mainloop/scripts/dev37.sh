#!/bin/sh
# call 2: a_regs with predicated loads into the zeroed registers: A/B probe, ncu and SASS of one kernel, GPU test
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
B=build-rel O=$OUT
timeout 120 bench/work/probe bench/work/ar-probe2.txt > $O/probe-ar2.txt 2>&1; echo probe $? $(el)
grep -E " us " $O/probe-ar2.txt | awk '{print $1, $2}' | column -c 160
mkdir -p $O/cubin; PROBE_CUBIN_DIR=$O/cubin timeout 30 bench/work/probe bench/work/ar-x.txt > $O/probe-x.txt 2>&1
ls /usr/local/cuda/bin | grep -iE "cuobjdump|nvdisasm" ; (/usr/local/cuda/bin/cuobjdump -sass $O/cubin/x.cubin || /usr/local/cuda/bin/nvdisasm -c $O/cubin/x.cubin) > $O/x.sass 2>&1; echo sass $? $(wc -l < $O/x.sass)
timeout 120 /usr/local/cuda/bin/ncu --launch-skip 3 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats bench/work/probe bench/work/ar-x.txt > $O/ncu-x.txt 2>&1; echo ncu $? $(el)
grep -E "Stall|Warp Cycles|Issued|Throughput|L1/TEX Hit|L2 Hit|Duration|Eligible" $O/ncu-x.txt | head -40
(cd $B && CK_RUN_CASE=aregs timeout 150 ./test_gpu_templates 4) > $O/gpu-aregs.txt 2>&1; echo aregs $? $(el); grep -E "exact|FAIL|Checks" $O/gpu-aregs.txt | head -12
cd $O && tar czf all.tgz * && echo done $(el)

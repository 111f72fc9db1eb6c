#!/bin/sh
# ncu of the stems (int32, int8 tuned configs) and two 3x3 layers at 991ab67: the L1TEX breakdown, stall locations
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
O=$OUT P=bench/work/probe NCU=/usr/local/cuda/bin/ncu
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SourceCounters --section InstructionStats --section SchedulerStats --section LaunchStats"
M="--metrics breakdown:l1tex__throughput.avg.pct_of_peak_sustained_elapsed,breakdown:sm__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__data_pipe_lsu_wavefronts.sum,l1tex__lsu_writeback_active.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum"
for n in conv1.i32 conv1.i8 l1_3x3_64.i32 l3_3x3_256.i32; do
  case $n in conv1*) K=conv_wgmma_stem;; *) K=conv_wgmma_nhwc;; esac
  timeout 120 $NCU --kernel-name $K --launch-skip 1 --launch-count 1 $S $M $P bench/work/nc1-$n.txt > $O/ncu-$n.txt 2>&1; echo ncu $n $? $(el)
  grep -E "^ +Duration|L1/TEX Cache Throughput|Memory Throughput|l1tex__throughput|Issued Warp Per|Warp Cycles Per Issued" $O/ncu-$n.txt | head -12
done

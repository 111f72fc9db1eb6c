#!/bin/sh
# calls 4-5: a_regs diagnosis on l3_3x3_256 b16 (ncu --kernel-name conv_wgmma_nhwc (call 5; call 4 lacked it and timed the reference kernel), each config's first launch, standalone): as built; no ring loads in the loop; no transposition (the last two wrong: timing only)
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
for v in "-DCT_X_NONE=1" -DCT_X_NOLOAD=1 -DCT_X_NOTRANS=1; do
  for i in 1 2 3 4; do
    t=$(PROBE_OPT="$v" timeout 60 /usr/local/cuda/bin/ncu --kernel-name conv_wgmma_nhwc --launch-count 1 --metrics gpu__time_duration.sum bench/work/probe-ar bench/work/ar-y$i.txt 2>&1 | grep -E "gpu__time_duration" | awk '{print $NF}')
    echo "$v $(cut -d' ' -f1 bench/work/ar-y$i.txt) $t"
  done
done

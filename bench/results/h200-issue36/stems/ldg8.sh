#!/bin/bash
# the stems' 8-byte gathers: config_run A/B against a63274f's binary (twice, interleaved),
# the stems' GPU cases, compute-sanitizer on 8-byte-gather configs
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
OLD=.gpu-exp/cr-a63274f NEW=build-rel/config_run
ab() { # tag template key config
  for r in 1 2; do
    o=$(timeout 60 $OLD $2 $3 "$4" 400 2>&1 | tail -1 | grep -oE '[0-9.]+ us per launch' | cut -d' ' -f1)
    n=$(timeout 60 $NEW $2 $3 "$4" 400 2>&1 | tail -1 | grep -oE '[0-9.]+ us per launch' | cut -d' ' -f1)
    echo "$1 run $r: a63274f $o us, new $n us"
  done
}
while read -r tag t k c; do ab $tag $t $k "$c"; done <<'L'
r50-b256 conv2d_nhwc_wgmma_stem conv2d-nhwc-i8.i8.i8-n256-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1-bias-qc-onnx {"block_m":128,"block_n":64,"warpgroups":1,"a_buffers":1,"blocks_per_sm":4,"out_stage":1}
r50-b16 conv2d_nhwc_wgmma_stem conv2d-nhwc-i8.i8.i8-n16-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1-bias-qc-onnx {"block_m":128,"block_n":64,"warpgroups":2,"a_buffers":1,"blocks_per_sm":2,"out_stage":1}
r50-b16-i32 conv2d_nhwc_wgmma_stem conv2d-nhwc-i8.i8.i32-n16-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1 {"block_m":64,"block_n":64,"warpgroups":2,"a_buffers":2,"blocks_per_sm":2,"a_prefetch":1,"out_tma":0}
mbv2-b32 conv2d_nhwc_wgmma_stem conv2d-nhwc-i8.i8.i8-n32-c3-k32-224x224-r3x3-s2x2-p1x1.1x1-d1x1-bias-qc-onnx {"block_m":128,"block_n":32,"warpgroups":1,"a_buffers":2,"blocks_per_sm":4,"out_stage":1}
r3d-b8 conv3d_ndhwc_wgmma_stem conv3d-ndhwc-i8.i8.i8-n8-c3-k64-16x112x112-r3x7x7-s1x2x2-p1x3x3.1x3x3-d1x1x1-bias-qc {"block_m":128,"block_n":64,"warpgroups":2,"a_buffers":1,"blocks_per_sm":2,"out_stage":1}
r3d-b8-i32 conv3d_ndhwc_wgmma_stem conv3d-ndhwc-i8.i8.i32-n8-c3-k64-16x112x112-r3x7x7-s1x2x2-p1x3x3.1x3x3-d1x1x1 {"block_m":128,"block_n":64,"warpgroups":2,"a_buffers":1,"blocks_per_sm":2,"a_prefetch":0,"out_tma":0}
L
echo "A/B done at $SECONDS s"
for c in stem stem8 onnx_stem; do
  ( cd build-rel && CT_GT_TEMPLATE=_wgmma_stem CK_RUN_CASE=$c timeout 280 ./test_gpu_templates ${GT_N:-6} \
      > /tmp/gt-$c.log 2>&1; echo "rc=$?" >> /tmp/gt-$c.log ) &
done
wait
for c in stem stem8 onnx_stem; do echo "$c: $(grep -E 'Checks|rc=|exact over' /tmp/gt-$c.log | tr '\n' ' ')"; done
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
while read -r t k c; do
  for tool in memcheck racecheck; do
    out=$($CS --tool $tool --error-exitcode 9 $NEW $t $k "$c" 2>&1); rc=$?
    echo "$tool $t $k: $(echo "$out" | grep -E "SUMMARY" | tr '\n' ' ') rc=$rc"
  done
done <<'L'
conv3d_ndhwc_wgmma_stem conv3d-ndhwc-u8.i8.u8-n2-c3-k64-4x30x32-r3x7x7-s1x2x2-p1x3x3.1x3x3-d1x1x1-zd-bias-qc-res {"block_m":64,"block_n":64,"warpgroups":2,"a_buffers":1,"blocks_per_sm":1,"out_stage":1}
conv2d_nhwc_wgmma_stem conv2d-nhwc-i8.i8.i32-n2-c3-k64-61x56-r7x7-s2x2-p3x3.3x3-d1x1 {"block_m":128,"block_n":64,"warpgroups":2,"a_buffers":1,"blocks_per_sm":1,"a_prefetch":1,"out_tma":0}
L
echo "all done at $SECONDS s"

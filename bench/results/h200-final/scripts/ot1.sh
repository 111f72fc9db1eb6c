#!/bin/sh
# out_tma (the stems' int32 tile stored by TMA): GPU cases stem, stem8; every stem config measured (grid tuner) with and without, R50 b16 / b1, R3D18 b1 / b8
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
B=build-rel O=$OUT
for c in stem stem8; do (cd $B && CK_RUN_CASE=$c timeout 150 ./test_gpu_templates 8) > $O/t-$c.log 2>&1; echo test $c $? $(el); grep -hE "Checks|:F:|:E:|exact over" $O/t-$c.log | cut -c1-200 | head -6; done
for k in conv2d-nhwc-i8.i8.i32-n16-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1 conv2d-nhwc-i8.i8.i32-n1-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1 conv3d-ndhwc-i8.i8.i32-n1-c3-k64-16x112x112-r3x7x7-s1x2x2-p1x3x3.1x3x3-d1x1x1 conv3d-ndhwc-i8.i8.i32-n8-c3-k64-16x112x112-r3x7x7-s1x2x2-p1x3x3.1x3x3-d1x1x1; do
  case $k in conv2d*) T=conv2d_nhwc_wgmma_stem;; *) T=conv3d_ndhwc_wgmma_stem;; esac
  L=$(( 560 - $(el) )); [ $L -gt 30 ] || break
  timeout $L $B/convtune tune $k --tuner grid --template $T --trials 1000 --time-budget 110 --db $O/ot.db -q --json > /dev/null 2>$O/tune-$T.log; echo grid $k $? $(el)
done
rm -f $O/*.db-*; cd $O && tar czf all.tgz *.log *.db && rm -f *.log *.db; echo done $(el)

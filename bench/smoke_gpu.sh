export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
B=build-rel
for t in test_gpu_kernel test_runner test_tune_gpu; do echo "== $t"; timeout 300 $B/$t 2>&1 | tail -4; done
echo "== gpu_templates"; timeout 200 $B/test_gpu_templates 12 2>&1 | tail -4
echo "== tune default"; (time timeout 150 $B/convtune tune --db $OUT/smoke.db --trials 320) 2>&1 | tail -12
$B/convtune query --db $OUT/smoke.db --c 64 --k 64 --size 56x56 --kernel 3 --pad 1 --layout nchw4c

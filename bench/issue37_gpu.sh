#!/bin/sh
# issue37_gpu.sh: issue 37 on the GPU machine: the package's tests with the
# machine's PyTorch and CuPy, bench/issue37_gpu.py (every phase, or those
# named), then examples/python/resnet_block.py (it tunes into its own
# database). Run from the repository's root with build-rel and .gpu-libs
# carried (../shared/gpu/README.md); results under $OUT (default
# /tmp/issue37): issue37.json and the logs.
#   sh bench/issue37_gpu.sh [--bench-only] [PHASE ...]
# --bench-only: bench/issue37_gpu.py alone (no tests, no example).
set -u
only=0
[ "${1:-}" = --bench-only ] && only=1 && shift
root=$PWD
# links do not travel to the GPU machine: the shared library's names again
for l in libconvtune.so libconvtune.so.0; do
  [ -e "build-rel/$l" ] || ln -sf libconvtune.so.0.1.0 "build-rel/$l"
done
export LD_LIBRARY_PATH=$root/build-rel:$root/.gpu-libs:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CONVTUNE_LIBRARY=$root/build-rel/libconvtune.so CONVTUNE_CLI=$root/build-rel/convtune
export CALL_OVERHEAD=$root/build-rel/call_overhead PYTHONPATH=$root/python
export CONVTUNE_COMMIT="$(cat build-rel/COMMIT 2>/dev/null)"
out=${OUT:-/tmp/issue37}
mkdir -p "$out"
rc=0
echo "== pytest python/tests (this machine's torch and CuPy)"
if [ $only = 1 ]; then
  echo "--bench-only: skipped"
elif python3 -c "import pytest" 2>/dev/null; then
  python3 -m pytest -q -p no:cacheprovider python/tests 2>&1 | tail -15 | tee "$out/pytest.log" || rc=1
else
  echo "pytest is not installed here: skipped" | tee "$out/pytest.log"
fi
echo "== bench/issue37_gpu.py $*"
python3 bench/issue37_gpu.py "$out" "$@" 2>&1 | tee "$out/issue37.log"
[ -s "$out/issue37.json" ] || rc=1
echo "== examples/python/resnet_block.py"
[ $only = 1 ] && exit $rc
(cd "$out" && python3 "$root/examples/python/resnet_block.py" --db "$out/example.db" --trials 64) \
  2>&1 | tee "$out/example.log" || rc=1
rm -f "$out/example.db"
exit $rc

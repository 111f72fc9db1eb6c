#!/bin/sh
# test_pip_install.sh: the Python package as `pip install .` makes it. Builds
# the wheel from the source tree with scikit-build-core (from scripts/setup's
# .venv-test, no build isolation: nothing is downloaded here), installs it
# into a scratch folder, checks that the package holds libconvtune and the
# command comes with it, then runs the package's tests (python/tests) against
# the installed package alone: no CONVTUNE_LIBRARY, no CONVTUNE_CLI, no
# source folder on the path. Exits 77 without .venv-test.
# Usage: test_pip_install.sh SOURCE_DIR
set -u
src=$(cd "$1" && pwd)
. "$src/tests/common.sh"
py="$src/.venv-test/bin/python"
if [ ! -x "$py" ]; then
  echo "skipped: no $py: run scripts/setup"
  exit 77
fi
# the wheel: a build folder of its own in the scratch folder, not the tree's
check "pip wheel ." env CMAKE_BUILD_PARALLEL_LEVEL="$(nproc 2>/dev/null || echo 2)" \
  "$py" -m pip wheel --no-build-isolation --no-deps --disable-pip-version-check -q \
  -C build-dir="$tmp/build" -w "$tmp/dist" "$src" || finish test_pip_install
wheel=$(ls "$tmp"/dist/convtune-*.whl 2>/dev/null | head -n 1)
[ -n "$wheel" ] && ok || bad "no wheel in $tmp/dist"
check "pip install the wheel" "$py" -m pip install --no-deps --disable-pip-version-check -q \
  --target "$tmp/site" "$wheel" || finish test_pip_install
[ -f "$tmp/site/convtune/libconvtune.so" ] && ok || bad "the package holds no libconvtune.so"
[ -x "$tmp/site/bin/convtune" ] && ok || bad "no convtune command beside the package"
# the installed package alone, from outside the source folder
cd "$tmp"
check "the package's tests against the installed package" env -u CONVTUNE_LIBRARY -u CONVTUNE_CLI \
  PYTHONPATH="$tmp/site" PATH="$tmp/site/bin:$PATH" PYTHONDONTWRITEBYTECODE=1 \
  "$py" -m pytest -q -p no:cacheprovider "$src/python/tests"
check "the package's library is the one loaded" env -u CONVTUNE_LIBRARY PYTHONPATH="$tmp/site" \
  "$py" -c "import convtune._capi as c, sys; sys.exit(0 if c.lib._name.startswith('$tmp/site/') else 1)"
finish test_pip_install

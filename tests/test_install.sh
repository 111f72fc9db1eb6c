#!/bin/sh
# test_install.sh: the installed package as a runtime sees it. Installs the
# build into a temporary prefix (then moves it, to prove it relocatable),
# checks the layout, the shared library's soname, dependencies and exported
# symbols, the convtune command with its man page and bash completion
# (which it runs: commands, a command's flags, set names), then builds examples/resnet50.c against the prefix four ways
# (CMake shared and static, pkg-config shared and static) and runs each: it
# exits 0 with every layer exact on a GPU, 77 with a message without one.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR. CT_EXAMPLE_FLAGS (the
# sanitizer flags of a CT_SANITIZE build) are added to the example's builds.
set -u
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
flags=${CT_EXAMPLE_FLAGS:-}
cc=${CC:-cc}
. "$src/tests/common.sh"

# ---- install -------------------------------------------------------------
if ! cmake --install "$build" --prefix "$tmp/staged" >"$tmp/log" 2>&1; then
  bad "cmake --install $build"
  cat "$tmp/log"
  finish install
fi
ok
mv "$tmp/staged" "$tmp/prefix"
prefix=$tmp/prefix

# The lib dir is GNUInstallDirs' choice: lib, lib64 or lib/<multiarch>.
so=$(find "$prefix" -name libconvtune.so.0 | head -n 1)
if [ -z "$so" ]; then
  bad "no libconvtune.so.0 under the prefix"
  find "$prefix"
  finish install
fi
libdir=$(dirname "$so")
echo "lib dir: ${libdir#"$prefix"/}"

for f in "$libdir/libconvtune.a" "$prefix/include/convtune/convtune.h" \
  "$prefix/include/convtune/version.h" "$libdir/pkgconfig/convtune.pc" \
  "$libdir/cmake/convtune/convtuneConfig.cmake" "$libdir/cmake/convtune/convtuneConfigVersion.cmake" \
  "$libdir/cmake/convtune/convtuneTargets.cmake"; do
  [ -f "$f" ] && ok || bad "missing ${f#"$prefix"/}"
done
# libconvtune.so -> libconvtune.so.0 -> libconvtune.so.MAJOR.MINOR.PATCH
version=$(sed -n 's/^#define CT_VERSION_STRING "\(.*\)"/\1/p' "$prefix/include/convtune/version.h")
[ -n "$version" ] && ok || bad "no CT_VERSION_STRING in the installed version.h"
[ -L "$libdir/libconvtune.so" ] && [ "$(readlink "$libdir/libconvtune.so")" = libconvtune.so.0 ] &&
  ok || bad "libconvtune.so is not a link to libconvtune.so.0"
[ -L "$so" ] && [ "$(readlink "$so")" = "libconvtune.so.$version" ] && [ -f "$libdir/libconvtune.so.$version" ] &&
  ok || bad "libconvtune.so.0 is not a link to libconvtune.so.$version"
# Nothing of the build or source tree may leak into what is installed.
if grep -rlF -e "$build" -e "$src" "$libdir/cmake" "$libdir/pkgconfig" >"$tmp/leaks"; then
  bad "build or source paths in: $(cat "$tmp/leaks")"
else
  ok
fi

# ---- the shared library ------------------------------------------------------
objdump -p "$so" >"$tmp/dyn"
grep -q 'SONAME *libconvtune\.so\.0$' "$tmp/dyn" && ok || bad "SONAME is not libconvtune.so.0"
grep NEEDED "$tmp/dyn" | grep -q xgboost && bad "libconvtune.so needs libxgboost" || ok
nm -D --defined-only "$so" | awk '{print $NF}' >"$tmp/syms"
grep -q '^ct_open$' "$tmp/syms" && grep -q '^ct_conv2d$' "$tmp/syms" && ok ||
  bad "ct_open or ct_conv2d is not exported"
if grep -v '^ct_' "$tmp/syms" >"$tmp/extra"; then
  bad "exported symbols other than ct_*: $(head -n 10 "$tmp/extra" | tr '\n' ' ')"
else
  ok
fi
nm "$libdir/libconvtune.a" 2>/dev/null | grep -q ' T ct_conv2d$' && ok ||
  bad "libconvtune.a does not define ct_conv2d"

# ---- the convtune command ----------------------------------------------------
# bin/convtune runs from the moved prefix without a GPU (-V), names no build
# or source path in its RUNPATH; the man page (help2man) has every command;
# the completion file parses and completes.
ct=$prefix/bin/convtune
if [ -x "$ct" ]; then
  ok
  "$ct" -V >"$tmp/v" 2>&1 && head -n 1 "$tmp/v" | grep -qx "convtune $version" && grep -q '^NVRTC ' "$tmp/v" &&
    ok || { bad "installed convtune -V"; cat "$tmp/v"; }
  if objdump -p "$ct" | grep -E 'R(UN)?PATH' | grep -qF -e "$build" -e "$src"; then
    bad "bin/convtune's RUNPATH names the build or source tree: $(objdump -p "$ct" | grep -E 'R(UN)?PATH')"
  else
    ok
  fi
else
  bad "no bin/convtune"
fi
man=$prefix/share/man/man1/convtune.1
if grep -q '^HELP2MAN:FILEPATH=.*NOTFOUND' "$build/CMakeCache.txt" 2>/dev/null; then
  echo "no man page: help2man was not found when $build was configured"
  [ ! -e "$man" ] && ok || bad "a man page without help2man"
elif [ -f "$man" ]; then
  ok
  for c in tune workload query list history export import space bench; do
    grep -q "^\.SS convtune $c\$" "$man" && ok || bad "convtune.1 has no section for $c"
  done
  grep -q '^\.SH COMMANDS' "$man" && grep -q 'json\\-out FILE' "$man" && ok || bad "convtune.1: no COMMANDS section with bench's --json-out"
else
  bad "no share/man/man1/convtune.1"
fi
comp=$prefix/share/bash-completion/completions/convtune
if [ -f "$comp" ] && command -v bash >/dev/null; then
  # complete WORD...: what <Tab> offers after `convtune WORD...` (the last word being completed)
  complete_words() {
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _convtune; printf "%s\n" "${COMPREPLY[@]}"' \
      sh "$comp" "$ct" "$@"
  }
  complete_words "" >"$tmp/c1" && grep -qx tune "$tmp/c1" && grep -qx bench "$tmp/c1" && grep -qx -- --version "$tmp/c1" &&
    ok || bad "completion of the command: $(tr '\n' ' ' <"$tmp/c1")"
  complete_words list -- >"$tmp/c2" && grep -qx -- --db "$tmp/c2" && grep -qx -- --json "$tmp/c2" &&
    ! grep -qx -- --output "$tmp/c2" && ok || bad "completion of list's flags: $(tr '\n' ' ' <"$tmp/c2")"
  complete_words bench --json >"$tmp/c3" && grep -qx -- --json-out "$tmp/c3" && ok ||
    bad "completion of bench --json: $(tr '\n' ' ' <"$tmp/c3")"
  complete_words tune --set res >"$tmp/c4" && grep -qx resnet50 "$tmp/c4" && ! grep -qv '^res' "$tmp/c4" && ok ||
    bad "completion of --set: $(tr '\n' ' ' <"$tmp/c4")"
else
  bad "no share/bash-completion/completions/convtune (or no bash to run it)"
fi

# ---- pkg-config ---------------------------------------------------------------
PKG_CONFIG_PATH=$libdir/pkgconfig
export PKG_CONFIG_PATH
[ "$(pkg-config --modversion convtune 2>&1)" = "$version" ] && ok ||
  bad "pkg-config --modversion convtune: $(pkg-config --modversion convtune 2>&1)"
cuda_inc=$(pkg-config --variable=cudaincludedir convtune)
cuda_lib=$(pkg-config --variable=cudalibdir convtune)
[ -f "$cuda_inc/cuda_runtime.h" ] && ok || bad "cudaincludedir '$cuda_inc' has no cuda_runtime.h"

# ---- build the example ---------------------------------------------------------
# CUDA where the library's build found it, should it not be on the PATH.
cuda_bin=$(sed -n 's/^CUDAToolkit_BIN_DIR:PATH=//p' "$build/CMakeCache.txt" 2>/dev/null)
cuda_root=
[ -n "$cuda_bin" ] && cuda_root=-DCUDAToolkit_ROOT=$(dirname "$cuda_bin")
# $flags, $cuda_root and $static_libs are word lists: unquoted on purpose.
build_cmake() {
  check "cmake configure of examples/ ($1)" cmake -S "$src/examples" -B "$tmp/ex-$1" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCONVTUNE_STATIC="$2" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS="$flags" $cuda_root &&
    check "cmake build of examples/ ($1)" cmake --build "$tmp/ex-$1" &&
    cp "$tmp/ex-$1/resnet50" "$tmp/resnet50-$1"
}
build_cmake cmake-shared OFF
build_cmake cmake-static ON

check "cc with pkg-config (shared)" $cc $flags -Wall -Wextra -Werror -o "$tmp/resnet50-pc-shared" \
  "$src/examples/resnet50.c" $(pkg-config --cflags --libs convtune) -I"$cuda_inc" -L"$cuda_lib" \
  -lcudart -Wl,-rpath,"$libdir"
# Static: the archive by name (-l: picks the file as it is), then what
# pkg-config --static lists after it.
static_libs=
for f in $(pkg-config --static --libs convtune); do
  [ "$f" = -lconvtune ] && f=-l:libconvtune.a
  static_libs="$static_libs $f"
done
check "cc with pkg-config --static" $cc $flags -Wall -Wextra -Werror -o "$tmp/resnet50-pc-static" \
  "$src/examples/resnet50.c" $(pkg-config --cflags convtune) -I"$cuda_inc" $static_libs

# Which libconvtune each build took.
for kind in cmake-shared pc-shared; do
  [ -x "$tmp/resnet50-$kind" ] || continue
  objdump -p "$tmp/resnet50-$kind" | grep -q 'NEEDED *libconvtune\.so\.0$' && ok ||
    bad "resnet50 ($kind) does not need libconvtune.so.0"
done
for kind in cmake-static pc-static; do
  [ -x "$tmp/resnet50-$kind" ] || continue
  objdump -p "$tmp/resnet50-$kind" | grep -q 'NEEDED *libconvtune' &&
    bad "resnet50 ($kind) needs libconvtune.so" || ok
done

# ---- run it ----------------------------------------------------------------------
for kind in cmake-shared cmake-static pc-shared pc-static; do
  exe=$tmp/resnet50-$kind
  [ -x "$exe" ] || continue
  "$exe" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -eq 77 ] && [ -s "$tmp/err" ]; then
    ok
    [ "$kind" = cmake-shared ] && echo "resnet50 without a GPU: $(head -n 1 "$tmp/err")"
  elif [ "$rc" -eq 0 ] && grep -q '^23 layers: 23 exact, 0 failed$' "$tmp/out"; then
    ok
  else
    bad "resnet50 ($kind) exited $rc"
    cat "$tmp/out" "$tmp/err"
  fi
done
finish install

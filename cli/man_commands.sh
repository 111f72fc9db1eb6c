#!/bin/sh
# man_commands.sh: the COMMANDS section of convtune's man page, for
# help2man --include: each command's --help under its own heading, kept as
# printed (.nf), a backslash escaped, a hyphen made a minus (as help2man
# writes options) and a leading dot or quote guarded so that roff shows
# them as text. CMake runs it at build time (the convtune_man target).
# Usage: man_commands.sh CONVTUNE OUT COMMAND...
set -eu
ct=$1
out=$2
shift 2
{
  echo '[COMMANDS]'
  for c in "$@"; do
    echo ".SS convtune $c"
    echo .nf
    "$ct" "$c" --help | sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
    echo .fi
  done
} >"$out.tmp"
mv "$out.tmp" "$out"

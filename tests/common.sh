# common.sh: what the shell tests share, sourced after they set src: a
# scratch folder ($tmp, removed on exit), the pass/fail counters, ok, bad
# (prints the failure), check DESCRIPTION COMMAND... (ok or bad with the
# command's output) and finish NAME (prints the count and exits: 0 only
# when nothing failed).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
finish() {
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
  exit
}
# check DESCRIPTION COMMAND...: run COMMAND quietly; on failure show its output
check() {
  what=$1
  shift
  if "$@" >"$tmp/log" 2>&1; then
    ok
  else
    bad "$what"
    tail -n 30 "$tmp/log"
    return 1
  fi
}

# bash completion for convtune, installed as
# share/bash-completion/completions/convtune. The commands and each
# command's flags are read from the command's own --help when <Tab> is
# pressed, so the two never disagree (tests/test_cli.sh checks that every
# flag a --help shows is accepted; tests/test_install.sh runs this file).
# Values: files for the flags that take a path, the names a flag accepts
# where they are few and fixed, the shipped sets from the --help text.
# Cost: one `convtune ... --help` per <Tab>, a few milliseconds.

_convtune() {
  local cur prev ct cmd words=
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD - 1]}
  ct=${COMP_WORDS[0]}
  COMPREPLY=()
  if [ "$COMP_CWORD" -eq 1 ]; then
    # the command list of `convtune --help`: two spaces, a lower-case word
    local cmds
    cmds=$("$ct" --help 2>/dev/null | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p')
    mapfile -t COMPREPLY < <(compgen -W "$cmds -h --help -V --version" -- "$cur")
    return
  fi
  cmd=${COMP_WORDS[1]}
  case $prev in
  --db | --file | --model | --output | --json-out | --csv-out)
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    return
    ;;
  --results-dir)
    mapfile -t COMPREPLY < <(compgen -d -- "$cur")
    return
    ;;
  --set)
    # "--set NAME  a shipped set: c3d, resnet18, ..." in the --help text
    words=$("$ct" "$cmd" --help 2>/dev/null | sed -n 's/.*--set NAME *a shipped set: //p' | tr -d ,)
    ;;
  --layout) words="nchw nchw4c nhwc ncdhw ncdhw4c ndhwc" ;;
  --tuner) words="xgb random grid ga" ;;
  --op) words="conv2d conv3d" ;;
  --data) words="int8 uint8" ;;
  --out) words="int32 int8 uint8" ;;
  esac
  if [ -n "$words" ]; then
    mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
    return
  fi
  if [[ $cur == -* ]]; then
    local flags
    # a flag: after a space, comma or '[' (not "(-v lists all)" or "-nhwc.json")
    flags=$("$ct" "$cmd" --help 2>/dev/null | grep -oE '(^|[ ,[])-(-[a-z][a-z0-9-]*|[a-zA-Z]\b)' |
      sed 's/^[ ,[]//' | sort -u)
    mapfile -t COMPREPLY < <(compgen -W "$flags" -- "$cur")
    return
  fi
  mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}
complete -F _convtune convtune

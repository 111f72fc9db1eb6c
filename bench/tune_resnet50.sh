#!/bin/sh
# tune_resnet50.sh: the tuning run of issue 4 on the GPU, resumable.
#   bench/tune_resnet50.sh BUILD OUT PHASE [SECONDS]
# PHASE xgb:    the 23 ResNet-50 layers at batch 1, model-based, at most 1000
#               trials each, early stopping at 300, into OUT/r50_xgb.db; stops
#               cleanly (SIGTERM, after the batch in flight) when SECONDS run
#               out, and a second call resumes where it stopped.
# PHASE random: three layers with the random strategy, 1000 trials each, into
#               OUT/r50_random.db, for the trials-to-95% comparison.
# PHASE curves: the tuning curve of every tuned workload as CSV in OUT/curves/.
set -u
build=$1
out=$2
phase=$3
secs=${4:-540}
ct=$build/convtune
mkdir -p "$out"
case $phase in
xgb)
  timeout -s TERM -k 60 "$secs" "$ct" tune --set resnet50 --batch 1 --trials 1000 \
    --early-stopping 300 --tuner xgb --db "$out/r50_xgb.db" --json \
    >>"$out/r50_xgb.json" 2>>"$out/r50_xgb.log"
  echo "xgb phase exit $?" ;;
random)
  for l in l1_3x3_64 l2_1x1_128_512 l3_3x3_256_s2; do
    k=$("$ct" workload --set resnet50 --batch 1 --json | grep -A1 "\"name\":.*\"$l\"" | sed -n 's/.*"key":[^"]*"\([^"]*\)".*/\1/p')
    timeout -s TERM -k 60 "$secs" "$ct" tune "$k" --trials 1000 --tuner random \
      --db "$out/r50_random.db" >>"$out/r50_random.txt" 2>>"$out/r50_random.log"
  done
  echo "random phase exit $?" ;;
curves)
  mkdir -p "$out/curves"
  for db in "$out"/r50_*.db; do
    tag=$(basename "$db" .db)
    "$ct" list --db "$db" | awk 'NR > 1 {print $NF}' | while read -r key; do
      "$ct" history "$key" --db "$db" >"$out/curves/$tag-$key.csv"
    done
  done
  echo "curves written" ;;
esac

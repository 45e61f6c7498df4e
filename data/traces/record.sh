#!/usr/bin/env bash
# Regenerate the recorded traces the chapters read by default (embedded model, default data set).
# Usage: bash data/traces/record.sh [N_LASE_FULL] [N_BASELINES]    (from the repository root; `make traces` does this)
# Every call goes through the call cache, so an interrupted recording resumes where it stopped.
set -euo pipefail
N=${1:-${N:-60}}
NB=${2:-${NB:-30}}
OUT=data/traces/arith-smollm2
RUN=".venv/bin/lase-nb run --backend local --dataset arith --seed 0 --quiet"
$RUN --strategy lase --full-chain --n "$N" --out "$OUT/lase-full"
for s in single mv mad moa down lase-mv lase-shuffled; do
  $RUN --strategy "$s" --n "$NB" --out "$OUT/$s"
done

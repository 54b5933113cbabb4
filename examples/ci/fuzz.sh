#!/usr/bin/env bash
# mlirtrace fuzz for any CI system: run it on a schedule, keep two folders between runs (restore them before,
# save them after, whatever the exit status), publish the third as the run's artifacts.
#
#   $MLIRTRACE_FUZZ_DB    Hypothesis's example database (default .mlirtrace/fuzz-db): the failing examples of
#                         earlier runs, replayed first, so a fixed bug is seen fixed and a known one found at once
#   $MLIRTRACE_FUZZ_REPROS
#                         reproducers and tickets, one per failure signature (default reproducers): keep it too,
#                         since a finding whose signature is already there is not new
#   $MLIRTRACE_FUZZ_BUDGET  seconds of fuzzing (default 600)
#   $MLIRTRACE_FUZZ_ARGS    more `mlirtrace fuzz` options (e.g. "--device nvidia --kinds gemm,attention")
#
# Exit status: 0 when nothing new was found (known signatures only count up in their tickets), 1 when a new
# signature was found (its reproducer and ticket are in $MLIRTRACE_FUZZ_REPROS), 2 bad usage, 4 no usable device.
set -uo pipefail

db="${MLIRTRACE_FUZZ_DB:-.mlirtrace/fuzz-db}"
repros="${MLIRTRACE_FUZZ_REPROS:-reproducers}"
budget="${MLIRTRACE_FUZZ_BUDGET:-600}"
mkdir -p "$db" "$repros"

# shellcheck disable=SC2086  # MLIRTRACE_FUZZ_ARGS is a list of options
mlirtrace fuzz --budget "$budget" --database "$db" --repro-dir "$repros" \
    --report "$repros/fuzz-report.json" ${MLIRTRACE_FUZZ_ARGS:-}
rc=$?

# what the folder holds now: every signature with its kind and how often it was hit
# (`mlirtrace repro run "$repros"` reruns them all: a table of fixed / still failing / fails differently)
if [ "$rc" -le 1 ] && [ -f "$repros/INDEX.json" ]; then
    mlirtrace repro list "$repros" || true
fi
exit "$rc"

#!/usr/bin/env bash
# `mpirun -n 4 stepscope analyze DIR` writes the JSON one process writes, on the real multi-rank
# fixtures and on a generated 512-rank job with a straggler; a rank file that fails mid-way stops
# every process with one error naming it and exit 2, without a hang.
# Usage: mpirun_equals_one_process.sh STEPSCOPE TRACEGEN FIXTURES_DIR
set -euo pipefail
bin=$1 tracegen=$2 fixtures=$3
# The test runs as root in CI; OpenMPI refuses root unless told twice.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mpi() { timeout 300 mpirun -n "$1" --oversubscribe "${@:2}"; }

same_json() {
  local dir=$1 processes=$2
  "$bin" analyze "$dir" -q -j1 --json "$tmp/one.json" > /dev/null || [ $? -eq 1 ]
  mpi "$processes" "$bin" analyze "$dir" -q -j1 --json "$tmp/mpi.json" > "$tmp/mpi.txt" || [ $? -eq 1 ]
  if ! cmp -s "$tmp/one.json" "$tmp/mpi.json"; then
    echo "FAIL: $dir with $processes processes: the JSON differs from one process's"
    diff <(head -c 200000 "$tmp/one.json") <(head -c 200000 "$tmp/mpi.json") | head -20
    exit 1
  fi
  # Process 0 alone prints the report.
  [ "$(grep -c '^verdict\|^inconclusive' "$tmp/mpi.txt" || true)" -le 1 ] || { echo "FAIL: several reports"; exit 1; }
  echo "ok: $dir, $processes processes"
}

same_json "$fixtures/param/dlrm_8rank/kineto" 4
same_json "$fixtures/hta/sampled_world128" 3

"$tracegen" --scenario healthy --ranks 512 --steps 3 --layers 2 --straggler-rank 317 -o "$tmp/job512" > /dev/null
same_json "$tmp/job512" 4
grep -q '"straggler": 317' "$tmp/mpi.json" || { echo "FAIL: the planted straggler (rank 317) was not found"; exit 1; }
echo "ok: straggler 317 found"

mkdir "$tmp/bad"
cp "$fixtures"/param/dlrm_8rank/kineto/worker*.json.gz "$tmp/bad/"
printf '{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": ' > "$tmp/bad/worker9_broken.pt.trace.json"
printf 'nonsense}]}' >> "$tmp/bad/worker9_broken.pt.trace.json"
set +e
mpi 4 "$bin" analyze "$tmp/bad" -q -j1 > "$tmp/bad.out" 2> "$tmp/bad.err"
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "FAIL: a broken rank file gave exit $rc, not 2"; cat "$tmp/bad.err"; exit 1; }
[ "$(grep -c 'worker9_broken' "$tmp/bad.err")" -eq 1 ] || { echo "FAIL: the error does not name the file once"; cat "$tmp/bad.err"; exit 1; }
echo "ok: a broken rank file stops the job with exit 2"

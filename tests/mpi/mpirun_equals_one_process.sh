#!/usr/bin/env bash
# `mpirun -n 4 stepscope analyze DIR` writes the JSON one process writes, on the real multi-rank
# fixtures and on a generated 512-rank job with a straggler; a rank file that fails mid-way stops
# every process with one error naming it and exit 2, without a hang.
# Process 0 alone decides the files (mixed kinds refused as by one process), prints a refusal
# once, and times out a process that sends nothing, naming it.
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

# One process decides: process 0 lists and checks the files, every process shares that listing,
# and process 0 alone prints a refusal.
mkdir "$tmp/mixed"
cp "$fixtures"/param/dlrm_8rank/kineto/worker0*.json.gz "$tmp/mixed/"
cp "$fixtures"/nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite "$tmp/mixed/"
set +e
"$bin" analyze "$tmp/mixed" -q > /dev/null 2>&1
one=$?
mpi 2 "$bin" analyze "$tmp/mixed" -q -j1 > /dev/null 2> "$tmp/mixed.err"
rc=$?
set -e
[ "$one" -eq 2 ] && [ "$rc" -eq 2 ] || { echo "FAIL: mixed inputs: one process exit $one, mpirun exit $rc"; cat "$tmp/mixed.err"; exit 1; }
[ "$(grep -c '^stepscope: error' "$tmp/mixed.err")" -eq 1 ] || { echo "FAIL: the refusal is not printed once"; cat "$tmp/mixed.err"; exit 1; }
echo "ok: mixed inputs refused once, as by one process"

set +e
mpi 3 "$bin" analyze "$fixtures/param/dlrm_8rank/kineto" -q -j1 --annotate "$tmp/ann" > /dev/null 2> "$tmp/usage.err"
set -e
[ "$(grep -c '^stepscope: error' "$tmp/usage.err")" -eq 1 ] || { echo "FAIL: a usage refusal is printed more than once"; cat "$tmp/usage.err"; exit 1; }
echo "ok: a usage refusal is printed once"

# A process that never sends (its share is a FIFO nobody writes to, named on the command line)
# is timed out, named, and the job stops instead of waiting forever.
mkdir "$tmp/stuck"
cp "$fixtures"/param/dlrm_8rank/kineto/worker0*.json.gz "$tmp/stuck/rank0.json.gz"
mkfifo "$tmp/stuck/silent.json"
set +e
STEPSCOPE_MPI_TIMEOUT_S=3 timeout 120 mpirun -n 2 --oversubscribe -x STEPSCOPE_MPI_TIMEOUT_S "$bin" analyze \
  "$tmp/stuck/rank0.json.gz" "$tmp/stuck/silent.json" -q -j1 > /dev/null 2> "$tmp/stuck.err"
rc=$?
set -e
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { echo "FAIL: a silent process gave exit $rc"; cat "$tmp/stuck.err"; exit 1; }
grep -q 'MPI process 1 sent no summary' "$tmp/stuck.err" || { echo "FAIL: the silent process is not named"; cat "$tmp/stuck.err"; exit 1; }
echo "ok: a silent process is timed out and named"

# MPI is a plugin: the binary links no libmpi and analyses alone without it; under a launcher a
# binary whose plugin is missing stops with one error line naming it and exit 2.
if ldd "$bin" | grep -q 'libmpi'; then echo "FAIL: the binary links libmpi"; exit 1; fi
mkdir "$tmp/lone"
cp "$bin" "$tmp/lone/stepscope"
"$tmp/lone/stepscope" analyze "$fixtures/param/dlrm_8rank/kineto" -q -j1 > /dev/null || [ $? -eq 1 ] \
  || { echo "FAIL: without the plugin, one process could not analyse"; exit 1; }
set +e
mpi 2 "$tmp/lone/stepscope" analyze "$fixtures/param/dlrm_8rank/kineto" -q -j1 > /dev/null 2> "$tmp/lone.err"
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "FAIL: a missing MPI plugin gave exit $rc, not 2"; cat "$tmp/lone.err"; exit 1; }
grep -q '^stepscope: error: analyze under an MPI launcher: cannot load MPI (libstepscope_mpi.so' "$tmp/lone.err" \
  || { echo "FAIL: the missing plugin is not named"; cat "$tmp/lone.err"; exit 1; }
echo "ok: MPI loaded only under a launcher, its missing plugin named"

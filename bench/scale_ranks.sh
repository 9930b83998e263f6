#!/usr/bin/env bash
# Scale-out benchmark: generated jobs of 64, 512 and 4,096 ranks (small traces, rank 3/4 of the way
# in planted as a straggler), analysed by 1, 2 and 4 MPI processes on this machine. Prints, per
# job and process count, the wall time, the time per rank, process 0's peak RSS, and whether the
# straggler was found. Usage: bench/scale_ranks.sh [BUILD] [RANKS...]
set -euo pipefail
build=${1:-build}
shift || true
if [ $# -gt 0 ]; then ranks=("$@"); else ranks=(64 512 4096); fi
bin=$build/stepscope tracegen=$build/tools/tracegen/stepscope-tracegen
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=${STEPSCOPE_BENCH_DIR:-/tmp/stepscope-bench-ranks}
mkdir -p "$work"
printf "%6s %3s %9s %12s %14s %10s %s\n" ranks P "wall s" "ms per rank" "p0 peak MiB" "trace MiB" straggler
for n in "${ranks[@]}"; do
  job=$work/job$n
  straggler=$((n * 3 / 4))
  if [ ! -d "$job" ]; then
    "$tracegen" --scenario healthy --ranks "$n" --steps 3 --layers 2 --straggler-rank "$straggler" -o "$job" > /dev/null
  fi
  mib=$(du -sm "$job" | cut -f1)
  for p in 1 2 4; do
    rm -f "$work"/time.*
    # Each process times itself; process 0's line is the one that reads, merges and reports.
    wrap="/usr/bin/time -f '%e %M' -o $work/time.\${OMPI_COMM_WORLD_RANK:-0} $bin analyze $job -q -j1 --json $work/out.json > /dev/null"
    if [ "$p" -eq 1 ]; then
      bash -c "$wrap" || true
    else
      mpirun -n "$p" --oversubscribe bash -c "$wrap" || true
    fi
    read -r wall rss < "$work/time.0"
    found=$(grep -c "\"straggler\": $straggler" "$work/out.json" || true)
    printf "%6d %3d %9.2f %12.2f %14.1f %10d %s\n" "$n" "$p" "$wall" "$(echo "$wall * 1000 / $n" | bc -l)" \
      "$(echo "$rss / 1024" | bc -l)" "$mib" "$([ "$found" -ge 1 ] && echo "found ($straggler)" || echo MISSED)"
  done
done

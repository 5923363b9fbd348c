#!/usr/bin/env bash
# The same as locality.sbatch with an MPI launcher instead of Slurm: give the
# hosts (one daemon each, two ranks each), from the directory holding the
# inputs (./inputs, or INPUTS), naming the workflow (relative to it, or
# absolute; default: examples/count-inputs.swift, run from the repository).
#   HOSTS=node0,node1,node2 examples/slurm/locality-mpiexec.sh [WORKFLOW.swift]
# LOCUS and MPIEXEC (default mpiexec) may be set; MPIEXEC_ARGS are passed to
# every mpiexec (e.g. "-launcher ssh").
set -euo pipefail
locus=${LOCUS:-locus}
script=${1:-${SCRIPT:-examples/count-inputs.swift}}
[ -f "$script" ] || { echo "no workflow $script (from $PWD): locality-mpiexec.sh WORKFLOW.swift" >&2; exit 2; }
inputs=${INPUTS:-inputs}
mpiexec=${MPIEXEC:-mpiexec}
hosts=${HOSTS:?give the hosts, e.g. HOSTS=node0,node1,node2}
n=$(tr ',' '\n' <<<"$hosts" | wc -l)
work=${WORK:-$PWD/locus-$$}
fs=$work/fs
read -r -a extra <<<"${MPIEXEC_ARGS:-}"

launcher_args=()
for a in "${extra[@]}" -hosts "$hosts"; do launcher_args+=("--launcher-arg=$a"); done
trap '"$locus" fs down --dir "$fs" --purge' EXIT
"$locus" fs up --launcher mpiexec --launcher-program "$mpiexec" --nodes "$n" --dir "$fs" "${launcher_args[@]}"
if [ -d "$inputs" ]; then
    "$locus" fs put -r --placement round-robin --dir "$fs" "$inputs" /locus/inputs
fi
"$locus" run --launcher mpiexec --launcher-program "$mpiexec" "${launcher_args[@]}" \
    -n $((2 * n)) --nodes "$n" --run-dir "$work/run" --fs "$fs" \
    --stage-out /locus/output "$work/results" "$script"
"$locus" report "$work/run"
echo "results in $work/results; the run's records in $work/run (locus report $work/run)"

#!/usr/bin/env bash
# How a Slurm job's end leaves Locus (needs root, and what scripts/setup.sh
# installs), on namespace hosts with a real Slurm (scripts/hosts.sh,
# scripts/slurm.sh), removed at the end:
#   * TRIALS times, `salloc -N 3 locus run --launcher srun` (48 short tasks,
#     the run's own file system on the 3 hosts) cancelled with `scancel` once
#     6 tasks ended: bytes of Locus stores left on the hosts after Slurm's
#     KillWait, whether run.json says interrupted and `locus report` reads it;
#   * a RANKS-rank run on HOSTS hosts cancelled mid-run: seconds from
#     `scancel` until no process of the job is left, median of ROUNDS, beside
#     the same for a job whose srun step runs `sleep` as many times (the time
#     Slurm itself takes to end a job).
#   scripts/bench-job-end.sh   (LOCUS, TRIALS=10, HOSTS=8, RANKS=64, ROUNDS=3)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
locus=$(realpath "${LOCUS:-$here/../target/release/locus}")
trials=${TRIALS:-10}
n=${HOSTS:-8}
ranks=${RANKS:-64}
rounds=${ROUNDS:-3}
# shellcheck source=bench-hosts.sh
. "$here/bench-hosts.sh"
# Enough CPUs per host for RANKS ranks on HOSTS hosts.
CPUS=$(((ranks + n - 1) / n))
export CPUS
hosts_with_slurm job-end "$n"
now() { date +%s.%N; }
# Processes whose command line holds $1 (not this script's own).
left() { pgrep -f -- "$1" | grep -vx "$$" | wc -l; }
# Waits until $1 holds at least $2 files.
wait_files() {
    for _ in $(seq 1200); do
        [ "$(find "$1" -type f 2>/dev/null | wc -l)" -ge "$2" ] && return 0
        sleep 0.05
    done
    echo "bench-job-end: $2 files never appeared in $1" >&2
    exit 1
}
# Seconds from `scancel` until no process holding $1 is left.
cancel_and_time() {
    local t0
    t0=$(now)
    on login scancel --user=root
    while [ "$(left "$1")" -gt 0 ]; do sleep 0.02; done
    awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f\n", b - a }'
}
naps() {
    cat >"$1" <<SWIFT
app (file o) nap(int i) { "sh" "-c" "sleep \$2; echo \$1 > \$0" o i $3 }
foreach i in [0:$(($4 - 1))] { file f<sprintf("$2/%i.txt", i)> = nap(i); }
SWIFT
}

grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'
echo "$(nproc) cores, $n hosts (network namespaces), Slurm $(srun --version | cut -d' ' -f2)"
echo

clean=0
readable=0
for t in $(seq "$trials"); do
    run=$work/trial$t
    mkdir -p "$run-out"
    naps "$run.swift" "$run-out" 0.4 48
    on login salloc --nodes=3 --ntasks-per-node=2 "$locus" run --launcher srun -n 6 \
        --run-dir "$run" "$run.swift" >"$run.log" 2>&1 &
    wait_files "$run-out" 6
    stores=$(grep -o '"dir": "[^"]*"' "$run/fs/cluster.json" | cut -d'"' -f4)
    on login scancel --user=root
    wait
    # Slurm's KillWait (30 s by default) bounds what may still be running.
    for _ in $(seq 600); do
        [ "$(left "$run")" -eq 0 ] && break
        sleep 0.05
    done
    bytes=0
    for s in $stores; do
        [ -e "$s" ] && bytes=$((bytes + $(du -sb "$s" | cut -f1)))
    done
    [ "$bytes" -eq 0 ] && clean=$((clean + 1))
    if grep -q '"Interrupted"' "$run/run.json" 2>/dev/null &&
        "$locus" report "$run" | grep -q interrupted; then
        readable=$((readable + 1))
    fi
    printf 'trial %2d: %8d bytes of stores left, run.json %s\n' "$t" "$bytes" \
        "$(grep -o '"error_kind": *"[A-Za-z]*"' "$run/run.json" 2>/dev/null || echo missing)"
done
echo "after scancel: no store left in $clean of $trials trials; run readable as interrupted in $readable of $trials"
echo

printf '%-44s %9s %9s %7s\n' "seconds from scancel to no process (median of $rounds)" locus srun ratio
per=$(((ranks + n - 1) / n))
ours=()
theirs=()
busy=()
for r in $(seq "$rounds"); do
    run=$work/big$r
    mkdir -p "$run-out"
    naps "$run.swift" "$run-out" 30 $((ranks * 4))
    on login salloc --nodes="$n" --ntasks-per-node="$per" "$locus" run --launcher srun \
        -n "$ranks" --run-dir "$run" "$run.swift" >"$run.log" 2>&1 &
    # Every worker busy with a task.
    for _ in $(seq 6000); do
        [ "$(pgrep -f -- "sleep 30" | wc -l)" -ge $((ranks - ranks / 64 - 1)) ] && break
        sleep 0.05
    done
    busy+=("$(pgrep -f -- "sleep 30" | wc -l)")
    ours+=("$(cancel_and_time "$run")")
    wait
    mark=$((100000 + r))
    on login salloc --nodes="$n" --ntasks-per-node="$per" srun --ntasks="$ranks" sleep "$mark" \
        >/dev/null 2>&1 &
    for _ in $(seq 6000); do
        [ "$(pgrep -f -- "sleep $mark" | wc -l)" -ge "$ranks" ] && break
        sleep 0.05
    done
    theirs+=("$(cancel_and_time "sleep $mark")")
    wait
done
a=$(printf '%s\n' "${ours[@]}" | median)
b=$(printf '%s\n' "${theirs[@]}" | median)
c=$(printf '%s\n' "${busy[@]}" | median)
awk -v l="$ranks ranks on $n hosts ($c apps running)" -v a="$a" -v b="$b" \
    'BEGIN { printf "%-44s %9.3f %9.3f %7.2f\n", l, a, b, a / b }'

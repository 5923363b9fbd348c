#!/usr/bin/env bash
# Deployment on a job's hosts through a real launcher, beside same-run
# baselines (needs root, and what scripts/setup.sh installs):
#   * `locus fs up --launcher srun` on NODES hosts, beside the launcher alone
#     (`srun` starting `true` once per host);
#   * staging FILES files of 1 MiB in (`fs put -r`) and out (`fs get -r`),
#     beside the same bytes copied by `cp` on every host at once, each host
#     its share (the bound of that path here: the hosts share this machine's
#     disk, which plays the shared file system);
#   * seed 004's map/reduce and filecopy (`locus bench mapreduce`,
#     `locus bench filecopy`) on the file system deployed through srun, their
#     ranks started by srun, beside the same benchmarks on the emulator's own
#     cluster with the same links: each configuration's speed-up over
#     placement-agnostic tasks, both ways.
# Hosts are network namespaces with their own names and addresses
# (scripts/hosts.sh), Slurm runs on them (scripts/slurm.sh); both are
# removed at the end.
#   scripts/bench-deploy.sh   (LOCUS, NODES=8, FILES=1000, ROUNDS=3,
#                              LINK=1gbit, MR_FILES=32, MR_MIB=8, FC_MIB=64)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
locus=$(realpath "${LOCUS:-$here/../target/release/locus}")
n=${NODES:-8}
files=${FILES:-1000}
rounds=${ROUNDS:-3}
link=${LINK:-1gbit}
# The emulator's bucket: 10 ms of traffic, at least 64 KiB.
bits=$(numfmt --from=si "$(echo "${link%bit}" | tr a-z A-Z)")
burst=$(awk -v r="$bits" 'BEGIN { b = r / 800; print (b < 65536 ? 65536 : b) "b" }')
# shellcheck source=bench-hosts.sh
. "$here/bench-hosts.sh"
LINK=$link BURST=$burst
export LINK BURST
hosts_with_slurm deploy "$n"
# Seconds `"$@"` takes, started with no dirty pages left from the step
# before (so no step pays for another's writeback).
timed() {
    local t0 t1
    sync
    t0=$(date +%s.%N)
    "$@" >/dev/null
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}
row() { awk -v l="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%-44s %9.3f %9.3f %7.2f\n", l, a, b, a / b }'; }

grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'
echo "$(nproc) cores, $n hosts (network namespaces, links $link), Slurm $(srun --version | cut -d' ' -f2)"
echo
printf '%-44s %9s %9s %7s\n' "seconds (median of $rounds)" locus baseline ratio

# 1. Forming the file system through srun, beside srun alone.
up=() launcher=()
for r in $(seq "$rounds"); do
    launcher+=("$(timed on login srun --nodes="$n" --ntasks-per-node=1 true)")
    up+=("$(timed on login "$locus" fs up --launcher srun --nodes "$n" --dir "$work/fs$r")")
    on login "$locus" fs down --dir "$work/fs$r" --purge >/dev/null
    # The next srun must not wait for this job's resources.
    while [ -n "$(on login squeue -h)" ]; do sleep 0.05; done
done
up_s=$(printf '%s\n' "${up[@]}" | median)
launcher_s=$(printf '%s\n' "${launcher[@]}" | median)
row "fs up, $n hosts (vs srun true on each)" "$up_s" "$launcher_s"

# 2. Staging in and out, beside cp on every host at once.
mkdir -p "$work/in"
for i in $(seq "$files"); do head -c 1048576 /dev/urandom >"$work/in/f$i"; done
on login "$locus" fs up --launcher srun --nodes "$n" --dir "$work/fs" >/dev/null
# Each host's share: the files round-robin puts on it.
copy_shares() { # FROM TO
    local pids=()
    for k in $(seq 0 $((n - 1))); do
        mkdir -p "$2/node$k"
        on "node$k" sh -c "cd '$1' && ls | awk 'NR % $n == $k' | xargs -P 4 -n 32 cp -t '$2/node$k'" &
        pids+=($!)
    done
    wait "${pids[@]}"
}
# Each host copies its share back out.
copy_back() { # FROM TO
    local pids=()
    mkdir -p "$2"
    for k in $(seq 0 $((n - 1))); do
        on "node$k" sh -c "ls -d '$1/node$k'/* | xargs -P 4 -n 32 cp -t '$2'" &
        pids+=($!)
    done
    wait "${pids[@]}"
}
ins=() outs=() cps=() cpouts=()
for r in $(seq "$rounds"); do
    ins+=("$(timed on login "$locus" fs put -r --placement round-robin --dir "$work/fs" "$work/in" "/in$r")")
    outs+=("$(timed on login "$locus" fs get -r --dir "$work/fs" "/in$r" "$work/out$r")")
    cps+=("$(timed copy_shares "$work/in" "$work/raw$r")")
    cpouts+=("$(timed copy_back "$work/raw$r" "$work/rawout$r")")
    cmp -s "$work/in/f$files" "$work/out$r/f$files"
    rm -rf "$work/out$r" "$work/raw$r" "$work/rawout$r"
done
rate() { printf '%s\n' "$@" | median | awk -v f="$files" '{ print f * 1.048576 / $1 }'; }
printf '\n%-44s %9s %9s %7s\n' "MB/s (median of $rounds)" locus baseline ratio
row "stage in $files x 1 MiB (vs cp per host)" "$(rate "${ins[@]}")" "$(rate "${cps[@]}")"
row "stage out $files x 1 MiB (vs cp per host)" "$(rate "${outs[@]}")" "$(rate "${cpouts[@]}")"
# What the hosts' links carry at once: the bound on a cluster, where each
# host's share crosses its own link to the shared file system.
links=$(awk -v n="$n" -v r="$bits" 'BEGIN { print n * r / 8e6 }')
row "stage in (vs $n links of $link)" "$(rate "${ins[@]}")" "$links"
row "stage out (vs $n links of $link)" "$(rate "${outs[@]}")" "$links"
on login "$locus" fs down --dir "$work/fs" --purge >/dev/null

# 3. The seed workflows through srun, beside the emulator's launcher,
# alternating, ROUNDS times each: `compare BENCH ARGS…`.
compare() {
    local bench=$1
    shift
    for r in $(seq "$rounds"); do
        sync
        on login salloc --nodes="$n" --ntasks-per-node=2 sh -c "
            '$locus' fs up --launcher srun --dir '$work/$bench-fs$r' >/dev/null &&
            '$locus' bench $bench --fs '$work/$bench-fs$r' --launcher srun $* \
                --dir '$work/$bench-srun$r' --out '$work/$bench-srun-out$r' >'$work/$bench-srun.log' 2>&1
            code=\$?; '$locus' fs down --dir '$work/$bench-fs$r' --purge >/dev/null; exit \$code" \
            >/dev/null 2>&1 || { cat "$work/$bench-srun.log"; exit 1; }
        sync
        "$locus" bench "$bench" --nodes "$n" --link "$link" --storage-link "$link" --host-cpus off \
            "$@" --dir "$work/$bench-emu$r" --out "$work/$bench-emu-out$r" >"$work/$bench-emu.log" 2>&1 ||
            { cat "$work/$bench-emu.log"; exit 1; }
    done
    python3 - "$work" "$rounds" "$bench" <<'EOF'
import json, statistics, sys
work, rounds, bench = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def medians(side):
    def outcomes(r):
        res = json.load(open(f"{work}/{bench}-{side}-out{r}/{bench}.json"))
        return res["steps"][0]["outcomes"] if "steps" in res else res["outcomes"]
    runs = [outcomes(r) for r in range(1, rounds + 1)]
    return {o["config"]["name"]: statistics.median(run[k]["seconds"] for run in runs)
            for k, o in enumerate(runs[0]) if not o["config"]["central"]}
srun, emu = medians("srun"), medians("emu")
base = "DP-def TP-loc-ag"
print(f"\n{bench}: speed-up over {base} (median seconds of {rounds})")
print(f"{'configuration':<28} {'srun':>15} {'emulator':>15} {'ratio':>7}")
for name in srun:
    s, e = srun[base] / srun[name], emu[base] / emu[name]
    print(f"{name:<28} {s:>6.2f} ({srun[name]:5.2f} s) {e:>6.2f} ({emu[name]:5.2f} s) {s / e:>7.2f}")
EOF
}
compare mapreduce --files "${MR_FILES:-32}" --size-mib "${MR_MIB:-8}" --workers-per-node 1
compare filecopy --size-mib "${FC_MIB:-64}" --workers-per-node 1

# Sourced by the benchmarks that run on namespace hosts with a real Slurm
# (scripts/hosts.sh, scripts/slurm.sh; root). `hosts_with_slurm NAME N`
# makes $work, the hosts `login` and node0..node<N-1> (listed in $nodes;
# LINK and BURST in the environment shape their links, CPUS sets their
# Slurm CPUs) and Slurm on them, all removed when the script exits; then
# `on HOST CMD…` runs CMD on a host, and `median` prints the median of the
# numbers on its input. Expects $here (the scripts directory).
hosts_with_slurm() {
    work=$(mktemp -d "/tmp/locus-bench-$1.XXXXXX")
    trap remove_hosts EXIT
    nodes=()
    for k in $(seq 0 $(($2 - 1))); do nodes+=("node$k"); done
    "$here/hosts.sh" up "$work" login "${nodes[@]}"
    "$here/slurm.sh" up "$work"
    export SLURM_CONF="$work/slurm.conf"
}
remove_hosts() {
    "$here/slurm.sh" down "$work" >/dev/null 2>&1 || true
    "$here/hosts.sh" down "$work" >/dev/null 2>&1 || true
    rm -rf "$work"
}
on() { "$here/hosts.sh" exec "$work" "$@"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

#!/usr/bin/env bash
# A real Slurm cluster on hosts made by hosts.sh: slurmctld on the first
# host (the login host), one slurmd per other host, munge with its key and
# socket in DIR. Every Slurm command must see SLURM_CONF=DIR/slurm.conf (so
# nothing asks DNS) and run on a host (`hosts.sh exec DIR login …`). Needs
# root and Debian's slurmctld, slurmd, slurm-client and munge.
#
#   slurm.sh up DIR      start munge, slurmctld and the slurmds (CPUS=2 each);
#                        wait for idle nodes
#   slurm.sh down DIR    cancel jobs, stop them all
set -euo pipefail

cmd=${1:?usage: slurm.sh up|down DIR}
dir=$(cd "${2:?usage: slurm.sh up|down DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC1091
. "$dir/hosts.env"
read -r -a hosts <<<"$HOSTS"
login=${hosts[0]}
nodes=("${hosts[@]:1}")
on() { "$here/hosts.sh" exec "$dir" "$@"; }
export SLURM_CONF="$dir/slurm.conf"

case "$cmd" in
up)
    mkdir -p "$dir/slurm/state" "$dir/slurm/spool" "$dir/munge"
    chmod 700 "$dir/munge"
    head -c 1024 /dev/urandom >"$dir/munge/munge.key"
    chmod 400 "$dir/munge/munge.key"
    # Inside the login host: any name it resolves comes from its /etc/hosts.
    on "$login" munged --force --socket="$dir/munge/munge.sock" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
        --seed-file="$dir/munge/munged.seed"
    addr() { awk -v h="$1" '$2 == h { print $1 }' "$dir/etc-hosts"; }
    names=$(
        IFS=,
        echo "${nodes[*]}"
    )
    addrs=$(for n in "${nodes[@]}"; do addr "$n"; done | paste -sd,)
    cat >"$dir/slurm.conf" <<EOF
ClusterName=locus
SlurmctldHost=$login($(addr "$login"))
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
StateSaveLocation=$dir/slurm/state
SlurmdSpoolDir=$dir/slurm/spool/%n
SlurmctldPidFile=$dir/slurm/slurmctld.pid
SlurmdPidFile=$dir/slurm/slurmd-%n.pid
SlurmctldLogFile=$dir/slurm/slurmctld.log
SlurmdLogFile=$dir/slurm/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
NodeName=DEFAULT CPUs=${CPUS:-2} RealMemory=1024 State=UNKNOWN
NodeName=$names NodeHostname=$names NodeAddr=$addrs
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
    echo "CgroupPlugin=cgroup/v1" >"$dir/cgroup.conf"
    on "$login" env SLURM_CONF="$SLURM_CONF" slurmctld -D </dev/null >>"$dir/slurm/slurmctld.out" 2>&1 &
    for n in "${nodes[@]}"; do
        on "$n" env SLURM_CONF="$SLURM_CONF" slurmd -D -N "$n" </dev/null >>"$dir/slurm/slurmd-$n.out" 2>&1 &
    done
    for _ in $(seq 300); do
        idle=$(on "$login" env SLURM_CONF="$SLURM_CONF" sinfo -h -t idle -o %D 2>/dev/null || true)
        [ "${idle:-0}" = "${#nodes[@]}" ] && exit 0
        sleep 0.1
    done
    echo "slurm.sh: the nodes did not come up; see $dir/slurm/*.log" >&2
    exit 1
    ;;
down)
    [ -f "$dir/slurm.conf" ] || exit 0
    on "$login" env SLURM_CONF="$SLURM_CONF" scancel --full --quiet -u root 2>/dev/null || true
    for f in "$dir"/slurm/slurmd-*.pid "$dir/slurm/slurmctld.pid" "$dir/munge/munged.pid"; do
        [ -s "$f" ] || continue
        pid=$(cat "$f")
        case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
        slurmd | slurmctld | munged) kill "$pid" 2>/dev/null || true ;;
        esac
    done
    rm -f "$dir/slurm.conf"
    ;;
*)
    echo "slurm.sh: unknown command $cmd" >&2
    exit 2
    ;;
esac

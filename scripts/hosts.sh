#!/usr/bin/env bash
# Separate "hosts" on this machine for multi-host tests with real launchers:
# each host is a network namespace on a bridge (its own address) with its
# own UTS namespace (hostname) and mount namespace (its /etc/hosts lists every
# host; /etc/resolv.conf has no nameserver, so nothing asks DNS), held open
# by one `sleep` process; its /sys is its own, with an empty cgroup mount
# (so a daemon that sets up cgroups, like slurmd, touches nothing of the
# machine's). They share the machine's file system, which plays the
# cluster's shared file system. Needs root.
#
#   hosts.sh up DIR HOST...     make the hosts (the first is the login host);
#                               LINK=RATE (tc units, e.g. 1gbit) shapes each
#                               host's link both ways
#   hosts.sh exec DIR HOST CMD  run CMD inside HOST's namespaces
#   hosts.sh down DIR           stop every process on the hosts, remove them
#
# DIR/ssh is an `ssh` stand-in for launchers (MPICH's `-launcher-exec`): it
# ignores ssh options and runs the command on the named host.
set -euo pipefail

cmd=${1:?usage: hosts.sh up|exec|down DIR ...}
dir=${2:?usage: hosts.sh up|exec|down DIR ...}
shift 2

holder() { cat "$dir/holder-$1.pid"; }

case "$cmd" in
up)
    (($# >= 1)) || { echo "hosts.sh up: name at least one host" >&2; exit 2; }
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    id=$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')
    br="lh-$id-br"
    {
        echo "ID=$id"
        echo "HOSTS=\"$*\""
    } >"$dir/hosts.env"
    # Listed before they exist, so `down` removes whatever `up` made.
    ip netns add "$br"
    ip -n "$br" link add br0 type bridge
    ip -n "$br" link set br0 up
    printf '127.0.0.1 localhost\n' >"$dir/etc-hosts"
    printf '# no nameserver: names come from /etc/hosts only\n' >"$dir/resolv.conf"
    k=1
    for h in "$@"; do
        printf '10.77.0.%d %s\n' "$k" "$h" >>"$dir/etc-hosts"
        k=$((k + 1))
    done
    k=1
    for h in "$@"; do
        ns="lh-$id-$h"
        ip netns add "$ns"
        ip -n "$ns" link add eth0 type veth peer name "p$k" netns "$br"
        ip -n "$br" link set "p$k" master br0
        ip -n "$br" link set "p$k" up
        ip -n "$ns" addr add "10.77.0.$k/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
        if [ -n "${LINK:-}" ]; then
            for end in "$ns eth0" "$br p$k"; do
                read -r n d <<<"$end"
                tc -n "$n" qdisc add dev "$d" root tbf rate "$LINK" burst "${BURST:-256kb}" latency 100ms
            done
        fi
        nsenter --net="/run/netns/$ns" unshare --uts --mount --propagation slave \
            sh -c "hostname $h; mount --bind $dir/etc-hosts /etc/hosts; \
                   mount --bind $dir/resolv.conf /etc/resolv.conf; \
                   mount -t sysfs sysfs /sys; mount -t tmpfs cgroup /sys/fs/cgroup; \
                   echo \$\$ > $dir/holder-$h.pid; exec sleep infinity" \
            </dev/null >/dev/null 2>&1 &
        k=$((k + 1))
    done
    for h in "$@"; do
        for _ in $(seq 200); do
            [ -s "$dir/holder-$h.pid" ] && break
            sleep 0.01
        done
        [ -s "$dir/holder-$h.pid" ] || { echo "hosts.sh: $h did not start" >&2; exit 1; }
    done
    cat >"$dir/ssh" <<EOF
#!/usr/bin/env bash
# ssh stand-in: skip options, run the command on the named host.
while [ \$# -gt 0 ]; do
    case "\$1" in
    -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
    -*) shift ;;
    *) break ;;
    esac
done
host=\$1; shift
exec nsenter -t "\$(cat $dir/holder-\$host.pid)" -n -u -m sh -c "\$*"
EOF
    chmod +x "$dir/ssh"
    ;;
exec)
    h=${1:?hosts.sh exec DIR HOST CMD...}
    shift
    exec nsenter -t "$(holder "$h")" -n -u -m -- "$@"
    ;;
down)
    [ -f "$dir/hosts.env" ] || exit 0
    # shellcheck disable=SC1091
    . "$dir/hosts.env"
    for h in $HOSTS; do
        ns="lh-$ID-$h"
        # Every process left on the host, then its holder.
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
        if [ -s "$dir/holder-$h.pid" ]; then
            pid=$(cat "$dir/holder-$h.pid")
            [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sleep ] && kill -9 "$pid" 2>/dev/null || true
        fi
        ip netns del "$ns" 2>/dev/null || true
    done
    ip netns del "lh-$ID-br" 2>/dev/null || true
    rm -f "$dir/hosts.env" "$dir"/holder-*.pid
    ;;
*)
    echo "hosts.sh: unknown command $cmd" >&2
    exit 2
    ;;
esac

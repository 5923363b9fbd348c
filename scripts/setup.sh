#!/usr/bin/env bash
# Installs what building and running Locus needs on a Debian machine.
# Idempotent: packages already present are not reinstalled.
set -euo pipefail

packages=(build-essential pkg-config ca-certificates mpich iproute2 chromium python3 python3-venv fuse3 git fio fsmark graphviz)
# Real site launchers for the multi-host tests (mpich above, Slurm here),
# and R for Swift/T's R() builtin.
launchers=(slurmctld slurmd slurm-client munge r-base-core)
missing() { for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done; }
mapfile -t need < <(missing "${packages[@]}")
mapfile -t need_launchers < <(missing "${launchers[@]}")
if ((${#need[@]} + ${#need_launchers[@]})); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update
    install() { $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@"; }
    ((${#need[@]} == 0)) || install "${need[@]}"
    # Their recommends (mail, docs) are not needed; their services are not started.
    ((${#need_launchers[@]} == 0)) || install --no-install-recommends "${need_launchers[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] || {
        echo "setup: Rust (cargo) is required; install it with rustup (https://rustup.rs)" >&2
        exit 1
    }
fi

# The test runner `make test` uses (every binary's tests side by side).
cargo="$(command -v cargo || echo "$HOME/.cargo/bin/cargo")"
if ! "$cargo" nextest --version >/dev/null 2>&1; then
    "$cargo" install --locked cargo-nextest@0.9.151
fi

# The Python package's environment (.venv): maturin builds the extension,
# pytest, pandas and fsspec test it. Installed again only when the list
# changes.
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv"
req="$root/crates/locus-py/requirements-dev.txt"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if [ ! -f "$venv/.installed" ] || [ "$req" -nt "$venv/.installed" ]; then
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -r "$req"
    touch "$venv/.installed"
fi

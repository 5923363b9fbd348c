#!/usr/bin/env bash
# Installs what building and running Locus needs on a Debian machine.
# Idempotent: packages already present are not reinstalled.
set -euo pipefail

packages=(build-essential pkg-config ca-certificates mpich iproute2 chromium)
missing=()
for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] || {
        echo "setup: Rust (cargo) is required; install it with rustup (https://rustup.rs)" >&2
        exit 1
    }
fi

#!/usr/bin/env bash
# Builds libfuse's own `passthrough` example, the create-rate baseline of
# `locus bench mount`, from Debian's source of the libfuse installed here
# (fuse3 3.14.0, checked by its SHA-256), into target/baselines/.
set -euo pipefail

out=target/baselines/fuse-passthrough
[ -x "$out" ] && exit 0
version=3.14.0
sha256=96115b2a8ff34bd1e0c7b00c5dfd8297571d7e165042b94498c9a26356a9a70a
url=http://deb.debian.org/debian/pool/main/f/fuse3/fuse3_${version}.orig.tar.xz

if ! dpkg -s libfuse3-dev >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y libfuse3-dev
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
curl -fsSL -o "$work/fuse3.tar.xz" "$url"
echo "$sha256  $work/fuse3.tar.xz" | sha256sum --check --quiet
tar -xJf "$work/fuse3.tar.xz" -C "$work" "fuse-${version}/example"
mkdir -p "$(dirname "$out")"
# shellcheck disable=SC2046 # pkg-config's flags are separate words
gcc -O2 -o "$out" "$work/fuse-${version}/example/passthrough.c" $(pkg-config fuse3 --cflags --libs)
echo "built $out (libfuse ${version}'s example/passthrough.c)"

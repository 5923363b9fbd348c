#!/bin/sh
# Stand-in for seed 003's matcher: scores a docking result.
# usage: match.sh IN OUT
{ printf 'score %s ' "$(cut -d' ' -f2,3 "$1" | tr ' ' '+')"; cut -d' ' -f4 "$1"; } > "$2"

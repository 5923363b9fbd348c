#!/bin/sh
# Stand-in for seed 003's docking program: "docks" two molecules.
# usage: docking.sh IN1 IN2 OUT
{ printf 'dock %s %s ' "$(basename "$1")" "$(basename "$2")"; cat "$1" "$2" | cksum; } > "$3"

#!/bin/sh
# Stand-in for seed 004's writer: fills the file given with 1 MiB.
head -c 1048576 /dev/zero > "$1"

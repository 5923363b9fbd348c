#!/bin/sh
# Stand-in for seed 004's Java reader: reads the file and prints its size.
wc -c < "$1"

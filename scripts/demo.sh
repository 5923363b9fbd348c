#!/usr/bin/env bash
# A small tour of the Locus file system on a 4-node local cluster: data stays
# on the node that wrote it, every node sees it, and `locate` says where it is.
set -euo pipefail
locus=${LOCUS:-target/release/locus}
dir=$(mktemp -d /tmp/locus-demo.XXXXXX)
trap '$locus fs down --dir "$dir" --purge >/dev/null 2>&1 || true' EXIT

run() { echo "\$ locus $*"; "$locus" "$@"; }

run fs up --nodes 4 --dir "$dir"
printf 'sample,value\na,1\nb,2\n' > "$dir/input.csv"
run fs mkdir --dir "$dir" /experiment
run fs put --dir "$dir" --node 1 "$dir/input.csv" /experiment/input.csv
echo "# written on node 1, so node 1 holds it:"
run fs locate --dir "$dir" /experiment/input.csv
echo "# read on node 3: fetched whole and kept there as a cached replica:"
run fs cat --dir "$dir" --node 3 /experiment/input.csv
run fs locate --dir "$dir" /experiment/input.csv
echo "# place a file not yet written on node 2:"
run fs place --dir "$dir" /experiment/result.csv 2
run fs put --dir "$dir" --node 0 "$dir/input.csv" /experiment/result.csv
run fs locate --dir "$dir" /experiment/result.csv
run fs ls --dir "$dir" --long /experiment
run fs status --dir "$dir"
echo "# a workflow: futures, a composite function and parallel iterations:"
run run examples/hello.swift
echo "# seed 001, Fig. 4 on 4 emulated nodes (each with its own file-system daemon):"
echo "# inputs spread over the nodes, each task placed where its input lives"
run run -n 9 --nodes 4 --summary examples/locality-loop.swift
echo "# parallel tasks: MPI simulations of two ranks (@par=2), each rank's output"
echo "# kept on its node, then sixteen analyses of each run next to them"
run run -n 9 --nodes 4 --summary examples/par-simulate.swift

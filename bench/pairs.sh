#!/bin/sh
# pairs.sh runs one benchmark's polite row and a peer's back to back, in
# ROUNDS short processes, and prints the ratio of each round and their
# spread. It is for contended benchmarks on a shared machine.
#
# Why rounds: this 2-vCPU VM runs a contended benchmark in one of two states
# (the same take at two cores measures about 14 or about 28 ns) and switches
# between them in the middle of a run. `-count 10` runs each row's ten counts
# in a row, so polite can land in one state and the peer in the other, and a
# single benchstat then shows a ratio off by up to 2x either way. A round runs
# both rows within a second, so each ratio compares like with like.
#
#   make bench-pairs                                   # AllowNParallel at 2 cores
#   BENCH='TakeParallel$' PEER=uber ROUNDS=30 sh bench/pairs.sh
set -eu
bench=${BENCH:-AllowNParallel\$}
peer=${PEER:-xrate}
rounds=${ROUNDS:-20}
cpu=${CPU:-2}
benchtime=${PAIR_BENCHTIME:-300ms}
go=${GO:-go}

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$(dirname "$0")"
GOWORK=off "$go" test -c -o "$dir/bench.test" .

i=0
while [ "$i" -lt "$rounds" ]; do
	i=$((i + 1))
	"$dir/bench.test" -test.run '^$' -test.bench "$bench" -test.cpu "$cpu" \
		-test.count 1 -test.benchtime "$benchtime" >"$dir/round.txt"
	awk -v peer="$peer" -v i="$i" '
		$1 ~ /\/polite(-[0-9]+)?$/ { p = $3 }
		$1 ~ ("/" peer "(-[0-9]+)?$") { x = $3 }
		END {
			if (p == "" || x == "") { print "round " i ": no polite or " peer " row" > "/dev/stderr"; exit 1 }
			printf "round %d: polite %s ns/op, %s %s ns/op, ratio %.3f\n", i, p, peer, x, p / x
		}' "$dir/round.txt" >>"$dir/ratios.txt"
	tail -n 1 "$dir/ratios.txt"
done

sort -t " " -k 10 -n "$dir/ratios.txt" | awk '
	{ r[NR] = $10 }
	END { printf "ratio polite/peer over %d rounds: min %.3f, median %.3f, max %.3f\n", NR, r[1], r[int((NR + 1) / 2)], r[NR] }'

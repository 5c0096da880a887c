#!/bin/sh
# instr.sh counts the instructions redis-server runs inside its scripts
# (EVAL, EVALSHA) per request, under valgrind's callgrind, for polite's
# Redis store and for go-redis/redis_rate, over one hot host and over
# 1,000 hosts (TestRedisLoad's load: BenchmarkRedisRequest's pattern).
# Unlike requests/s or CPU time, the count does not move with the load of
# a shared machine, so a change to a script can be judged on a busy one.
# A warm-up of 4,096 requests goes first, uncounted (callgrind_control -z).
# Needs valgrind (apt-get install valgrind) and redis-server.
#
#   sh bench/instr.sh                 # from the repository root
#   N=64000 PEERS=polite HOSTS=1000 sh bench/instr.sh
#   KEEP=/tmp/cg sh bench/instr.sh   # keeps callgrind.<peer>.<hosts> there, for
#                                     # callgrind_annotate --inclusive=yes
set -eu
n=${N:-20032}
peers=${PEERS:-polite redis_rate}
hostsets=${HOSTS:-1 1000}
go=${GO:-go}
for tool in valgrind callgrind_control redis-server redis-cli; do
	command -v "$tool" >/dev/null || { echo "instr.sh: $tool not found (apt-get install valgrind redis-server)" >&2; exit 1; }
done
dir=$(mktemp -d)
vg=
trap '[ -n "$vg" ] && kill "$vg" 2>/dev/null; rm -rf "$dir"' EXIT
cd "$(dirname "$0")"
GOWORK=off "$go" test -c -o "$dir/bench.test" .

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

for peer in $peers; do
	for hosts in $hostsets; do
		p=$(port)
		valgrind --tool=callgrind --callgrind-out-file="$dir/out" --toggle-collect=evalShaCommand \
			--toggle-collect=evalCommand "$(command -v redis-server)" --port "$p" --bind 127.0.0.1 \
			--save '' --appendonly no >"$dir/redis.log" 2>&1 &
		vg=$!
		i=0
		until redis-cli -p "$p" ping >/dev/null 2>&1; do
			i=$((i + 1)); [ "$i" -lt 100 ] || { echo "instr.sh: redis-server under valgrind did not start" >&2; exit 1; }
			sleep 0.2
		done
		"$dir/bench.test" -test.run '^TestRedisLoad$' -load-addr "127.0.0.1:$p" -load-peer "$peer" \
			-load-hosts "$hosts" -load-n 4096 >/dev/null
		callgrind_control -z "$vg" >/dev/null 2>&1
		redis-cli -p "$p" config resetstat >/dev/null
		"$dir/bench.test" -test.run '^TestRedisLoad$' -load-addr "127.0.0.1:$p" -load-peer "$peer" \
			-load-hosts "$hosts" -load-n "$n" >/dev/null
		calls=$(redis-cli -p "$p" info commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')
		redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true
		wait "$vg" || true
		vg=
		[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$dir/out" "$KEEP/callgrind.$peer.$hosts"
		ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p; s/^totals: *\([0-9]*\).*/\1/p' "$dir/out" | head -1)
		echo "$peer hosts=$hosts: $((ir / n)) instructions/request, $((n / ${calls:-1})) requests/script call ($n requests, $calls calls)"
	done
done

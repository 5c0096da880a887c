#!/usr/bin/env bash
# Throughput of `polite fetch` with durable state on: 100,000 URLs over 1,000
# testbed hosts on loopback (each on its own 127.0.0.x address, in a separate
# `polite testbed` process), with no binding limits. It prints URLs/s and the
# peak RSS (from /usr/bin/time -v) and fails below MIN_RATE URLs/s or above
# MAX_RSS_MB.
#
#   bash crawl/testdata/throughput.sh            # from the repository root
#   HOSTS=100 PAGES=100 bash crawl/testdata/throughput.sh
#   ADAPTIVE=true bash crawl/testdata/throughput.sh   # the adaptive controller on
#   WARC_GZIP=false bash crawl/testdata/throughput.sh  # bodies.warc, uncompressed
#   TAGS=cpuprofile POLITE_CPUPROFILE=/tmp/fetch.cpu bash crawl/testdata/throughput.sh  # where the CPU goes
#   TAGS=cpuprofile POLITE_MEMPROFILE=/tmp/fetch.mem bash crawl/testdata/throughput.sh  # what it allocates (-sample_index=alloc_objects)
#
#   PAGES=10000 MAX_RSS_MB=1000 DURATION=60m bash crawl/testdata/throughput.sh  # 10,000,000 URLs
#   BARE=true bash crawl/testdata/throughput.sh  # first the floors: net/http alone (bareclient),
#                                                # then with polite fetch's durable state and WARC (-durable)
#
# The testbed shares the machine's cores with the fetch, so its CPU per URL
# is printed too: what the two processes need together bounds URLs/s.
#
# Everything stays on 127.0.0.0/8; the testbed stops by itself after
# DURATION (10 min).
set -euo pipefail
cd "$(dirname "$0")/../.."
HOSTS=${HOSTS:-1000}
PAGES=${PAGES:-100}
MIN_RATE=${MIN_RATE:-5000}
MAX_RSS_MB=${MAX_RSS_MB:-300}
BODIES=${BODIES:-warc}
ADAPTIVE=${ADAPTIVE:-false}
WARC_GZIP=${WARC_GZIP:-true}
DURATION=${DURATION:-10m}

tmp=$(mktemp -d)
tb=
cleanup() {
  if [ -n "$tb" ]; then kill "$tb" 2>/dev/null || true; wait "$tb" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

go build ${TAGS:+-tags "$TAGS"} -o "$tmp/polite" ./cmd/polite
env -u POLITE_CPUPROFILE -u POLITE_MEMPROFILE "$tmp/polite" testbed --hosts "$HOSTS" --pages "$PAGES" --urls "$tmp/urls.txt" --duration "$DURATION" >"$tmp/testbed.log" 2>&1 &
tb=$!
for _ in $(seq 300); do
  grep -q '^serving' "$tmp/testbed.log" 2>/dev/null && break
  kill -0 "$tb" 2>/dev/null || { cat "$tmp/testbed.log"; exit 1; }
  sleep 0.1
done
grep -q '^serving' "$tmp/testbed.log" || { echo "testbed did not start"; cat "$tmp/testbed.log"; exit 1; }
n=$(wc -l <"$tmp/urls.txt")
hz=$(getconf CLK_TCK)
tbcpu() { awk '{print $14 + $15}' "/proc/$tb/stat"; }
tbper() { awk -v a="$1" -v b="$2" -v hz="$hz" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / hz * 1e6 / n }'; }

if [ "${BARE:-false}" = true ]; then
  go build -o "$tmp/bareclient" ./crawl/testdata/bareclient
  a=$(tbcpu)
  "$tmp/bareclient" "$tmp/urls.txt"
  echo "testbed under bare net/http: $(tbper "$a" "$(tbcpu)") µs CPU/URL"
  # The durable floor: what polite fetch's promises cost by themselves
  # (bareclient -durable: state, WARC and results, group-committed).
  "$tmp/bareclient" -durable "$tmp/floor" "$tmp/urls.txt"
  rm -rf "$tmp/floor"
fi

a=$(tbcpu)
set +e
/usr/bin/time -v "$tmp/polite" fetch --out "$tmp/out" --rate inf --workers 128 \
  --adaptive="$ADAPTIVE" --bodies "$BODIES" --warc-gzip="$WARC_GZIP" --progress none "$tmp/urls.txt" >"$tmp/fetch.log" 2>"$tmp/time.log"
code=$?
set -e
tb_us=$(tbper "$a" "$(tbcpu)")
if [ "$code" != 0 ]; then
  echo "polite fetch exited $code"; cat "$tmp/fetch.log" "$tmp/time.log"; exit 1
fi
lines=$(wc -l <"$tmp/out/results.jsonl")
ok=$(grep -c '"outcome":"ok"' "$tmp/out/results.jsonl" || true)
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$tmp/time.log")
rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tmp/time.log")
secs=$(echo "$wall" | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
rate=$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')
rss_mb=$((rss_kb / 1024))
cpu=$(awk -F': ' '/User time \(seconds\)/ {u=$2} /System time \(seconds\)/ {s=$2} END {print u + s}' "$tmp/time.log")
cpu_us=$(awk -v c="$cpu" -v n="$n" 'BEGIN { printf "%.1f", c * 1e6 / n }')
echo "URLs: $n over $HOSTS hosts; results: $lines lines, $ok ok; bodies: $BODIES"
echo "wall: ${secs}s (load, fetch, commit, exit)  throughput: $rate URLs/s  peak RSS: ${rss_mb} MB  CPU: ${cpu}s (${cpu_us} µs/URL)"
echo "testbed: ${tb_us} µs CPU/URL on the same $(nproc) cores"
grep -E '^[0-9]+ URLs in' "$tmp/fetch.log" || true
fail=0
[ "$lines" = "$n" ] || { echo "FAIL: $lines results for $n URLs"; fail=1; }
[ "$ok" = "$n" ] || { echo "FAIL: $ok of $n ok"; fail=1; }
[ "$rate" -ge "$MIN_RATE" ] || { echo "FAIL: $rate URLs/s < $MIN_RATE"; fail=1; }
[ "$rss_mb" -lt "$MAX_RSS_MB" ] || { echo "FAIL: peak RSS ${rss_mb} MB >= ${MAX_RSS_MB} MB"; fail=1; }
exit $fail

# polite's checks. `make test` is what CI runs (see .ci/run).
GO       ?= go
# Five modules, one workspace (go.work): the library (.), the crawl job
# (./crawl, SQLite), the Redis store (./redisstore, go-redis), OpenTelemetry
# metrics (./otelpolite, the OTel metric API) and the CLI
# (./cmd/polite, cobra and bubbletea), so a library user's go.mod never
# pulls the others' dependencies.
PKGS     ?= ./... ./crawl/... ./redisstore/... ./otelpolite/... ./cmd/polite/...
FUZZTIME ?= 30s
BENCHTIME ?= 1s
COUNT    ?= 6

.PHONY: test deps fmt-check vet lint unit bench bench-peers bench-pairs bench-redis-instr bench-guard fuzz politeness politeness-avg politeness-live politeness-live-fleet throughput throughput-scale fleet-priority fleet-kill fleet-scale follow-live

test: deps fmt-check vet lint unit

# Tests start their own redis-server on loopback; under CI=true a missing one
# fails them, so install it when it is missing (Debian/Ubuntu, as root).
# The display tests run the CLI in a real terminal: tmux, likewise. The WARC
# test reads the job's files with webrecorder's warcio (npm), a reader no one
# here wrote, installed into .tools/ (git-ignored) at a pinned version.
WARCIO ?= 2.4.11
deps:
	@for p in redis-server tmux curl; do command -v $$p >/dev/null 2>&1 || { \
	  echo "installing $$p"; \
	  apt-get install -y -qq $$p >/dev/null 2>&1 || \
	  { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq $$p >/dev/null; }; }; done
	@# polite proxy's e2e tests drive Python requests, a client no one here wrote.
	@/usr/bin/python3 -c 'import requests' >/dev/null 2>&1 || { echo "installing python3-requests"; \
	  apt-get install -y -qq python3-requests >/dev/null 2>&1 || \
	  { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq python3-requests >/dev/null; }; }
	@test -f .tools/node_modules/warcio/package.json && grep -q '"version": "$(WARCIO)"' .tools/node_modules/warcio/package.json || { \
	  command -v npm >/dev/null 2>&1 || { echo "installing npm"; apt-get install -y -qq nodejs npm >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq nodejs npm >/dev/null; }; }; \
	  echo "installing warcio $(WARCIO) into .tools"; \
	  npm install --prefix .tools --no-audit --no-fund --silent warcio@$(WARCIO) >/dev/null 2>&1; }

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	cd bench && GOWORK=off $(GO) vet ./...

# staticcheck on every module, bench/ too (issue 34: five findings had piled
# up unseen). The one on PATH, or a pinned one built into .tools/.
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK ?= $(shell command -v staticcheck 2>/dev/null || echo $(CURDIR)/.tools/bin/staticcheck)
lint:
	@test -x $(STATICCHECK) || { echo "installing staticcheck $(STATICCHECK_VERSION) into .tools/bin"; \
	  GOBIN=$(CURDIR)/.tools/bin GOWORK=off $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); }
	$(STATICCHECK) $(PKGS)
	cd bench && GOWORK=off $(STATICCHECK) ./...

unit:
	$(GO) test -race -timeout 15m $(PKGS)

# Micro-benchmarks of the library's hot paths. Compare runs with benchstat.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(COUNT) $(PKGS)

# Side by side with peer libraries; bench/ has its own go.mod so peers never
# enter the library's dependencies.
bench-peers:
	cd bench && GOWORK=off $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(COUNT) ./...

# A contended benchmark's polite row against a peer's, in alternating short
# rounds: the ratio of each round and their spread (see bench/pairs.sh).
bench-pairs:
	GO=$(GO) sh bench/pairs.sh

# The instructions redis-server runs inside its scripts per request, for
# polite's Redis store and redis_rate, under valgrind's callgrind: a figure
# the machine's load does not move (bench/instr.sh; about 90 s). Installs
# valgrind when missing.
bench-redis-instr:
	@command -v valgrind >/dev/null 2>&1 || { echo "installing valgrind"; apt-get install -y -qq valgrind >/dev/null 2>&1 || \
	  { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq valgrind >/dev/null; }; }
	GO=$(GO) sh bench/instr.sh

# The server-side guard's figures (issue 14): a decision of the Memory
# store and the middleware against a bare handler (./guard), the guard in
# front of a reverse proxy against the bare proxy on loopback (the CLI),
# and the middleware beside go-chi/httprate and ulule/limiter (bench/).
bench-guard:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(COUNT) ./guard
	$(GO) test -run '^$$' -bench GuardProxy -benchmem -benchtime $(BENCHTIME) -count $(COUNT) ./cmd/polite/internal/cli
	cd bench && GOWORK=off $(GO) test -run '^$$' -bench GuardMiddleware -benchmem -benchtime $(BENCHTIME) -count $(COUNT) .

# Every fuzz target for FUZZTIME each (go test -fuzz takes one target at a time).
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

# The politeness benchmark: every scenario x policy through the Transport,
# on the testbed under a fake clock (about 15 s). Add -bare to drive the
# policies without the Transport's pauses.
politeness:
	$(GO) test ./internal/politeness -run TestTable -v -args -table

# The same, averaged over VARIANTS variants of each scenario (capacity scaled
# 0.85-1.15, steps shifted, hosts reseeded): one run's figures hang on where
# its probes happen to fall. About a minute per policy per 20 variants.
VARIANTS ?= 20
POLICIES ?= polite aws-adaptive aimd autothrottle static-10
politeness-avg:
	@for p in $(POLICIES); do \
	  $(GO) test ./internal/politeness -count 1 -run TestTune -v -args -tune -variants $(VARIANTS) -policy $$p | grep goodput; \
	done

# The live politeness benchmark (issue 16): the built CLI, in a process of
# its own, fetches from testbed hosts and nginx on loopback in real time;
# figures come from the servers' side, LIVE_RUNS runs per scenario, with the
# simulated twins beside them. About 10 minutes; installs nginx-light with
# apt-get when missing. LIVE_SCENARIOS picks some (comma-separated).
# LIVE_FLEET names the rows of each scenario (comma-separated): 0 is one
# process; N a fleet of N `polite fetch` processes sharing one redis-server
# (--redis --fleet), the URL list dealt out among them, judged by the same
# servers' logs against the same targets (issue 30); LIVE_FLEET=4 runs the
# fleet rows alone. politeness-live-fleet runs both rows, one process and
# fleet×4: twice the runs, so LIVE_TIMEOUT (the go test -timeout) is longer;
# on a small machine LIVE_PARALLEL=1 keeps runs from crowding each other.
LIVE_RUNS ?= 3
LIVE_PARALLEL ?= 3
LIVE_SCENARIOS ?=
LIVE_DIR ?=
LIVE_JSON ?=
LIVE_FLEET ?= 0
LIVE_TIMEOUT ?= 30m
politeness-live-fleet: LIVE_FLEET = 0,4
politeness-live-fleet: LIVE_TIMEOUT = 90m
politeness-live-fleet: politeness-live
politeness-live:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(GO) build -o "$$tmp/polite" ./cmd/polite && \
	$(GO) test ./internal/politeness -count 1 -run '^TestLive$$' -v -timeout $(LIVE_TIMEOUT) -args -live \
	  -polite "$$tmp/polite" -live-runs $(LIVE_RUNS) -live-parallel $(LIVE_PARALLEL) \
	  -live-scenarios '$(LIVE_SCENARIOS)' -live-dir '$(LIVE_DIR)' -live-json '$(LIVE_JSON)' \
	  -live-fleet '$(LIVE_FLEET)'

# 100,000 URLs over 1,000 loopback testbed hosts with durable state on;
# fails below 5,000 URLs/s or at 300 MB peak RSS.
throughput:
	bash crawl/testdata/throughput.sh

# The same at 100,000, 1,000,000 and 10,000,000 URLs over the 1,000 hosts
# (SCALE_PAGES pages each): pending URLs are streamed from state.db, so
# peak RSS must not grow with the job (issue 17, defect 3). The 10M run
# takes about 15 minutes and 10 GB of disk under /tmp.
SCALE_PAGES ?= 100 1000 10000
throughput-scale:
	@for p in $(SCALE_PAGES); do \
	  echo "== $$((p * 1000)) URLs"; \
	  PAGES=$$p DURATION=90m MIN_RATE=$${MIN_RATE:-5000} MAX_RSS_MB=$${MAX_RSS_MB:-300} bash crawl/testdata/throughput.sh || exit 1; \
	done

# Priority lanes in a fleet's frontier at the issue's size (issue 31): a
# host's 10,000 bulk URLs at 5 req/s, two worker processes, 50 interactive
# URLs enqueued one a second mid-run; the host's own log gives each one's
# wait from its enqueue (p95 at most 1 s) and the bulk served meanwhile.
# About 70 s. make test runs the same test small.
fleet-priority:
	POLITE_PRIORITY_BULK=10000 POLITE_PRIORITY_RATE=5 POLITE_PRIORITY_INTERACTIVE=50 POLITE_PRIORITY_P95_MS=1000 \
	  $(GO) test ./cmd/polite -count 1 -run '^TestFleetPriority$$' -v -timeout 10m

# Ten trials of two fleet workers killed with SIGKILL at random instants
# (make test runs one): every URL one committed result, a killed worker's
# URLs fetched again within its lease + 1 s, at most twice each.
fleet-kill:
	POLITE_KILL_TRIALS=10 $(GO) test ./cmd/polite -count 1 -run '^TestFleetKilledWorkers$$' -v -timeout 20m

# Issue 31's scale figures, the built CLI as separate processes and one
# redis-server on loopback (internal/fleetscale): one crawl of 100,000 URLs
# over 1,000 testbed hosts with hidden capacities by 8 fleet workers, the
# list enqueued from two processes in overlapping halves, judged by the
# hosts' own request logs and polite status --results; lease+commit from 8
# workers against unlimited hosts beside the same URLs with --own-list (the
# floor); --enqueue-only of 10,000,000 URLs over 100,000 hosts, with
# used_memory per URL. Prints a table and writes figures.json into
# FLEET_DIR (default a new /tmp/fleet-scale-*). FLEET_PARTS picks some of
# crawl,throughput,enqueue; FLEET_ARGS passes more (-crawl-pages 20 …).
FLEET_PARTS ?= crawl,throughput,enqueue
FLEET_DIR ?=
FLEET_ARGS ?=
fleet-scale:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(GO) build -o "$$tmp/polite" ./cmd/polite && \
	$(GO) test ./internal/fleetscale -count 1 -run '^TestScale$$' -v -timeout 90m -args -scale \
	  -polite "$$tmp/polite" -parts '$(FLEET_PARTS)' -dir '$(FLEET_DIR)' $(FLEET_ARGS)

# polite proxy measured live (issue 32, internal/proxylive): Scrapy, curl,
# wget, Python requests and Node undici through the built CLI's `polite
# proxy` against nginx on loopback, judged by nginx's access log; Scrapy
# without the proxy and with AutoThrottle beside it; tunnel opens in
# CONNECT mode; overhead beside Debian's tinyproxy. About 12 minutes;
# installs missing Debian packages with apt-get (root) and undici with npm.
# PROXY_SCENARIOS picks some of scrapy,delay,clients,connect,overhead;
# PROXY_DIR keeps every run's logs; PROXY_RUNS (3) runs each Scrapy row
# through the proxy, judging the median run and showing the worst.
PROXY_SCENARIOS ?=
PROXY_DIR ?=
PROXY_RUNS ?= 3
.PHONY: proxy-live
proxy-live:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(GO) build -o "$$tmp/polite" ./cmd/polite && \
	$(GO) test ./internal/proxylive -count 1 -run '^TestLive$$' -v -timeout 40m -args -live \
	  -polite "$$tmp/polite" -scenarios '$(PROXY_SCENARIOS)' -dir '$(PROXY_DIR)' -runs $(PROXY_RUNS)

# Issue 35's figures live (internal/followlive): the built CLI as separate
# processes against `polite testbed --site` (the issue's site, hidden
# capacity 20 req/s + 5 a host) and nginx serving its static copy, on
# loopback in real time, judged by the servers' access logs: one crawl
# (Expectation.Check, each host's 1-s windows, the calendar trap), the same
# crawl SIGKILLed 20 times and resumed, a --since re-crawl of version 1
# (304 share, bytes), wget -r beside polite against nginx, and the peak RSS
# of a 1,000,000-page crawl against a 100,000-page one. About 35 minutes
# (wget's --wait 0.1 alone takes 23); installs nginx-light when missing.
# Table and figures.json in FOLLOW_DIR (default a new /tmp/follow-live-*);
# FOLLOW_PARTS picks some of site,kill,since,wget,memory; FOLLOW_ARGS
# passes more (-kills 5, -seed N, -memory-sizes 10000/10,100000/100 …).
FOLLOW_PARTS ?= site,kill,since,wget,memory
FOLLOW_DIR ?=
FOLLOW_ARGS ?=
follow-live:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(GO) build -o "$$tmp/polite" ./cmd/polite && \
	$(GO) test ./internal/followlive -count 1 -run '^TestLive$$' -v -timeout 60m -args -live \
	  -polite "$$tmp/polite" -parts '$(FOLLOW_PARTS)' -dir '$(FOLLOW_DIR)' $(FOLLOW_ARGS)

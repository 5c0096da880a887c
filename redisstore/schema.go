package redisstore

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The protocol between the store and its scripts is named in one place:
// each script's arguments and reply slots are listed below, in Go, by
// index constants and their names. The Lua side reads the same table: the
// scripts say A.<name> for the argument's ARGV index and O.<name> for the
// reply slot, never a bare position, and build replaces each name with its
// number from these tables when the script is made (and st.<name>, a
// field of the host's state, its index: stateFields). TestSchema fails when a script uses a name
// the table lacks or the table names one the script never uses, and the
// round-trip tests fail when a reply's length is not the table's.
//
// Every script takes the same five arguments first (commonArgs); a
// script's own start at ARGV[6].

// The arguments every script takes first.
const (
	aClock  = iota // the caller's clock in µs (0: Redis's TIME, as in production)
	aRate          // the host's configured rate (-1: unlimited)
	aBurst         // its burst
	aIdle          // how long an idle host's keys live (µs)
	aPacing        // 1: a worker paces itself by the bucket, its lateness forgiven (see take in prelude.lua); 0: smooth
	nCommon
)

var commonArgs = [nCommon]string{aClock: "clock", aRate: "baseRate", aBurst: "baseBurst", aIdle: "idle", aPacing: "pacing"}

// admit's arguments (each call's; the settings of the Store it comes
// from are the run's, runArgs). The controller's come last, from adEpoch
// on, and only when the run's settings say it runs (M.adaptive): a call
// without it carries the first adEpoch. Then a variable tail (see
// admit.lua): the releases, the reports, the admissions.
const (
	adCap      = iota // the fleet's cap on requests in flight (0: none but the controller's)
	adPressed         // 1: a request of this worker waited for the host's rate since its last admission call
	adEarned          // first attempts this worker's credit admitted since its last call (the retry budget's share, credit.go)
	adEpoch           // with reports: the log this worker's replica follows, the last entry
	adSeen            // of it heard (-2: no log wanted), and a snapshot to leave (as report's)
	adSnapSeq         //
	adSnap            //
	adInitRate        // its starting rate and in-flight cap, in force until it writes its
	adInitConc        // own (a cold start, as one process's)
	nAdmit
)

var admitArgs = [nAdmit]string{adCap: "cap", adPressed: "pressed", adEarned: "earned", adEpoch: "epoch",
	adSeen: "seen", adSnapSeq: "snapSeq", adSnap: "snap", adInitRate: "initRate", adInitConc: "initConc"}

// A merged call's settings (M.<name>): the Store's, the same for every
// call it carries, so sent once per run of the script, after the number
// of calls (see the end of admit.lua), not once per call: each argument
// costs Redis its parsing, a Lua string and a conversion to a number, and
// these were eight of an admit call's thirty (#30).
const (
	rnKeepBlocked  = iota // 1: a block does not refuse
	rnOpenDelay           // the breaker's open delay (µs)
	rnCut                 // the jitter cut of the open delay (one draw per run)
	rnBudgetRatio         // the retry budget's ratio, floor per second and window (s)
	rnBudgetMin           //
	rnBudgetWindow        //
	rnLeaseTTL            // how long a lease lives (µs)
	rnAdaptive            // 1: the fleet's controller runs (a host's log begins at its first admission)
	rnCreditLife          // how long a credit's tokens may wait for their requests (µs, credit.go)
	nRun
)

var runArgs = [nRun]string{rnKeepBlocked: "keepBlocked", rnOpenDelay: "openDelay", rnCut: "cut",
	rnBudgetRatio: "budgetRatio", rnBudgetMin: "budgetMin", rnBudgetWindow: "budgetWindow", rnLeaseTTL: "leaseTTL",
	rnAdaptive: "adaptive", rnCreditLife: "creditLife"}

// A quiet report in admit's tail (see Store.Report): these fields, each
// read at its offset (R.<name>, from 0) from the report's first.
const (
	itSuccess = iota // 1: a success for the breaker
	itKind           // the controller's signal (adaptive.Kind; -1: none), its latency (µs),
	itLatency        // the wait the server advertised (µs) and whether the
	itWait           // admission was Spare, as report's
	itSpare
	itAt // when the answer came (µs, Redis's clock): the log's stamp for it
	nItem
)

var reportItem = [nItem]string{itSuccess: "success", itKind: "kind", itLatency: "latency", itWait: "wait", itSpare: "spare",
	itAt: "at"}

// admit's reply begins with these slots (B.<name>); one result per
// admission follows.
const (
	abNow      = iota // Redis's clock (µs)
	abBreaker         // the breaker's state after the call (0 closed, 1 open, 2 half-open)
	abFailures        // 1: breaker failures are counted (a success must clear them)
	abLog             // with reports and the controller: its log since the replica's last entry
	abCredit          // the tokens (and slots) given as credit (credit.go): 0 or all those asked for
	nAdmitHead
)

var admitHead = [nAdmitHead]string{abNow: "now", abBreaker: "breaker", abFailures: "failures", abLog: "log", abCredit: "credit"}

// admit's reply: admitHead's slots, then one result per admission, each
// these slots, in a row (the first admission's from nAdmitHead on, the
// next one's nAdmitOut further).
const (
	aoCode   = iota // 0 granted, 1 blocked, 2 paused, 3 breaker open, 4 no token, 5 slots leased, 6 cost over burst
	aoMicros        // the wait (granted: for the reserved token)
	aoReason        // the block's or the pause's reason
	aoSpare         // 1: the bucket was full and a slot free (adaptive.Signal.Spare)
	nAdmitOut
)

var admitOut = [nAdmitOut]string{aoCode: "code", aoMicros: "micros", aoReason: "reason", aoSpare: "spare"}

// report's arguments: a polite.Reading, the breaker's and the retry
// budget's settings, and the fleet controller's signal (see replica.go).
const (
	rpSent         = iota // when the request went (µs, Redis's clock)
	rpThrottle            // 1: a throttle
	rpPause               // its pause (µs)
	rpPauseWhy            // the pause's reason
	rpFailure             // 1: a failure for the breaker
	rpSuccess             // 1: a success for the breaker
	rpBlock               // the soft block's reason ("" none)
	rpQuotaPause          // a RateLimit quota's pause (µs)
	rpCeiling             // a RateLimit ceiling (req/s, 0: none)
	rpRetry               // 1: a retry is asked of the budget
	rpThreshold           // the breaker's threshold, window, open delay, longest open delay (µs)
	rpWindow              //
	rpOpenDelay           //
	rpMaxOpen             //
	rpCut                 // the open delay's jitter cut
	rpBudgetRatio         // the retry budget's ratio, floor per second, window (s)
	rpBudgetMin           //
	rpBudgetWindow        //
	rpEarned              // first attempts the worker's credit admitted, their budget share not yet sent (credit.go)
	rpAdaptive            // 1: the fleet's controller hears this report (the host's log)
	rpKind                // the signal's kind (adaptive.Kind; -1: none)
	rpLatency             // its latency (µs)
	rpWait                // the wait the server advertised (µs)
	rpSpare               // 1: the admission was Spare
	rpEpoch               // the log this worker's replica follows (its t0; 0: none)
	rpSeen                // the last entry of it the replica has heard
	rpSnapSeq             // a snapshot of the replica at this entry (0: none) ...
	rpSnap                // ... and its bytes
	nReport
)

var reportArgs = [nReport]string{rpSent: "sent", rpThrottle: "throttle", rpPause: "pause", rpPauseWhy: "pauseWhy",
	rpFailure: "failure", rpSuccess: "success", rpBlock: "block", rpQuotaPause: "quotaPause", rpCeiling: "ceiling",
	rpRetry: "retry", rpThreshold: "threshold", rpWindow: "window", rpOpenDelay: "openDelay", rpMaxOpen: "maxOpen",
	rpCut: "cut", rpBudgetRatio: "budgetRatio", rpBudgetMin: "budgetMin", rpBudgetWindow: "budgetWindow",
	rpEarned: "earned", rpAdaptive: "adaptive", rpKind: "kind", rpLatency: "latency", rpWait: "wait", rpSpare: "spare",
	rpEpoch: "epoch", rpSeen: "seen", rpSnapSeq: "snapSeq", rpSnap: "snap"}

// report's reply.
const (
	roPause      = iota // how far the pause moved (µs; -1: it did not)
	roQuotaPause        // 1: the quota's pause moved it
	roBlocked           // 1: this report set the block mark
	roFrom              // the breaker's transition: from, to, and until when it is open (µs)
	roTo
	roUntil
	roQuotaRate // the rate a RateLimit ceiling set ("" unchanged)
	roRetry     // 1: the retry was granted
	roNow       // Redis's clock (µs)
	roRateFrom  // the rate in force before this report changed it ("" unchanged)
	roLog       // the controller's log since the replica's last entry (see catchup)
	roBreaker   // the breaker's state after the report, and 1 when failures are
	roFailures  // counted (as admit's head says them)
	nReportOut
)

var reportOut = [nReportOut]string{roPause: "pause", roQuotaPause: "quotaPause", roBlocked: "blocked",
	roFrom: "from", roTo: "to", roUntil: "openUntil", roQuotaRate: "quotaRate", roRetry: "retry", roNow: "now",
	roRateFrom: "rateFrom", roLog: "log", roBreaker: "breaker", roFailures: "failures"}

// The controller's log as a reply gives it (see catchup in prelude.lua).
const (
	loEpoch   = iota // when the host's log began (µs): the replicas' t0
	loLast           // the last entry's number
	loSnapSeq        // the entry the snapshot below stands at (0: none sent)
	loSnap           // the snapshot ("" none)
	loFrom           // the number of the first entry below
	loRate           // the rate the controller last set (req/s; "" none) ...
	loRateSeq        // ... at this entry
	loStored         // the entry the stored snapshot stands at (0: none)
	loConc           // the controller's in-flight cap in force (0: none)
	loReset          // 1: the replica's log was rolled back or replaced: it starts again
	loEntries        // the entries, from loFrom on
	nLogOut
)

var logOut = [nLogOut]string{loEpoch: "epoch", loLast: "last", loSnapSeq: "snapSeq", loSnap: "snap",
	loFrom: "from", loRate: "rate", loRateSeq: "rateSeq", loStored: "stored", loConc: "conc", loReset: "reset", loEntries: "entries"}

// setrate's arguments: the rate, and for the fleet's controller the entry
// it was computed at and the in-flight cap that goes with it.
const (
	srRate  = iota
	srSeq   // the log entry the rate follows (0: a caller's own SetRate)
	srConc  // the controller's cap on requests in flight (0: none)
	srEpoch // the log it follows (its t0, µs)
	nSetRate
)

var setRateArgs = [nSetRate]string{srRate: "rate", srSeq: "seq", srConc: "conc", srEpoch: "epoch"}

// setceiling's arguments and reply.
const (
	scWhy      = iota // "crawl-delay" or another source
	scRate            // the ceiling (req/s, 0: clears it)
	scAdaptive        // 1: the fleet's controller hears the change (the log)
	nSetCeiling
)

var setCeilingArgs = [nSetCeiling]string{scWhy: "why", scRate: "rate", scAdaptive: "adaptive"}

const (
	coRate    = iota // the rate in force
	coChanged        // 1: it or the burst changed
	nSetCeilingOut
)

var setCeilingOut = [nSetCeilingOut]string{coRate: "rate", coChanged: "changed"}

// keep's and cancel's arguments.
const (
	kpReserved = iota // when the tokens were reserved (µs, Redis's clock)
	kpCost
	nKeep
)

var keepArgs = [nKeep]string{kpReserved: "reserved", kpCost: "cost"}

const (
	cnCost = iota
	nCancel
)

var cancelArgs = [nCancel]string{cnCost: "cost"}

// state's reply.
const (
	stRate    = iota // the rate in force
	stTokens         // what the bucket holds
	stCeiling        // the lowest ceiling (0: none)
	stPause          // the pause's end (µs) and reason
	stPauseWhy
	stBreaker      // the breaker's state and until when
	stBreakerUntil //
	stBlock        // the block's reason
	stNow          // Redis's clock (µs)
	stBurst        // the burst in force
	stLeases       // live leases
	stBudgetFloor  // the retry budget: floor tokens (-1: never used), earned, as of when (µs)
	stBudgetEarned //
	stBudgetAt     //
	stConc         // the controller's in-flight cap (0: none)
	nStateOut
)

var stateOut = [nStateOut]string{stRate: "rate", stTokens: "tokens", stCeiling: "ceiling", stPause: "pause",
	stPauseWhy: "pauseWhy", stBreaker: "breaker", stBreakerUntil: "breakerUntil", stBlock: "block", stNow: "now",
	stBurst: "burst", stLeases: "leases", stBudgetFloor: "budgetFloor", stBudgetEarned: "budgetEarned",
	stBudgetAt: "budgetAt", stConc: "conc"}

// The host's state (st in prelude.lua, which says what each field
// means): one MessagePack array in the host hash's field "s", its fields
// in this order. The scripts say st.<name>; build turns it into st[<i>],
// so that the state is an array as it is packed: read and written whole
// without a table of names to build on every call (a call paid about
// 1.3 µs of Redis's time for one, #30).
var stateFields = [...]string{"f", "r", "c", "rc", "pu", "pw", "blk", "cbs", "cbu", "cbd", "lt", "bf", "be", "bt",
	"ln", "sq", "lf", "t0", "ss", "rs", "cc", "ex", "fl", "pr", "pg", "nl", "le"}

// slotName is a name the scripts read from a table: A.<name>, O.<name>,
// LO.<name>, R.<name>, B.<name>, M.<name>; stateName a field of the
// host's state.
var (
	slotName  = regexp.MustCompile(`\b(A|O|LO|R|B|M)\.([A-Za-z_]\w*)`)
	stateName = regexp.MustCompile(`\bst\.([A-Za-z_]\w*)`)
)

// build is a script's source as Redis runs it: src with every name of
// the tables above (slotName) replaced by its number, so that a call
// builds no table of names, after a header of the counts it uses. args
// and out are the script's own arguments and reply slots; batch gives it
// admit's report fields (R), reply head (B) and run settings (M) too. A name its tables
// lack panics: a script that would read nil.
func build(args, out []string, batch bool, src string) string {
	tables := map[string]map[string]int{"A": {}, "O": {}, "LO": {}}
	for i, n := range commonArgs {
		tables["A"][n] = i + 1
	}
	for i, n := range args {
		tables["A"][n] = nCommon + i + 1
	}
	for i, n := range out {
		tables["O"][n] = i + 1
	}
	for i, n := range logOut {
		tables["LO"][n] = i + 1
	}
	if batch {
		tables["R"], tables["B"], tables["M"] = map[string]int{}, map[string]int{}, map[string]int{}
		for i, n := range runArgs {
			tables["M"][n] = i + 2 // after the number of calls
		}
		for i, n := range reportItem {
			tables["R"][n] = i // an offset from the report's first field
		}
		for i, n := range admitHead {
			tables["B"][n] = i + 1
		}
	}
	body := slotName.ReplaceAllStringFunc(src, func(m string) string {
		sub := slotName.FindStringSubmatch(m)
		i, ok := tables[sub[1]][sub[2]]
		if !ok {
			panic(fmt.Sprintf("redisstore: a script reads %s, which its tables do not name", m))
		}
		if batch && sub[1] == "A" {
			// A merged call's arguments are read in place, from where
			// the call's begin in ARGV (ab, see prelude.lua).
			return "(ab + " + strconv.Itoa(i) + ")"
		}
		return strconv.Itoa(i)
	})
	body = stateName.ReplaceAllStringFunc(body, func(m string) string {
		i := slices.Index(stateFields[:], m[len("st."):])
		if i < 0 {
			panic(fmt.Sprintf("redisstore: a script reads %s, which the state's table does not name", m))
		}
		return "st[" + strconv.Itoa(i+1) + "]"
	})
	return fmt.Sprintf("local NOUT, BATCH, NITEM, NST, NRUN, NHEAD = %d, %v, %d, %d, %d, %d\n", len(out), batch, nItem,
		len(stateFields), nRun, nAdmitHead) + body
}

// luaScript is a script as Redis runs it (build): the prelude (unless it
// runs without), which loads the call's host (begin; a repeated call's
// first reply ends it there), then its body.
func luaScript(args, out []string, withPrelude bool, body string) *redis.Script {
	src := body
	if withPrelude {
		src = prelude + logLua + beginCall + body
	}
	return redis.NewScript(build(args, out, false, src))
}

// beginCall loads a script's one call (see begin in prelude.lua); admit
// loads each of a merged call's in turn.
const beginCall = "do local first = begin() if first then return first end end\n"

package retry

import (
	"math"
	"sync"
	"time"

	"github.com/polite-go/polite/internal/nanos"
)

// BudgetConfig configures a Budget. The zero value is the default: retries
// up to 20 % of recent requests plus a floor of 1 per second, remembered
// over 10 s.
type BudgetConfig struct {
	// Ratio is the retries each original request earns. If zero, 0.2 is
	// used; if negative, requests earn nothing and only the floor is left.
	Ratio float64
	// MinPerSecond is the floor: retries allowed per second however few
	// requests are made, so a quiet host can still retry. If zero, 1 is
	// used; if negative, there is no floor.
	MinPerSecond float64
	// Window is how long the budget remembers: earned retries fade with
	// this time constant, and at most Window's worth of the floor is saved
	// up. If zero or negative, 10 s is used.
	Window time.Duration
}

// Budget defaults.
const (
	DefaultBudgetRatio        = 0.2
	DefaultBudgetMinPerSecond = 1.0
	DefaultBudgetWindow       = 10 * time.Second
)

// Budget is a token bucket for retries, after Finagle's RetryBudget and
// gRPC's retry throttling: it keeps a host where everything fails from
// being amplified by retries. Every original request deposits Ratio tokens;
// every retry must withdraw one. So when everything fails, retries add at
// most Ratio to the load, plus the floor.
//
// It holds two kinds of tokens:
//
//   - The floor accrues MinPerSecond tokens per second up to a reserve of
//     MinPerSecond × Window, the retries a quiet client may save up. A new
//     Budget starts with the full reserve, so the first failures can retry.
//   - Earned tokens (the deposits) decay exponentially with time constant
//     Window, so they approximate Ratio × the requests of the last Window
//     (Finagle expires deposits after a TTL to the same end). A long healthy
//     period therefore banks no more than a busy Window's worth, and cannot
//     fund a retry storm later.
//
// Tokens is thus at most MinPerSecond × Window + Ratio × (requests of
// roughly the last Window). A withdrawal takes earned tokens first, since
// they fade anyway.
//
// Time is explicit: every method takes now, and nothing runs in the
// background. A now earlier than one already seen accrues nothing.
//
// The zero Budget is ready to use with the default BudgetConfig. A Budget
// is safe for concurrent use; its methods do not allocate. It must not be
// copied after first use.
type Budget struct {
	// mu guards every field below.
	mu     sync.Mutex
	cfg    *BudgetConfig // normalised, read-only, maybe shared (see ShareBudget); nil = the defaults
	floor  float64       // floor tokens, in [0, reserve]
	earned float64       // earned tokens, decaying
	last   int64         // instant (see nanos.Of) floor and earned were last brought up to date; 0 = never used
}

// NewBudget returns a Budget configured by cfg.
func NewBudget(cfg BudgetConfig) *Budget {
	return &Budget{cfg: &ShareBudget(cfg).cfg}
}

// A BudgetShare is a BudgetConfig normalized once, for many Budgets to read
// through Init: a crawler's budget per host then costs a pointer, not a
// copy. It is immutable.
type BudgetShare struct{ cfg BudgetConfig }

// ShareBudget normalizes cfg for Budgets to share through Init.
func ShareBudget(cfg BudgetConfig) *BudgetShare { return &BudgetShare{cfg: cfg.normalize()} }

var defaultBudget = ShareBudget(BudgetConfig{})

// Init makes b, which must be unused, read its configuration from s.
func (b *Budget) Init(s *BudgetShare) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cfg = &s.cfg
}

// eps absorbs floating-point drift: five deposits of 0.2 pay for a retry
// even if they sum to 0.9999999999999999.
const eps = 1e-9

// Deposit records an original request (not a retry), earning Ratio tokens.
func (b *Budget) Deposit(now time.Time) { b.DepositN(now, 1) }

// DepositN records n original requests at once. A budget shared by every
// request (a global one) can count requests with an atomic counter and fold
// them in with DepositN, rather than take its lock for each.
func (b *Budget) DepositN(now time.Time, n int) {
	b.mu.Lock()
	b.advance(now)
	if b.cfg.Ratio > 0 && n > 0 {
		b.earned += b.cfg.Ratio * float64(n)
	}
	b.mu.Unlock()
}

// Withdraw takes one token for a retry and reports whether there was one.
// When it returns false the retry must not be sent.
func (b *Budget) Withdraw(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	if b.earned+b.floor < 1-eps {
		return false
	}
	if b.earned >= 1 {
		b.earned--
	} else {
		b.floor = max(0, b.floor-(1-b.earned))
		b.earned = 0
	}
	return true
}

// Tokens returns the retries the budget would allow at now, fractional.
func (b *Budget) Tokens(now time.Time) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	return b.floor + b.earned
}

// advance brings the tokens up to now. Advancing in steps gives the same
// result as one step (the floor is linear up to a cap, the decay is
// multiplicative), so readers may advance too.
func (b *Budget) advance(now time.Time) {
	ns := nanos.Stamp(now) // 0 means unused
	if b.last == 0 {
		if b.cfg == nil {
			b.cfg = &defaultBudget.cfg
		}
		b.floor = b.reserve()
		b.last = ns
		return
	}
	dt := time.Duration(ns - b.last)
	if dt <= 0 {
		return
	}
	b.last = ns
	sec := dt.Seconds()
	if b.cfg.MinPerSecond > 0 {
		b.floor = min(b.reserve(), b.floor+b.cfg.MinPerSecond*sec)
	}
	if b.earned > 0 {
		b.earned *= math.Exp(-sec / b.cfg.Window.Seconds())
	}
}

func (b *Budget) reserve() float64 {
	return max(0, b.cfg.MinPerSecond) * b.cfg.Window.Seconds()
}

// WithDefaults returns c with the defaults filled in, as a Budget uses it:
// for a budget kept elsewhere (a shared store) to follow the same rules.
func (c BudgetConfig) WithDefaults() BudgetConfig { return c.normalize() }

func (c BudgetConfig) normalize() BudgetConfig {
	if c.Ratio == 0 || math.IsNaN(c.Ratio) {
		c.Ratio = DefaultBudgetRatio
	}
	if c.MinPerSecond == 0 || math.IsNaN(c.MinPerSecond) {
		c.MinPerSecond = DefaultBudgetMinPerSecond
	}
	if c.Window <= 0 {
		c.Window = DefaultBudgetWindow
	}
	return c
}

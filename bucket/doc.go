// Package bucket implements the token bucket polite meters each host with.
//
// # Model
//
// A Bucket holds up to Burst tokens and gains Rate tokens per second,
// continuously and lazily: nothing ticks in the background, the count is
// worked out from the clock whenever the bucket is asked. A request of cost n
// passes when n tokens are there (AllowN), or reserves them and waits
// (ReserveN, WaitN). Drain empties the bucket, as a host's 429 asks.
// SetRate and SetBurst change the settings at run time without losing or
// inventing tokens already accrued.
//
// Smooth mode (NewSmooth) is the leaky bucket / GCRA with burst 1: requests
// are spaced evenly, never two at once.
//
// # Units and rounding
//
// Time is integer nanoseconds on the monotonic clock. A token costs
// ceil(1e9/rate) ns, the only rounding, at most 1 ns per token and always on
// the slow side, so a bucket at 3 req/s admits 10,800 requests an hour (plus
// its initial burst), not one more, however long it runs. Rates below MinRate
// are raised to it; Inf admits everything; 0 admits nothing. Instants are
// read within about 73 years either side of the process's start; times
// beyond (the zero time.Time, a year 9999) count as that bound.
//
// # Many cores, one bucket
//
// A take is one compare-and-swap of a single word, with no lock. When two
// cores race for the same bucket, the loser waits a random few hundred
// nanoseconds before it tries again, so the winner keeps the word in its own
// cache for its next takes rather than both trading it on every take. Two
// cores on one bucket then run about as fast as one; the wait changes when a
// take is decided, never what it is granted.
//
// # Time-explicit forms
//
// Following golang.org/x/time/rate, the methods that read the clock have
// forms that take now (AllowN, ReserveN, Tokens, SetRate, Drain), which makes
// the bucket pure in time: tests drive it with a table of instants, and a
// caller that already has a reading of the clock saves another.
package bucket

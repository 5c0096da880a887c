package adaptive

import (
	"testing"
	"time"
)

// Issue 16: a cold start that builds a queue before 3 s was never compared
// with a baseline (the first slot's zero value passed for a taken one), so
// the latency-led path stayed off behind nginx's limit_req in delay mode.
func TestColdStartQueueIsRead(t *testing.T) {
	c := New(Config{Initial: 5}, t0)
	// 1 ms answers while the rate is low, then a queue: each answer 50 ms
	// slower than the last, at 10 served per second.
	at, lat := time.Duration(0), time.Millisecond
	for i := 0; i < 6; i++ {
		at += 150 * ms
		c.Observe(t0.Add(at), ok(lat))
	}
	peak := c.Rate()
	for at < 2500*ms {
		at += 100 * ms
		lat += 50 * ms
		peak = max(peak, c.Observe(t0.Add(at), ok(lat)))
	}
	if c.decreases == 0 || c.Rate() >= peak {
		t.Fatalf("at %v: rate %.1f (peak %.1f), decreases %d; want a latency decrease before the first baseline slot ends", at, c.Rate(), peak, c.decreases)
	}
}

// Issue 16: behind a backend that answers in microseconds, scheduler and GC
// noise of a millisecond is no queue: a never-throttled host is never cut.
func TestMicrosecondNoiseIsNotAQueue(t *testing.T) {
	c := New(Config{Initial: 1e6, Max: 1e6}, t0)
	i := 0
	for at := time.Duration(0); at < 60*time.Second; at += 100 * time.Microsecond {
		lat := 20 * time.Microsecond
		if i%20000 >= 19970 { // every 2 s, 30 answers in a row held 1 ms
			lat += time.Millisecond
		}
		c.Observe(t0.Add(at), ok(lat))
		i++
	}
	if c.decreases != 0 || c.Rate() != 1e6 {
		t.Fatalf("rate %.0f after %d decreases over 60 s of µs answers with ms noise, want 1e6 and none", c.Rate(), c.decreases)
	}
}

// Issue 16: 1,000 hosts sharing 128 workers each served 17 answers a second
// at 8 ms where the first took 1 ms: the client's own contention, not a
// queue at the host (17/s × 8 ms is 0.14 requests in flight). Each was cut
// from 1,000 req/s to 15, and two identical crawls ran at 6.8k and 11.4k
// URLs/s, depending on how many hosts were cut when.
func TestClientContentionIsNotAQueue(t *testing.T) {
	c := New(Config{Initial: 1000, Max: 1000}, t0)
	lat := time.Millisecond
	for at := time.Duration(0); at < 10*time.Second; at += 59 * ms {
		if lat < 9*ms {
			lat += ms / 2
		}
		c.Observe(t0.Add(at), ok(lat))
	}
	if c.decreases != 0 || c.Rate() != 1000 {
		t.Fatalf("rate %.0f after %d decreases; want 1000 and none: 17 served/s at 9 ms is no queue of ours", c.Rate(), c.decreases)
	}
}

// Issue 34: a host whose queue forms at 15 req/s, 10 ms unloaded, served
// all it was sent, each answer 144 ms: two requests of ours waiting at
// 67 ms each, in front of a host that keeps up. The in-flight cap keeps
// such a queue from growing, and a rate a hair under the knee drains it
// no faster than noise refills it: it stands. The host serving all it is
// sent is no sign that the queue is not ours; Little's law on the
// latency's rise is (15/s × 134 ms: two waiting). Live, the rate held
// there, at 97 % of the knee and a p95 of 14.4 × the unloaded latency.
func TestStandingQueueIsOurs(t *testing.T) {
	c := New(Config{Initial: 14.8, Max: 14.8}, t0)
	at := serve(c, 0, 5*time.Second, 10*ms)
	for ; at < 8*time.Second; at += time.Second / 15 {
		c.Observe(t0.Add(at), ok(144*ms))
	}
	if c.decreases == 0 || c.Rate() > 0.9*15 {
		t.Fatalf("rate %.2f after %d decreases, 3 s of two of ours waiting at a host of 15 req/s; want a decrease under 13.5", c.Rate(), c.decreases)
	}
}

// Issue 34: after a latency decrease, the median of the newest 16 answers
// still counts the queue the decrease drained, while the newest are back
// at the baseline. That is no new queue: cut again, the capacity was
// measured from what the drain was served (8.75 req/s of a host of 13.2).
func TestDrainedQueueIsNotCutAgain(t *testing.T) {
	c := New(Config{Initial: 13, Max: 13}, t0)
	at := serve(c, 0, 5*time.Second, 10*ms)
	// A queue grows: each answer 20 ms later than the last, 12 served a
	// second where 13 are sent, until a decrease.
	lat := 10 * ms
	for ; c.decreases == 0 && at < 8*time.Second; at += time.Second / 12 {
		lat += 20 * ms
		c.Observe(t0.Add(at), ok(lat))
	}
	if c.decreases != 1 {
		t.Fatalf("no decrease for a growing queue")
	}
	cut := c.Rate()
	// The decrease drains it: the answers to requests sent before it, three
	// more, come back 150 ms late, then the rest at 10 ms, at the new rate.
	for i := 0; at < 12*time.Second; i++ {
		lat = 10 * ms
		if i < 3 {
			lat = 150 * ms
		}
		c.Observe(t0.Add(at), ok(lat))
		at += time.Duration(float64(time.Second) / c.Rate())
	}
	if c.decreases != 1 || c.Rate() < cut {
		t.Fatalf("rate %.2f after %d decreases (the first to %.2f); want one, the queue drained", c.Rate(), c.decreases, cut)
	}
}

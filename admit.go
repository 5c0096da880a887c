package polite

import (
	"context"
	"fmt"
	"time"
)

// admit waits at the host's gates: its in-flight slot, then the store's
// admission (block mark, pause, breaker, token), then the global slot. It
// returns holding both slots, with a.now the time it got them (unchanged
// when nothing waited: a clock reading costs as much as the rest of the
// bookkeeping, so it is taken only after a wait).
//
// A request never holds a global slot while it waits for its host: the
// global slot is taken only once the host's token is at hand, and given
// up again if the token is not, so one slow host cannot stall the others.
// What it holds meanwhile is one held value, given back in one place when
// admission fails.
func (t *Transport) admit(ctx context.Context, a *attempt) error {
	var hd held
	defer t.endTurn(a, &hd)
	for {
		done, err := t.admitStep(ctx, a, &hd)
		if err != nil {
			t.giveBack(a, &hd)
			return err
		}
		if done {
			return nil
		}
	}
}

// endTurn gives back the host's turn to ask, if the attempt has it: once
// admitted or given up, and before any wait but the rate's.
func (t *Transport) endTurn(a *attempt, hd *held) {
	if hd.ask {
		t.ext(a.h).ask.turn().Release()
		hd.ask = false
	}
}

// held is what an attempt holds while it is admitted: the host's
// in-flight slot and a global one (its lease is a.lease), and the host's
// asker's turn (see asker).
type held struct{ slot, global, ask bool }

// giveBack gives back whatever hd and the attempt's lease hold.
func (t *Transport) giveBack(a *attempt, hd *held) {
	if hd.global {
		t.global.Release()
		hd.global = false
	}
	if hd.slot {
		a.h.gate.Release()
		hd.slot = false
	}
	t.releaseLease(a)
}

// admitStep goes through the gates once: done when the attempt holds all
// it needs, not done when it must go round again (it waited, or gave back
// what it held to wait without it), and an error when it must give up
// (admit then gives back what hd holds).
func (t *Transport) admitStep(ctx context.Context, a *attempt, hd *held) (done bool, err error) {
	h := a.h
	if !hd.slot {
		if !h.gate.TryAcquire() {
			// Never wait for a slot with the turn: the requests waiting
			// for the turn may hold every slot.
			t.endTurn(a, hd)
			t.markWaiting(a)
			t.emit(ctx, a.obs, Event{Kind: EventWait, Time: a.now, Host: h.Key(), ID: a.id, Reason: ReasonSlot})
			if err := t.acquireSlot(ctx, h); err != nil {
				return false, err
			}
			a.now = time.Now()
		}
		hd.slot = true
	}
	if a.low && t.ext(h).waiting.Load() > 0 {
		// A background request yields the host's tokens to requests of
		// normal priority waiting for them.
		t.giveBack(a, hd)
		t.emit(ctx, a.obs, Event{Kind: EventWait, Time: a.now, Host: h.Key(), ID: a.id, Reason: ReasonPriority, Delay: yieldPoll})
		if err := sleep(ctx, yieldPoll); err != nil {
			return false, err
		}
		a.now = time.Now()
		return false, nil
	}
	q := Query{Now: a.now, MaxWait: maxHold, First: !a.grant, Cost: a.cost}
	if hd.global || a.low {
		// A global slot is never held waiting for a token; a background
		// request reserves none ahead of others.
		q.MaxWait = 0
	}
	if dl, ok := ctx.Deadline(); ok {
		q.MaxWait = min(q.MaxWait, dl.Sub(a.now))
	}
	adm := t.store.Admit(h, q)
	a.grant = a.grant || adm.Granted
	a.lease = adm.Lease
	a.spare = adm.Spare
	if !adm.Granted {
		waitRate := adm.Reason == ReasonRate && adm.Err == nil
		if waitRate {
			t.markWaiting(a)
		}
		if hd.global {
			t.global.Release()
			hd.global = false
		}
		if !waitRate {
			// A pause, the breaker, a block: the slot goes to no one
			// waiting behind it meanwhile, nor the turn (they will hear
			// the same).
			h.gate.Release()
			hd.slot = false
			t.endTurn(a, hd)
		}
		if dl, ok := ctx.Deadline(); waitRate && !hd.ask && !a.low && !(ok && dl.Before(a.now.Add(adm.Wait))) {
			// One request at a time asks for the host's next token; the
			// others wait behind it, in turn, and ask once it has its own.
			// (One whose deadline comes before the token fails now, below.)
			turn := t.ext(h).ask.turn()
			if hd.ask = turn.TryAcquire(); !hd.ask {
				if err := turn.Acquire(ctx); err != nil {
					return false, err
				}
				hd.ask = true
				a.now = time.Now()
				return false, nil
			}
		}
		if err := t.refused(ctx, a, adm); err != nil {
			return false, err
		}
		a.now = time.Now()
		return false, nil
	}
	if d := adm.At.Sub(a.now); d > 0 {
		t.markWaiting(a)
		// A token reserved within about one interval: wait for it, then
		// make sure no throttle came meanwhile.
		t.emit(ctx, a.obs, Event{Kind: EventWait, Time: a.now, Host: h.Key(), ID: a.id, Reason: ReasonRate, Delay: d})
		if err := sleep(ctx, d); err != nil {
			t.store.Cancel(h, time.Now(), a.cost)
			return false, err
		}
		reserved := a.now
		a.now = time.Now()
		if !t.store.Keep(h, a.now, reserved, a.cost) {
			t.giveBack(a, hd)
			return false, nil
		}
	}
	if t.global != nil && !hd.global {
		if !t.global.TryAcquire() {
			// Wait for a global slot without the token, then ask for one
			// again: taken apart in time from their sending, tokens would
			// all be spent at once when slots free up.
			t.store.Cancel(h, a.now, a.cost)
			t.releaseLease(a)
			t.endTurn(a, hd)
			t.emit(ctx, a.obs, Event{Kind: EventWait, Time: a.now, Host: h.Key(), ID: a.id, Reason: ReasonSlot})
			if err := t.global.Acquire(ctx); err != nil {
				return false, err
			}
			hd.global = true
			a.now = time.Now()
			return false, nil
		}
	}
	return true, nil
}

// releaseLease gives back the attempt's in-flight lease, if it holds one.
func (t *Transport) releaseLease(a *attempt) {
	if a.lease != 0 {
		t.store.Release(a.h, a.lease)
		a.lease = 0
	}
}

// refused handles an admission the store refused: it fails the request, or
// waits as long as the store says to.
func (t *Transport) refused(ctx context.Context, a *attempt, adm Admission) error {
	h := a.h
	switch {
	case adm.Reason == ReasonBreaker && t.BreakerWait && adm.Wait > 0:
		t.emit(ctx, a.obs, Event{Kind: EventWait, Time: a.now, Host: h.Key(), ID: a.id, Reason: ReasonBreaker, Delay: adm.Wait})
		return sleep(ctx, max(adm.Wait, time.Millisecond))
	case adm.Err != nil:
		return adm.Err
	case adm.Reason == ReasonRate:
		if dl, ok := ctx.Deadline(); ok && dl.Before(a.now.Add(adm.Wait)) {
			return fmt.Errorf("polite: host %q: waiting %v for a token would outlast the deadline: %w", h.Key(), adm.Wait, context.DeadlineExceeded)
		}
		t.emit(ctx, a.obs, Event{Kind: EventWait, Time: a.now, Host: h.Key(), ID: a.id, Reason: ReasonRate, Delay: pollOf(adm)})
		return sleep(ctx, pollOf(adm))
	case adm.Wait > t.maxAfter:
		return &PausedError{Host: h.Key(), Until: a.now.Add(adm.Wait), Reason: adm.Reason}
	}
	t.emit(ctx, a.obs, Event{Kind: EventWait, Time: a.now, Host: h.Key(), ID: a.id, Reason: adm.Reason, Delay: adm.Wait})
	return sleep(ctx, pollOf(adm))
}

// pollOf is how long a request the store refused waits before it asks
// again: the refusal's Poll, else its Wait, and never less than minPoll.
// A Store that names neither (a refused slot, whose end no one knows)
// would otherwise be asked again at once, for ever.
func pollOf(adm Admission) time.Duration {
	if adm.Poll > 0 {
		return max(adm.Poll, minPoll)
	}
	return max(adm.Wait, minPoll)
}

// releaseHeld gives back the host's slot and lease and, when held, the
// global slot.
func (t *Transport) releaseHeld(a *attempt, global bool) {
	a.h.gate.Release()
	t.releaseLease(a)
	if global {
		t.global.Release()
	}
}

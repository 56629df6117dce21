package enforce

import (
	"context"
	"errors"
	"time"

	"github.com/tailscope/tailscope/policy"
)

// Call makes one call to hop under the policy: fn is one attempt, run with
// a context that ends at the attempt's deadline (see Do). It returns nil
// on the first attempt that succeeds, else a *Degraded.
func (p *Policy) Call(ctx context.Context, hop string, fn func(context.Context) error) error {
	_, err := Do(ctx, p, hop, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
	return err
}

// Do makes one call to hop under the policy and returns the value of the
// attempt that answered first. The rules are the replay's (docs/DESIGN.md
// §7), so that the same policy on the same latencies ends the same way:
//
//   - Each attempt runs under the sooner of the hop's timeout (its own
//     entry in the policy, else the default) and ctx's deadline (the
//     request's budget, or the attempt the call is made in). An attempt
//     still running at its deadline fails then, whether or not fn has
//     returned: fn should return when its context ends, and a value it
//     returns later is dropped.
//   - A failed attempt is retried while the hop's retries last, after the
//     backoff (jittered as the policy says); with budget_aware only when
//     the time left covers the backoff and one whole attempt timeout. A
//     backoff that would reach the deadline is not waited out in vain: the
//     call gives up at the deadline.
//   - With a hedge, another attempt is sent each Delay while none has
//     answered and one is still running, up to Max; the first success
//     wins and the others are cancelled. The try fails when every attempt
//     of it has failed.
//   - With Options.Throttle, retries and hedges are sent only while the
//     hop's token bucket is more than half full.
//
// fn is called from another goroutine, one per attempt (hedges run side by
// side). A panic in fn is raised again in the caller's goroutine.
func Do[T any](ctx context.Context, p *Policy, hop string, fn func(context.Context) (T, error)) (T, error) {
	c := &caller[T]{p: p, hop: hop, hp: p.pol.For(hop), fn: fn, start: time.Now()}
	c.deadline, c.bounded = ctx.Deadline()
	return c.run(ctx)
}

// caller is the state of one call.
type caller[T any] struct {
	p     *Policy
	hop   string
	hp    policy.Hop
	fn    func(context.Context) (T, error)
	start time.Time
	// deadline is ctx's: the request's budget, or the parent attempt's.
	deadline time.Time
	bounded  bool
	attempts int
}

// result is how one attempt ended.
type result[T any] struct {
	v     T
	err   error
	cut   bool // the hop's own timeout ended it
	hedge bool
	// panicked: fn panicked with pv.
	panicked bool
	pv       any
}

func (c *caller[T]) run(ctx context.Context) (T, error) {
	var zero T
	var last result[T]
	var reason Reason
	for k := 0; ; k++ {
		if k > 0 {
			if k > c.hp.Retries {
				reason = ReasonRetriesExhausted
				if last.cut {
					reason = ReasonTimeout
				}
				break
			}
			if !c.p.bucket.allows(c.hop) {
				reason = ReasonThrottled
				break
			}
			b := c.hp.Backoff.Delay(k, c.p.jitter(ctx, c.hop, k))
			if c.bounded {
				left := time.Until(c.deadline)
				if !c.hp.RetryFits(left, b) {
					// The retry could not finish inside what is left: not
					// sent, and the caller hears now rather than at the
					// deadline.
					reason = ReasonBudget
					break
				}
				if b >= left {
					<-ctx.Done()
					reason = c.ended(ctx)
					break
				}
			}
			if b > 0 && !sleep(ctx, b) {
				reason = c.ended(ctx)
				break
			}
		}
		r := c.try(ctx)
		if r.panicked {
			panic(r.pv)
		}
		if r.err == nil {
			return r.v, nil
		}
		last = r
		if ctx.Err() != nil || c.bounded && !time.Now().Before(c.deadline) {
			reason = c.ended(ctx)
			break
		}
		if !r.cut && !c.p.retryable(r.err) {
			reason = ReasonNotRetryable
			break
		}
	}
	elapsed := time.Since(c.start)
	c.p.observe(Event{Kind: KindGiveUp, Hop: c.hop, Reason: reason, Elapsed: elapsed})
	part := c.p.opt.Parts[c.hop]
	if part == "" {
		part = "the answer from " + c.hop
	}
	return zero, &Degraded{
		Hop:       c.hop,
		Reason:    reason,
		Attempts:  c.attempts,
		Elapsed:   elapsed,
		Missing:   missing(part, reason, c.attempts, c.hp.Timeout),
		Retryable: reason != ReasonNotRetryable && reason != ReasonCanceled,
		last:      last.err,
	}
}

// ended is the reason for a call whose context ended: the caller's
// cancellation, or the deadline.
func (c *caller[T]) ended(ctx context.Context) Reason {
	if errors.Is(ctx.Err(), context.Canceled) && !(c.bounded && !time.Now().Before(c.deadline)) {
		return ReasonCanceled
	}
	return ReasonBudget
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// try is one try of the call: an attempt, and with the hop's hedge up to
// Max more, one every Delay, while none has succeeded and one is still
// running. It returns the first success, or the last failure when all
// failed.
func (c *caller[T]) try(ctx context.Context) result[T] {
	h := c.hp.Hedge
	if h.Delay <= 0 || h.Max < 1 {
		c.started(false)
		r := c.attempt(ctx, false)
		if !r.panicked {
			c.p.bucket.count(c.hop, r.err == nil)
		}
		return r
	}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel() // the attempts still running lost
	results := make(chan result[T], 1+h.Max)
	launch := func(hedge bool) {
		c.started(hedge)
		go func() { results <- c.attempt(tctx, hedge) }()
	}
	start := time.Now()
	launch(false)
	running, sent := 1, 0
	timer := time.NewTimer(h.Delay)
	defer timer.Stop()
	due := timer.C
	var last result[T]
	for {
		select {
		case r := <-results:
			running--
			if r.panicked {
				return r
			}
			// Counted as it ends: an attempt cancelled because another won
			// is never received, and is neither a failure nor a success.
			c.p.bucket.count(c.hop, r.err == nil)
			if r.err == nil {
				if r.hedge {
					c.p.observe(Event{Kind: KindHedgeWon, Hop: c.hop, Hedge: true, Elapsed: time.Since(c.start)})
				}
				return r
			}
			last = r
			if running == 0 {
				return last
			}
		case <-due:
			sent++
			now := time.Now()
			if ctx.Err() != nil || c.bounded && !now.Before(c.deadline) || !c.p.bucket.allows(c.hop) {
				due = nil // past the deadline or throttled: no more hedges
				continue
			}
			launch(true)
			running++
			if sent < h.Max {
				// Due at start + (sent+1)·Delay, not a Delay after this
				// one was sent: hedges keep their schedule.
				timer.Reset(start.Add(time.Duration(sent+1) * h.Delay).Sub(now))
			} else {
				due = nil
			}
		}
	}
}

// started counts an attempt the call sends.
func (c *caller[T]) started(hedge bool) {
	c.attempts++
	c.p.observe(Event{Kind: KindAttempt, Hop: c.hop, Hedge: hedge, Elapsed: time.Since(c.start)})
}

// attempt runs fn once under the sooner of the hop's timeout and the
// call's deadline.
func (c *caller[T]) attempt(ctx context.Context, hedge bool) result[T] {
	if err := ctx.Err(); err != nil {
		return result[T]{err: err, hedge: hedge} // nothing left to run it in
	}
	now := time.Now()
	own := c.hp.Timeout > 0 && (!c.bounded || now.Add(c.hp.Timeout).Before(c.deadline))
	var actx context.Context
	var cancel context.CancelFunc
	var ownDeadline time.Time
	if own {
		ownDeadline = now.Add(c.hp.Timeout)
		actx, cancel = context.WithDeadline(ctx, ownDeadline)
	} else {
		actx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	done := make(chan result[T], 1) // fn's late answer is dropped, not waited for
	go func() {
		var r result[T]
		defer func() {
			if x := recover(); x != nil {
				r = result[T]{panicked: true, pv: x}
			}
			done <- r
		}()
		r.v, r.err = c.fn(actx)
	}()
	var r result[T]
	select {
	case r = <-done:
	case <-actx.Done():
		select {
		case r = <-done: // answered at the deadline itself
		default:
			r.err = actx.Err()
		}
	}
	r.hedge = hedge
	if r.err != nil && own && !time.Now().Before(ownDeadline) {
		r.cut = true
	}
	return r
}

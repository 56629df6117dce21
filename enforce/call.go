package enforce

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tailscope/tailscope/policy"
)

// Call makes one call to hop under the policy: fn is one attempt, run with
// a context that ends at the attempt's deadline (see Do) and tells which
// attempt it is (AttemptOf). It returns nil on the first attempt that
// succeeds, else a *Degraded.
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
//   - Whether an error may be retried is Options.Retryable's to say, else
//     DefaultRetryable's; an attempt cut by the hop's timeout always may.
//
// fn is called from another goroutine, one per attempt (hedges run side by
// side); its context carries the attempt's deadline (so that a gRPC call
// made with it sends grpc-timeout) and its number (AttemptOf). A panic in
// fn is raised again in the caller's goroutine.
//
// A hop whose policy says idempotent: false is not hedged, and a failed
// attempt of it is not retried (see CallOptions.Unsent): its calls may
// act twice.
func Do[T any](ctx context.Context, p *Policy, hop string, fn func(context.Context) (T, error)) (T, error) {
	return do(ctx, p, hop, CallOptions{}, fn, nil, false)
}

// CallOptions tune one call made with DoWith.
type CallOptions struct {
	// Idempotent, when set, overrides the hop's idempotent key for this
	// call (Transport sets it from the HTTP method, enforcegrpc from the
	// gRPC method's verb, as the configs `tailscope recommend --emit`
	// writes do). A call that is not idempotent may act twice if sent
	// twice: it is never hedged, and a failed attempt is retried only when
	// Unsent says that the request cannot have reached the service. Unset
	// and Idempotent, the policy's retries and hedges apply (the replay's
	// rules).
	Idempotent policy.Idempotence
	// Unsent says whether a failed attempt's error shows that its request
	// cannot have reached the service (the connection could not be made),
	// so that a call that is not idempotent may be retried after it. Nil:
	// no error shows it.
	Unsent func(error) bool
}

// DoWith is Do with options for this one call.
func DoWith[T any](ctx context.Context, p *Policy, hop string, opt CallOptions, fn func(context.Context) (T, error)) (T, error) {
	return do(ctx, p, hop, opt, fn, nil, false)
}

// do is DoWith with drop, when not nil, given every value that an attempt
// answered with but that the call does not return (a late answer, a hedge
// that lost the race), so that it can release what the value holds (an
// HTTP response's body); and with once, one attempt only (no retry, no
// hedge: a request that cannot be sent twice).
func do[T any](ctx context.Context, p *Policy, hop string, opt CallOptions, fn func(context.Context) (T, error), drop func(T), once bool) (T, error) {
	c := &caller[T]{p: p, hop: hop, hp: p.For(hop), fn: fn, drop: drop, ctx: ctx, start: time.Now()}
	if opt.Idempotent.Set() {
		c.hp.Idempotent = opt.Idempotent
	}
	if c.hp.Idempotent == policy.NotIdempotent {
		c.hp.Hedge = policy.Hedge{}
		c.unsent = opt.Unsent
		if c.unsent == nil {
			c.unsent = func(error) bool { return false }
		}
	}
	if once {
		c.hp.Retries, c.hp.Hedge = 0, policy.Hedge{}
	}
	c.deadline, c.bounded = ctx.Deadline()
	return c.run(ctx)
}

// Attempt is the attempt that a context belongs to (see AttemptOf).
type Attempt struct {
	// Hop is the hop called.
	Hop string
	// N is the attempt's number in the call, from 1 in the order the
	// attempts start, hedges included (Event.Attempt).
	N int
	// Retry is the try the attempt belongs to: 0 for the first, k for
	// the k-th retry.
	Retry int
	// Hedge is true for an attempt sent as a hedge.
	Hedge bool
}

type attemptKey struct{}

// AttemptOf returns the attempt whose context ctx is, or derives from (the
// innermost, for a call made inside an attempt), and false outside any
// attempt.
func AttemptOf(ctx context.Context) (Attempt, bool) {
	a, ok := ctx.Value(attemptKey{}).(Attempt)
	return a, ok
}

// caller is the state of one call.
type caller[T any] struct {
	p    *Policy
	hop  string
	hp   policy.Hop
	fn   func(context.Context) (T, error)
	drop func(T)
	// unsent, for a call that is not idempotent, says whether a failed
	// attempt cannot have reached the service (nil: the call may be
	// resent).
	unsent func(error) bool
	ctx    context.Context // the call's
	start  time.Time
	// deadline is ctx's: the request's budget, or the parent attempt's.
	deadline time.Time
	bounded  bool
	attempts int
	// ran counts the attempts that ran fn: one started with no time left
	// is counted as an attempt (the replay counts it too) but runs nothing.
	ran atomic.Int64
}

// result is how one attempt ended.
type result[T any] struct {
	v     T
	err   error
	cut   bool // the hop's own timeout ended it
	hedge bool
	n     int // the attempt's number
	// judged: retry says whether err may be retried (asked when the
	// attempt ended).
	judged, retry bool
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
		r := c.try(ctx, k)
		if r.panicked {
			panic(r.pv)
		}
		if r.err == nil {
			c.p.observe(Event{Kind: KindSuccess, Hop: c.hop, Hedge: r.hedge, Attempt: r.n, Elapsed: time.Since(c.start)})
			return r.v, nil
		}
		last = r
		if ctx.Err() != nil || c.bounded && !time.Now().Before(c.deadline) {
			reason = c.ended(ctx)
			break
		}
		retry := r.retry
		if !r.judged {
			retry = c.p.retryable(r.err)
		}
		if !r.cut && !retry {
			reason = ReasonNotRetryable
			break
		}
		if c.unsent != nil && (r.cut || !c.unsent(r.err)) {
			// Not idempotent, and the request may have reached the
			// service: no retry for it.
			reason = ReasonRetriesExhausted
			if r.cut {
				reason = ReasonTimeout
			}
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
		Ran:       int(c.ran.Load()),
		Missing:   missing(part, reason, c.attempts, int(c.ran.Load()), c.hp.Timeout),
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
func (c *caller[T]) try(ctx context.Context, k int) result[T] {
	h := c.hp.Hedge
	if h.Delay <= 0 || h.Max < 1 {
		r := c.attempt(ctx, false, c.started(false), k)
		if !r.panicked {
			c.p.bucket.count(c.hop, r.err == nil)
		}
		return r
	}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel() // the attempts still running lost
	results := make(chan result[T], 1+h.Max)
	launch := func(hedge bool) {
		n := c.started(hedge)
		go func() { results <- c.attempt(tctx, hedge, n, k) }()
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
					c.p.observe(Event{Kind: KindHedgeWon, Hop: c.hop, Hedge: true, Attempt: r.n, Elapsed: time.Since(c.start)})
				}
				if c.drop != nil && running > 0 {
					// The attempts still running are cancelled as try
					// returns; one may have answered all the same.
					go func(left int) {
						for ; left > 0; left-- {
							if l := <-results; l.err == nil && !l.panicked {
								c.drop(l.v)
							}
						}
					}(running)
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

// started counts an attempt the call sends, and returns its number.
func (c *caller[T]) started(hedge bool) int {
	c.attempts++
	c.p.observe(Event{Kind: KindAttempt, Hop: c.hop, Hedge: hedge, Attempt: c.attempts, Elapsed: time.Since(c.start)})
	return c.attempts
}

// attempt runs fn once, as attempt n of the call in try k, under the
// sooner of the hop's timeout and ctx's deadline (ctx is the call's, or
// for a hedged try the try's).
func (c *caller[T]) attempt(ctx context.Context, hedge bool, n, k int) (r result[T]) {
	now := time.Now()
	defer func() {
		r.hedge, r.n = hedge, n
		c.attemptEnded(ctx, &r, now)
	}()
	if err := ctx.Err(); err != nil {
		return result[T]{err: err} // nothing left to run it in
	}
	c.ran.Add(1)
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
	actx = context.WithValue(actx, attemptKey{}, Attempt{Hop: c.hop, N: n, Retry: k, Hedge: hedge})
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
	select {
	case r = <-done:
	case <-actx.Done():
		select {
		case r = <-done: // answered at the deadline itself
		default:
			r.err = actx.Err()
			if c.drop != nil {
				go func() {
					if l := <-done; l.err == nil && !l.panicked {
						c.drop(l.v)
					}
				}()
			}
		}
	}
	if r.err != nil && own && !time.Now().Before(ownDeadline) {
		r.cut = true
	}
	return r
}

// attemptEnded tells Observe how attempt r, started at start, ended, and judges
// whether its error may be retried. ctx is the one the attempt ran under:
// the call's, or its try's.
func (c *caller[T]) attemptEnded(ctx context.Context, r *result[T], start time.Time) {
	now := time.Now()
	e := Event{Kind: KindAttemptEnd, Hop: c.hop, Hedge: r.hedge, Attempt: r.n, Latency: now.Sub(start), Elapsed: now.Sub(c.start), Err: r.err}
	switch {
	case r.panicked:
		e.Outcome, e.Err = OutcomeError, fmt.Errorf("enforce: attempt %d of %s panicked: %v", r.n, c.hop, r.pv)
	case r.err == nil:
		e.Outcome = OutcomeOK
	case r.cut:
		e.Outcome = OutcomeTimeout
	case c.ctx.Err() != nil || c.bounded && !now.Before(c.deadline):
		e.Outcome = OutcomeBudget
		if c.ended(c.ctx) == ReasonCanceled {
			e.Outcome = OutcomeCanceled
		}
	case ctx.Err() != nil:
		e.Outcome = OutcomeLost
	default:
		r.judged, r.retry = true, c.p.retryable(r.err)
		e.Outcome = OutcomeError
		if !r.retry {
			e.Outcome = OutcomeNotRetryable
		}
	}
	c.p.observe(e)
}

package enforce

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tailscope/tailscope/internal/units"
)

// Reason is why a call gave up.
type Reason string

// The reasons a call gives up. They are stable strings, fit for a metric's
// label.
const (
	// ReasonTimeout: no retry was left, and the last attempt ran past the
	// hop's own per-attempt timeout.
	ReasonTimeout Reason = "timeout"
	// ReasonBudget: the time left for the request (its budget, or the
	// deadline of the attempt the call was made in) ran out, or what was
	// left could not hold the backoff and one whole attempt (budget_aware).
	ReasonBudget Reason = "budget"
	// ReasonRetriesExhausted: every attempt the policy allows failed, the
	// last with an error before its timeout.
	ReasonRetriesExhausted Reason = "retries exhausted"
	// ReasonNotRetryable: an attempt failed with an error that a retry
	// cannot fix (see Permanent, Options.Retryable and DefaultRetryable).
	ReasonNotRetryable Reason = "not retryable"
	// ReasonThrottled: a retry was due, but the hop's retry budget (see
	// Options.Throttle) is spent while the hop fails often.
	ReasonThrottled Reason = "throttled"
	// ReasonCanceled: the caller cancelled the request.
	ReasonCanceled Reason = "canceled"
)

// Degraded is a call that gave up: what was tried, what is missing, and
// whether trying again could help. Every error that Call and Do return is
// a *Degraded; find it with errors.As.
//
// Its Error text and Missing are built from the hop, the policy and the
// count of attempts only, never from an attempt's error, so that a reader
// who pastes it into a page or a prompt states a gap instead of passing an
// error message on as content. The last attempt's error stays reachable
// through errors.Is and errors.As (Unwrap), for logs.
type Degraded struct {
	// Hop is the hop that gave up.
	Hop string
	// Reason is why it gave up.
	Reason Reason
	// Attempts is how many attempts the call started, hedges included;
	// Ran how many of them ran the function (an attempt started with no
	// time left runs nothing).
	Attempts, Ran int
	// Elapsed is the time from the call to the give-up.
	Elapsed time.Duration
	// Missing says in plain words which part of the answer is missing and
	// why ("the answer from retrieve: the request's time ran out after 2
	// attempts").
	Missing string
	// Retryable is true when a later request could get the part (the
	// failure was one of time or load), false when the hop refused it
	// (ReasonNotRetryable) or the caller cancelled.
	Retryable bool

	last error
}

func (d *Degraded) Error() string {
	return "enforce: gave up on " + d.Missing
}

// Unwrap returns the last attempt's error (for logs, not for readers).
func (d *Degraded) Unwrap() error { return d.last }

// missing writes the Missing text of a give-up.
func missing(part string, r Reason, attempts, ran int, timeout time.Duration) string {
	n := units.Count(attempts, "attempt", "attempts")
	var why string
	switch {
	case ran == 0 && r == ReasonBudget:
		return part + ": the time left for the request had run out before its first attempt could run"
	case ran == 0 && r == ReasonCanceled:
		return part + ": the caller had stopped waiting before its first attempt could run"
	}
	switch r {
	case ReasonTimeout:
		if attempts == 1 {
			why = fmt.Sprintf("it did not answer within its %s timeout", timeout)
		} else {
			why = fmt.Sprintf("none of %s answered within its %s timeout", n, timeout)
		}
	case ReasonBudget:
		why = "the time left for the request ran out after " + n
	case ReasonRetriesExhausted:
		if attempts == 1 {
			why = "its one attempt failed and the policy allows no retry"
		} else {
			why = "all " + n + " failed"
		}
	case ReasonNotRetryable:
		why = "it refused the request with an error that a retry cannot fix"
	case ReasonThrottled:
		why = "it failed after " + n + ", and retries are paused while it fails this often"
	case ReasonCanceled:
		why = "the caller stopped waiting after " + n
	default:
		why = "it gave up after " + n
	}
	return part + ": " + why
}

// permanent marks an error that a retry cannot fix.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent wraps err so that the call gives up at once, with
// ReasonNotRetryable: an attempt that the callee refused (a bad request,
// a missing permission) fails the same way every time.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// IsPermanent reports whether err is, or wraps, an error wrapped by
// Permanent.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}

// Kind is what an Event reports.
type Kind uint8

// The kinds of Event. Their values are stable (new kinds are added at the
// end): a hook that switches on Kind should ignore kinds it does not know.
const (
	// KindAttempt: an attempt started (Hedge says whether it is a hedge,
	// Attempt its number).
	KindAttempt Kind = iota
	// KindHedgeWon: a hedge answered first (a KindSuccess follows).
	KindHedgeWon
	// KindGiveUp: the call gave up (Reason says why).
	KindGiveUp
	// KindAttemptEnd: an attempt ended: Outcome says how, Latency how long
	// it ran, Err with which error. Every KindAttempt is followed by one
	// KindAttemptEnd of the same Attempt; that of an attempt cancelled
	// because another attempt of its try won (OutcomeLost) may come after
	// the call has returned.
	KindAttemptEnd
	// KindSuccess: the call succeeded: Attempt is the attempt that
	// answered, Elapsed the call's time.
	KindSuccess
	// KindUnknownHop: a call named a hop that the policy does not list, so
	// that it runs under the default; told once per name (see
	// Options.Warn), with Suggest the closest listed name, if any.
	KindUnknownHop
)

func (k Kind) String() string {
	switch k {
	case KindAttempt:
		return "attempt"
	case KindHedgeWon:
		return "hedge won"
	case KindGiveUp:
		return "give up"
	case KindAttemptEnd:
		return "attempt end"
	case KindSuccess:
		return "success"
	case KindUnknownHop:
		return "unknown hop"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Outcome is how one attempt ended. The values are stable strings, fit
// for a metric's label.
type Outcome string

// The outcomes of an attempt.
const (
	// OutcomeOK: the attempt answered.
	OutcomeOK Outcome = "ok"
	// OutcomeError: it failed with an error that a retry may fix.
	OutcomeError Outcome = "error"
	// OutcomeNotRetryable: it failed with an error that a retry cannot fix
	// (Permanent, Options.Retryable, DefaultRetryable).
	OutcomeNotRetryable Outcome = "not retryable"
	// OutcomeTimeout: the hop's own per-attempt timeout cut it.
	OutcomeTimeout Outcome = "timeout"
	// OutcomeBudget: the time left for the request (its budget, or the
	// deadline of the attempt the call was made in) ran out while it ran.
	OutcomeBudget Outcome = "budget"
	// OutcomeCanceled: the caller cancelled the request while it ran.
	OutcomeCanceled Outcome = "canceled"
	// OutcomeLost: another attempt of the same try (a hedge, or the
	// attempt a hedge was sent for) answered first, and this one was
	// cancelled.
	OutcomeLost Outcome = "lost"
)

// Event is what Options.Observe is told.
type Event struct {
	Kind Kind
	Hop  string
	// Hedge is true for an attempt sent as a hedge.
	Hedge bool
	// Reason is set for KindGiveUp.
	Reason Reason
	// Elapsed is the time since the call started (for KindAttemptEnd, at
	// the attempt's end; for KindSuccess and KindGiveUp, the call's time).
	Elapsed time.Duration
	// Attempt is the attempt's number in the call, from 1 in the order
	// they start, hedges included (KindAttempt, KindAttemptEnd; the
	// winning attempt for KindSuccess and KindHedgeWon). It is the N of
	// the attempt's AttemptOf.
	Attempt int
	// Outcome is how the attempt ended (KindAttemptEnd).
	Outcome Outcome
	// Latency is how long the attempt ran, from its start to its end as
	// the call saw it: its answer, its error, or the deadline that cut it
	// (KindAttemptEnd).
	Latency time.Duration
	// Err is the attempt's error (KindAttemptEnd), for logs and traces;
	// nil for OutcomeOK. Never show it to a reader (see Degraded).
	Err error
	// Suggest is, for KindUnknownHop, the listed hop whose name is
	// closest to Hop ("cart" for "Cart"), or "".
	Suggest string
}

// Counts is a ready Observe hook that counts events by hop: attempts,
// hedges sent, hedges won, successes, attempts by outcome, and give-ups by
// reason. Its zero value is ready; it is safe for concurrent use.
type Counts struct {
	mu        sync.Mutex
	attempts  map[string]int
	hedges    map[string]int
	hedgesWon map[string]int
	successes map[string]int
	outcomes  map[string]map[Outcome]int
	giveUps   map[string]map[Reason]int
}

// Observe counts e; pass it as Options.Observe.
func (c *Counts) Observe(e Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.attempts == nil {
		c.attempts, c.hedges, c.hedgesWon, c.successes = map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
		c.outcomes, c.giveUps = map[string]map[Outcome]int{}, map[string]map[Reason]int{}
	}
	switch e.Kind {
	case KindAttempt:
		c.attempts[e.Hop]++
		if e.Hedge {
			c.hedges[e.Hop]++
		}
	case KindHedgeWon:
		c.hedgesWon[e.Hop]++
	case KindSuccess:
		c.successes[e.Hop]++
	case KindAttemptEnd:
		m := c.outcomes[e.Hop]
		if m == nil {
			m = map[Outcome]int{}
			c.outcomes[e.Hop] = m
		}
		m[e.Outcome]++
	case KindGiveUp:
		m := c.giveUps[e.Hop]
		if m == nil {
			m = map[Reason]int{}
			c.giveUps[e.Hop] = m
		}
		m[e.Reason]++
	}
}

// Snapshot is what a Counts has counted: totals over every hop and the
// same by hop. Outcomes counts the attempts that have ended (an attempt
// lost to a hedge may end after its call returned).
type Snapshot struct {
	Attempts, Hedges, HedgesWon, GiveUps, Successes int
	AttemptsByHop, HedgesByHop                      map[string]int
	HedgesWonByHop, SuccessesByHop                  map[string]int
	Outcomes                                        map[Outcome]int
	OutcomesByHop                                   map[string]map[Outcome]int
	GiveUpsByReason                                 map[Reason]int
	GiveUpsByHop                                    map[string]map[Reason]int
}

// Snapshot copies the counts.
func (c *Counts) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{AttemptsByHop: map[string]int{}, HedgesByHop: map[string]int{}, HedgesWonByHop: map[string]int{},
		SuccessesByHop: map[string]int{}, Outcomes: map[Outcome]int{}, OutcomesByHop: map[string]map[Outcome]int{},
		GiveUpsByReason: map[Reason]int{}, GiveUpsByHop: map[string]map[Reason]int{}}
	total := func(from map[string]int, to map[string]int, sum *int) {
		for h, n := range from {
			to[h] = n
			*sum += n
		}
	}
	total(c.attempts, s.AttemptsByHop, &s.Attempts)
	total(c.hedges, s.HedgesByHop, &s.Hedges)
	total(c.hedgesWon, s.HedgesWonByHop, &s.HedgesWon)
	total(c.successes, s.SuccessesByHop, &s.Successes)
	for h, m := range c.outcomes {
		cp := map[Outcome]int{}
		for o, n := range m {
			cp[o] = n
			s.Outcomes[o] += n
		}
		s.OutcomesByHop[h] = cp
	}
	for h, m := range c.giveUps {
		cp := map[Reason]int{}
		for r, n := range m {
			cp[r] = n
			s.GiveUpsByReason[r] += n
			s.GiveUps += n
		}
		s.GiveUpsByHop[h] = cp
	}
	return s
}

// Reset sets every count back to zero.
func (c *Counts) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attempts, c.hedges, c.hedgesWon, c.successes, c.outcomes, c.giveUps = nil, nil, nil, nil, nil, nil
}

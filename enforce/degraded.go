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
	// cannot fix (see Permanent and Options.Retryable).
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
	// Attempts is how many attempts the call started, hedges included.
	Attempts int
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
func missing(part string, r Reason, attempts int, timeout time.Duration) string {
	n := units.Count(attempts, "attempt", "attempts")
	var why string
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

func isPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}

// Kind is what an Event reports.
type Kind uint8

const (
	// KindAttempt: an attempt started (Hedge says whether it is a hedge).
	KindAttempt Kind = iota
	// KindHedgeWon: a hedge answered first.
	KindHedgeWon
	// KindGiveUp: the call gave up (Reason says why).
	KindGiveUp
)

// Event is what Options.Observe is told.
type Event struct {
	Kind Kind
	Hop  string
	// Hedge is true for an attempt sent as a hedge.
	Hedge bool
	// Reason is set for KindGiveUp.
	Reason Reason
	// Elapsed is the time since the call started.
	Elapsed time.Duration
}

// Counts is a ready Observe hook that counts events by hop: attempts,
// hedges sent, hedges won, and give-ups by reason. Its zero value is ready;
// it is safe for concurrent use.
type Counts struct {
	mu        sync.Mutex
	attempts  map[string]int
	hedges    map[string]int
	hedgesWon map[string]int
	giveUps   map[string]map[Reason]int
}

// Observe counts e; pass it as Options.Observe.
func (c *Counts) Observe(e Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.attempts == nil {
		c.attempts, c.hedges, c.hedgesWon = map[string]int{}, map[string]int{}, map[string]int{}
		c.giveUps = map[string]map[Reason]int{}
	}
	switch e.Kind {
	case KindAttempt:
		c.attempts[e.Hop]++
		if e.Hedge {
			c.hedges[e.Hop]++
		}
	case KindHedgeWon:
		c.hedgesWon[e.Hop]++
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
// same by hop.
type Snapshot struct {
	Attempts, Hedges, HedgesWon, GiveUps int
	AttemptsByHop, HedgesByHop           map[string]int
	HedgesWonByHop                       map[string]int
	GiveUpsByReason                      map[Reason]int
	GiveUpsByHop                         map[string]map[Reason]int
}

// Snapshot copies the counts.
func (c *Counts) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{AttemptsByHop: map[string]int{}, HedgesByHop: map[string]int{}, HedgesWonByHop: map[string]int{},
		GiveUpsByReason: map[Reason]int{}, GiveUpsByHop: map[string]map[Reason]int{}}
	for h, n := range c.attempts {
		s.AttemptsByHop[h] = n
		s.Attempts += n
	}
	for h, n := range c.hedges {
		s.HedgesByHop[h] = n
		s.Hedges += n
	}
	for h, n := range c.hedgesWon {
		s.HedgesWonByHop[h] = n
		s.HedgesWon += n
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
	c.attempts, c.hedges, c.hedgesWon, c.giveUps = nil, nil, nil, nil
}

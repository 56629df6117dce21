package analyze

import (
	"fmt"
	"math"

	"github.com/tailscope/tailscope/span"
)

// Failure classes (contract values).
const (
	ClassRanToTimeout = "ran-to-timeout"
	ClassTransient    = "transient"
	ClassMixed        = "mixed"
	ClassNone         = "none"
	ClassTooFew       = "too-few"
)

// MinFailures is the number of failed attempts below which a hop's class
// is too-few: a handful of failures cannot show a distribution.
const MinFailures = 5

// PileTolerance is how close to the timeout (or to a multiple of it) a
// failure must end to count as having run to the timeout: 2%, wider than
// scheduler and clock noise, far narrower than real latency spread.
const PileTolerance = 0.02

// Classify names a hop's failure class from its failure-time distribution
// and says why, citing the numbers.
//
// The rule: with T the timeout in force, a failure "ran to timeout" when
// the span says it was cut by a timeout or its duration lies within 2% of
// T. At least 80% of failures there → ran-to-timeout (the slowness is
// persistent: retries hit the same wall); at most 20% → transient (fast or
// scattered failures, which a retry with backoff can beat); in between →
// mixed. Fewer than 5 failures → too-few; none → none.
func Classify(h *Hop, ss []*span.Span) (string, string) {
	n := h.FailedAttempts
	if n == 0 {
		return ClassNone, "no failed attempts"
	}
	if n < MinFailures {
		return ClassTooFew, fmt.Sprintf("%d failed attempts: too few to tell a pile-up from scatter", n)
	}
	var T float64
	if h.TimeoutMs != nil {
		T = *h.TimeoutMs * 1e6
	}
	atT, fast := 0, 0
	for _, s := range ss {
		if !s.Failed() {
			continue
		}
		d := float64(s.Duration)
		switch {
		case s.Timeout || (T > 0 && math.Abs(d-T) <= PileTolerance*T):
			atT++
		case T > 0 && d < T/2:
			fast++
		case T == 0:
			fast++
		}
	}
	share := float64(atT) / float64(n)
	yield := ""
	if y := h.RetryYield; y != nil && y.AfterTimeout.Retried > 0 {
		yield = fmt.Sprintf("; retries after a timeout recovered %d of %d", y.AfterTimeout.Succeeded, y.AfterTimeout.Retried)
	}
	at := "the timeout"
	if T > 0 {
		at = fmtMs(T / 1e6)
	}
	switch {
	case share >= 0.8:
		return ClassRanToTimeout, fmt.Sprintf("%d of %d failures ran to %s (within %.0f%%)%s", atT, n, at, PileTolerance*100, yield)
	case share <= 0.2:
		return ClassTransient, fmt.Sprintf("%d of %d failures ended before %s (%d fast, under half of it)%s", n-atT, n, at, fast, yield)
	}
	return ClassMixed, fmt.Sprintf("%d of %d failures ran to %s, %d ended earlier%s", atT, n, at, n-atT, yield)
}

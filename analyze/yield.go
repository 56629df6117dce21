package analyze

import (
	"github.com/tailscope/tailscope/span"

	"github.com/tailscope/tailscope/internal/units"
)

// retryYield measures what retries bought on a hop: of the calls that made
// a second attempt, how many ended in success, and for every failed
// attempt n that was followed by an attempt n+1, whether n+1 succeeded,
// split by the kind of failure of attempt n (timedOut tells them apart).
//
// The split is the point: after a timeout caused by persistent slowness
// the next attempt hits the same wall (0 of n), after a fast transient
// error it usually succeeds. It returns nil when no call was retried: no
// evidence either way, which is not the same as a yield of 0.
func retryYield(cs []*span.Call, timedOut func(*span.Span) bool) *Yield {
	y := &Yield{}
	for _, c := range cs {
		if len(c.Attempts) < 2 {
			continue
		}
		y.RetriedCalls++
		if !c.Failed() {
			y.Recovered++
		}
		for i := 0; i+1 < len(c.Attempts); i++ {
			a, b := c.Attempts[i].Span, c.Attempts[i+1].Span
			if !a.Failed() {
				continue
			}
			tr := &y.AfterFastFailure
			if timedOut(a) {
				tr = &y.AfterTimeout
			}
			tr.Retried++
			if !b.Failed() {
				tr.Succeeded++
			}
		}
	}
	if y.RetriedCalls == 0 {
		return nil
	}
	y.Rate = units.Round(float64(y.Recovered)/float64(y.RetriedCalls), 4)
	return y
}

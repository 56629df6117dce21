package analyze

import (
	"github.com/tailscope/tailscope/internal/units"
	"math"
	"sort"

	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
)

// Timeout sources, the values of a hop's timeout_source.
const (
	SourcePolicy    = "policy"
	SourceAttribute = "span attribute"
	SourceTimedOut  = "inferred from timed-out attempts"
	SourcePile      = "inferred from the failure pile-up"
	SourceUnknown   = "unknown"
)

// MinPile is the number of failures that must pile up at one duration
// before tailscope believes, with no other sign, that a timeout cut them.
const MinPile = 5

// PileWindow is the relative width of the band searched for a pile-up:
// 2% (±1% around its middle). Timer firing, scheduling and clock noise put
// cut attempts within a fraction of a percent of each other; real latency
// spreads far wider.
const PileWindow = 0.02

// tolerance is how far from a timeout T an attempt may end and still count
// as cut by it: PileTolerance of T, and never less than 1 ms, the
// resolution of many logs.
func tolerance(T int64) int64 {
	return max(int64(PileTolerance*float64(T)), 1_000_000)
}

// near reports whether d lies within the tolerance of target.
func near(d, target int64) bool {
	lo, hi := cutWindow(target)
	return d >= lo && d <= hi
}

// timeoutOf finds the per-attempt timeout in force on a hop and says where
// it came from, in order of trust: the policy the logs were recorded under
// (--policy-in-force), the timeout the spans carry as an attribute (the
// most common value), the pile-up of attempts the spans mark as timed out,
// and last the pile-up of failures that carry no timeout mark at all.
//
// Inference is deliberately cautious (see InferPile): a wrong timeout
// would turn scattered failures into a false "ran-to-timeout".
func timeoutOf(hop string, ss []*span.Span, opt Options) (*float64, string) {
	if p := opt.PolicyInForce; p != nil {
		if t, _, _ := p.CallTimeouts(hop, span.CallerSide(commonKind(ss))); t > 0 {
			v := units.Ms(int64(t))
			return &v, SourcePolicy
		}
	}
	attr := map[int64]int{}
	var flagged, failed, succ []int64
	for _, s := range ss {
		if s.TimeoutInForce > 0 {
			attr[s.TimeoutInForce]++
		}
		switch {
		case s.Timeout:
			flagged = append(flagged, s.Duration)
			failed = append(failed, s.Duration)
		case s.Failed():
			failed = append(failed, s.Duration)
		default:
			succ = append(succ, s.Duration)
		}
	}
	if len(attr) > 0 {
		v := units.Ms(modeKey(attr))
		return &v, SourceAttribute
	}
	if len(flagged) > 0 {
		// Every flagged attempt was cut by some timeout; the densest band
		// is the per-attempt one (cuts by a request deadline scatter below
		// it).
		quantile.SortInt64(flagged)
		lo, hi := densest(flagged)
		v := units.Ms(pileValue(flagged[lo:hi]))
		return &v, SourceTimedOut
	}
	quantile.SortInt64(failed)
	quantile.SortInt64(succ)
	if t, ok := InferPile(failed, succ); ok {
		v := units.Ms(t)
		return &v, SourcePile
	}
	return nil, SourceUnknown
}

// InferPile looks for the timeout in the durations of failed attempts that
// carry no timeout mark (ascending), given the durations of the hop's
// successful attempts (ascending, may be empty). It reports a timeout when
//
//   - at least MinPile failures, and at least 20% of them, end within one
//     PileWindow band: a timer, not latency, decided when they ended;
//   - at most 5% of the successes are longer than the band's top: a
//     timeout caps every attempt, so a pile below typical successes is a
//     fast error with a fixed cost (a refused connection, a 503 from a
//     cache), not a cut.
//
// The timeout is the band's lower quartile (a timer fires at T, the span
// ends a little after), snapped to a round value when one lies within
// 0.5% (see snapNice).
func InferPile(sortedFailed, sortedSucc []int64) (int64, bool) {
	n := len(sortedFailed)
	if n < MinPile {
		return 0, false
	}
	lo, hi := densest(sortedFailed)
	c := hi - lo
	if c < MinPile || float64(c) < 0.2*float64(n) {
		return 0, false
	}
	top := sortedFailed[hi-1]
	if len(sortedSucc) > 0 {
		longer := len(sortedSucc) - sort.Search(len(sortedSucc), func(i int) bool { return sortedSucc[i] > top+tolerance(top) })
		if float64(longer) > 0.05*float64(len(sortedSucc)) {
			return 0, false
		}
	}
	return pileValue(sortedFailed[lo:hi]), true
}

// densest returns the bounds [lo, hi) of the PileWindow band holding the
// most values of ascending xs; ties go to the longer durations, where
// timeouts sit.
func densest(xs []int64) (int, int) {
	bestLo, bestHi := 0, 0
	j := 0
	for i := range xs {
		if j < i {
			j = i
		}
		limit := float64(xs[i]) * (1 + PileWindow)
		for j < len(xs) && float64(xs[j]) <= limit {
			j++
		}
		if j-i >= bestHi-bestLo {
			bestLo, bestHi = i, j
		}
	}
	return bestLo, bestHi
}

// pileValue is the timeout a band of cut attempts points to: its lower
// quartile, snapped to a round value.
func pileValue(band []int64) int64 {
	if len(band) == 0 {
		return 0
	}
	return snapNice(band[(len(band)-1)/4])
}

// snapNice rounds d to the roundest value within 0.5% of it (1, 2 or 3
// significant digits): configured timeouts are round numbers, and the
// extra digits of a measured pile are timer and logging noise. Otherwise
// it rounds to the ms (to the µs below 10 ms).
func snapNice(d int64) int64 {
	if d <= 0 {
		return d
	}
	x := float64(d)
	for sig := 1; sig <= 3; sig++ {
		mag := math.Pow(10, math.Floor(math.Log10(x))-float64(sig-1))
		r := math.Round(x/mag) * mag
		if math.Abs(r-x) <= 0.005*x {
			return int64(r)
		}
	}
	if d < 10_000_000 {
		return (d + 500) / 1000 * 1000
	}
	return roundMs(d)
}

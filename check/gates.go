package check

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/replay"
)

// Gates are the user's pass/fail conditions on a replay.
//
// Undetermined requests (a censored attempt whose fate under a longer
// timeout the logs cannot tell) count against every gate unless Optimistic:
// as failures for success, and at the latest time they could have ended
// (their pessimistic end) for latency. With Optimistic they count as
// successes and are left out of latency percentiles, as in the replay's
// own table. Each gate's Got says how many undetermined requests it
// counted and how.
type Gates struct {
	MinSuccess     float64       // 0..1; 0 = no gate
	MaxP95         time.Duration // 0 = no gate
	MaxP99         time.Duration
	MaxFailureTime time.Duration
	// NoWorse compares against the baseline: success may not drop and
	// p95/p99 may not rise by more than Tolerance (a fraction).
	NoWorse   bool
	Tolerance float64
	// Optimistic counts undetermined requests as successes; by default
	// they count against the gate.
	Optimistic bool
	// unknownOutcomes is set by Run when the logs say no request's
	// outcome (analyze.Requests.SucceededInferred): no request is then
	// known to have succeeded, and min-success counts none unless
	// Optimistic.
	unknownOutcomes bool
	// names is Run's Options.Names: the notes name Optimistic by it.
	names option.Names
}

// Apply evaluates the gates on a replay; base is the baseline's replay or
// nil (the no-worse gates then do not apply).
//
// The absolute latency gates (--max-p95, --max-p99) use the table's
// percentiles: over all requests, each at the time it ended, succeeded or
// gave up (docs/DESIGN.md §7); pair them with --min-success, since a policy that
// fails fast has a short p95.
//
// The no-worse latency gates compare time to an answer instead: a failed
// request never answered, so it counts as slower than any success. Else a
// policy that turns fast failures into slower successes (the article's C
// against A: 19 failures at 9 s become answers at up to 11 s) would read as
// a regression, and one that fails sooner as an improvement. The baseline
// gets the same treatment of undetermined requests as the proposal, so a
// policy compared with itself passes.
func (g Gates) Apply(r, base *replay.Result) []Gate {
	out := []Gate{}
	und := g.undeterminedNote(r)
	success := successOf(r, g.Optimistic)
	if g.unknownOutcomes && !g.Optimistic {
		success = 0
		und = fmt.Sprintf(" (the logs say no request's outcome: none of the %d the replay does not fail is known to succeed; %s counts them)", r.Requests-r.Failed, g.names.Of(option.Optimistic))
	}
	if g.MinSuccess > 0 {
		out = append(out, Gate{Name: "min-success", Want: "≥ " + units.Percent(g.MinSuccess, 1), Got: units.Percent(success, 1) + und,
			Pass: success >= g.MinSuccess-1e-12})
	}
	for _, x := range []struct {
		name string
		max  time.Duration
		q    float64
	}{{"max-p95", g.MaxP95, 0.95}, {"max-p99", g.MaxP99, 0.99}} {
		if x.max <= 0 {
			continue
		}
		v := tableLatency(r, x.q, g.Optimistic)
		out = append(out, Gate{Name: x.name, Want: "≤ " + durGate(float64(x.max)) + " (over all requests, each at its end)",
			Got: durGate(v) + und, Pass: !math.IsNaN(v) && v <= float64(x.max)})
	}
	if g.MaxFailureTime > 0 {
		got, pass := "no failures", true
		worst, n := failMax(r, g.Optimistic)
		if n > 0 {
			got, pass = durGate(float64(worst)), worst <= int64(g.MaxFailureTime)
		}
		out = append(out, Gate{Name: "max-failure-time", Want: "≤ " + durGate(float64(g.MaxFailureTime)), Got: got + und, Pass: pass})
	}
	if g.NoWorse && base != nil {
		bs := successOf(base, g.Optimistic)
		out = append(out, Gate{Name: "no-worse-success", Want: "≥ " + units.Percent(bs, 1) + " (baseline)", Got: units.Percent(success, 1) + und,
			Pass: success >= bs-1e-12})
		for _, x := range []struct {
			name string
			q    float64
		}{{"no-worse-p95", 0.95}, {"no-worse-p99", 0.99}} {
			b := answerLatency(base, x.q, g.Optimistic)
			v := answerLatency(r, x.q, g.Optimistic)
			limit := b * (1 + g.Tolerance)
			pass := v <= limit || (math.IsNaN(v) && math.IsNaN(b))
			want := fmt.Sprintf("≤ %s (baseline %s + %s; a failed request counts as no answer)", durGate(limit), durGate(b), units.Percent(g.Tolerance, 1))
			if math.IsInf(b, 1) {
				want = "any (baseline: " + noAnswer(base, x.q, g.Optimistic) + ")"
			}
			got := durGate(v)
			if math.IsInf(v, 1) {
				got = noAnswer(r, x.q, g.Optimistic)
			}
			out = append(out, Gate{Name: x.name, Want: want, Got: got + und, Pass: pass})
		}
	}
	return out
}

// undeterminedNote says how the gates counted undetermined requests.
func (g Gates) undeterminedNote(r *replay.Result) string {
	if r.Undetermined == 0 {
		return ""
	}
	if g.Optimistic {
		return fmt.Sprintf(" (%d undetermined counted as successes: %s)", r.Undetermined, g.names.Of(option.Optimistic))
	}
	return fmt.Sprintf(" (%d undetermined counted against the gate)", r.Undetermined)
}

func successOf(r *replay.Result, optimistic bool) float64 {
	if optimistic {
		return r.SuccessHigh
	}
	return r.SuccessLow
}

// ends returns the ends of the requests a latency gate counts, ns, sorted;
// a failed request (and, unless optimistic, an undetermined one) ends at
// +Inf when failInf is set. Without per-request outcomes (a Result built
// by hand) it returns nil.
func ends(r *replay.Result, optimistic, failInf bool) []float64 {
	if len(r.Outcomes) == 0 {
		return nil
	}
	out := make([]float64, 0, len(r.Outcomes))
	for _, o := range r.Outcomes {
		e := float64(o.End)
		switch {
		case o.Undetermined && optimistic && failInf:
			// Counted as a success; it ended by its pessimistic end at the latest.
		case o.Undetermined && optimistic:
			continue // as in the replay's table
		case o.Undetermined || !o.OK:
			if failInf {
				e = math.Inf(1)
			}
		}
		out = append(out, e)
	}
	sort.Float64s(out)
	return out
}

// tableLatency is the q-quantile of request latency over all requests,
// each at its end (docs/DESIGN.md §7).
func tableLatency(r *replay.Result, q float64, optimistic bool) float64 {
	xs := ends(r, optimistic, false)
	if xs == nil {
		switch q {
		case 0.95:
			return r.P95
		case 0.99:
			return r.P99
		}
		return math.NaN()
	}
	return quantileInf(xs, q)
}

// answerLatency is the q-quantile of time to an answer: failures at +Inf.
func answerLatency(r *replay.Result, q float64, optimistic bool) float64 {
	xs := ends(r, optimistic, true)
	if xs == nil {
		return tableLatency(r, q, optimistic)
	}
	return quantileInf(xs, q)
}

// quantileInf is the contract percentile (linear interpolation between
// closest ranks) over sorted values that may end in +Inf: a rank that
// touches an infinite value is infinite.
func quantileInf(xs []float64, q float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	h := float64(n-1) * q
	i := int(math.Floor(h))
	if i+1 >= n || h == float64(i) {
		return xs[min(i, n-1)]
	}
	if math.IsInf(xs[i+1], 1) {
		return math.Inf(1)
	}
	return xs[i] + (h-float64(i))*(xs[i+1]-xs[i])
}

// failMax is the latest failure the max-failure-time gate counts, and
// how many failures it counted.
func failMax(r *replay.Result, optimistic bool) (int64, int) {
	if len(r.Outcomes) == 0 {
		return r.FailMax, r.Failed
	}
	var worst int64
	n := 0
	for _, o := range r.Outcomes {
		if o.OK && !o.Undetermined || o.Undetermined && optimistic {
			continue
		}
		n++
		worst = max(worst, o.End)
	}
	return worst, n
}

// durGate prints a gate's time in ns: NaN, a time over no requests, as
// "none (no requests)".
func durGate(ns float64) string {
	if math.IsNaN(ns) {
		return "none (no requests)"
	}
	return units.Duration(time.Duration(ns))
}

// noAnswer says why a time to an answer is unbounded.
func noAnswer(r *replay.Result, q float64, optimistic bool) string {
	failed := r.Failed
	if !optimistic {
		failed += r.Undetermined
	}
	return fmt.Sprintf("no answer for %d of %d requests, more than %s", failed, r.Requests, units.Percent(1-q, 1))
}

package check

import (
	"fmt"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/replay"
)

// Gates are the user's pass/fail conditions on a replay.
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
}

// Apply evaluates the gates on a replay; base is the baseline's replay or nil.
func (g Gates) Apply(r, base *replay.Result) []Gate {
	out := []Gate{}
	success := r.SuccessLow
	if g.Optimistic {
		success = r.SuccessHigh
	}
	pct := func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
	dur := func(ns float64) string { return analyze.FormatDuration(time.Duration(ns)) }
	if g.MinSuccess > 0 {
		got := pct(success)
		if r.Undetermined > 0 && !g.Optimistic {
			got += fmt.Sprintf(" (%d undetermined counted as failures)", r.Undetermined)
		}
		out = append(out, Gate{Name: "min-success", Want: "≥ " + pct(g.MinSuccess), Got: got, Pass: success >= g.MinSuccess-1e-12})
	}
	if g.MaxP95 > 0 {
		out = append(out, Gate{Name: "max-p95", Want: "≤ " + dur(float64(g.MaxP95)), Got: dur(r.P95), Pass: r.P95 <= float64(g.MaxP95)})
	}
	if g.MaxP99 > 0 {
		out = append(out, Gate{Name: "max-p99", Want: "≤ " + dur(float64(g.MaxP99)), Got: dur(r.P99), Pass: r.P99 <= float64(g.MaxP99)})
	}
	if g.MaxFailureTime > 0 {
		got, pass := "no failures", true
		if r.Failed > 0 {
			got, pass = dur(float64(r.FailMax)), r.FailMax <= int64(g.MaxFailureTime)
		}
		out = append(out, Gate{Name: "max-failure-time", Want: "≤ " + dur(float64(g.MaxFailureTime)), Got: got, Pass: pass})
	}
	if g.NoWorse && base != nil {
		bs := base.SuccessLow
		if g.Optimistic {
			bs = base.SuccessHigh
		}
		tol := g.Tolerance
		out = append(out, Gate{Name: "no-worse-success", Want: "≥ " + pct(bs) + " (baseline)", Got: pct(success), Pass: success >= bs-1e-12})
		out = append(out, Gate{Name: "no-worse-p95", Want: fmt.Sprintf("≤ %s (baseline +%.0f%%)", dur(base.P95), tol*100), Got: dur(r.P95), Pass: r.P95 <= base.P95*(1+tol)})
		out = append(out, Gate{Name: "no-worse-p99", Want: fmt.Sprintf("≤ %s (baseline +%.0f%%)", dur(base.P99), tol*100), Got: dur(r.P99), Pass: r.P99 <= base.P99*(1+tol)})
	}
	return out
}

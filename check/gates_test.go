package check

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/replay"
)

// result builds a replay result from outcomes the way replay.Run does:
// determined counts, success range, table percentiles over determined
// requests.
func result(os ...replay.Outcome) *replay.Result {
	r := &replay.Result{Requests: len(os), Outcomes: os, FailuresByHop: map[string]int{}}
	var ends []float64
	for _, o := range os {
		switch {
		case o.Undetermined:
			r.Undetermined++
			continue
		case o.OK:
			r.Succeeded++
		default:
			r.Failed++
			r.FailMax = max(r.FailMax, o.End)
		}
		ends = append(ends, float64(o.End))
	}
	n := float64(len(os))
	r.SuccessLow, r.SuccessHigh = float64(r.Succeeded)/n, float64(r.Succeeded+r.Undetermined)/n
	r.P95, r.P99 = quantileInf(sortF(ends), 0.95), quantileInf(sortF(ends), 0.99)
	return r
}

func sortF(xs []float64) []float64 {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
	return xs
}

func okAt(s float64) replay.Outcome   { return replay.Outcome{OK: true, End: int64(s * 1e9)} }
func failAt(s float64) replay.Outcome { return replay.Outcome{End: int64(s * 1e9), FailedHop: "h"} }
func undAt(s float64) replay.Outcome {
	return replay.Outcome{Undetermined: true, End: int64(s * 1e9), FailedHop: "h"}
}

func gateByName(t *testing.T, gs []Gate, name string) Gate {
	t.Helper()
	for _, g := range gs {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no gate %s in %+v", name, gs)
	return Gate{}
}

func TestGatesUndetermined(t *testing.T) {
	// 8 successes at 1..8 s, a failure at 9 s, an undetermined request whose
	// pessimistic end is 10 s.
	r := result(okAt(1), okAt(2), okAt(3), okAt(4), okAt(5), okAt(6), okAt(7), okAt(8), failAt(9), undAt(10))
	g := Gates{MinSuccess: 0.85, MaxP95: 9 * time.Second, MaxFailureTime: 9500 * time.Millisecond}
	cases := []struct {
		optimistic bool
		pass       map[string]bool
		got        map[string]string
	}{
		// Pessimistic: 80%; p95 over all 10 ends = 9 + 0.55×1 = 9.55 s;
		// the latest failure is the undetermined one at 10 s.
		{false, map[string]bool{"min-success": false, "max-p95": false, "max-failure-time": false},
			map[string]string{"min-success": "80% (1 undetermined counted against the gate)", "max-p95": "9.55s (1 undetermined", "max-failure-time": "10s"}},
		// Optimistic: 90%; p95 over the 9 determined = 8 + 0.6 = 8.6 s;
		// the latest failure is at 9 s.
		{true, map[string]bool{"min-success": true, "max-p95": true, "max-failure-time": true},
			map[string]string{"min-success": "90% (1 undetermined counted as successes", "max-p95": "8.6s", "max-failure-time": "9s"}},
	}
	for _, tc := range cases {
		g.Optimistic = tc.optimistic
		gs := g.Apply(r, nil)
		if len(gs) != 3 {
			t.Fatalf("want 3 gates, got %+v", gs)
		}
		for name, want := range tc.pass {
			x := gateByName(t, gs, name)
			if x.Pass != want {
				t.Errorf("optimistic=%v %s: pass %v, want %v (want %s, got %s)", tc.optimistic, name, x.Pass, want, x.Want, x.Got)
			}
			if !strings.HasPrefix(x.Got, tc.got[name]) {
				t.Errorf("optimistic=%v %s: got %q, want it to start %q", tc.optimistic, name, x.Got, tc.got[name])
			}
		}
	}
}

func TestGatesNoWorse(t *testing.T) {
	const tol = 0.05
	var fast, slower4, slower6 []replay.Outcome
	for i := 1; i <= 20; i++ {
		s := float64(i)
		fast = append(fast, okAt(s))
		slower4 = append(slower4, okAt(s*1.04))
		slower6 = append(slower6, okAt(s*1.06))
	}
	// The article's A→C shape: 2 of 20 fail at 9 s under the baseline; the
	// proposal answers them, later (at 11 s).
	var withFails, answersLate []replay.Outcome
	for i := 1; i <= 18; i++ {
		withFails = append(withFails, okAt(float64(i)/4))
		answersLate = append(answersLate, okAt(float64(i)/4))
	}
	withFails = append(withFails, failAt(9), failAt(9))
	answersLate = append(answersLate, okAt(11), okAt(11))
	// E's shape: fails more, sooner.
	failsSooner := append([]replay.Outcome(nil), withFails[:17]...)
	failsSooner = append(failsSooner, failAt(2), failAt(2), failAt(2))

	cases := []struct {
		name       string
		base, cand []replay.Outcome
		pass       map[string]bool
	}{
		{"itself", withFails, withFails, map[string]bool{"no-worse-success": true, "no-worse-p95": true, "no-worse-p99": true}},
		{"4% slower within 5%", fast, slower4, map[string]bool{"no-worse-success": true, "no-worse-p95": true, "no-worse-p99": true}},
		{"6% slower", fast, slower6, map[string]bool{"no-worse-success": true, "no-worse-p95": false, "no-worse-p99": false}},
		{"failures become late answers", withFails, answersLate, map[string]bool{"no-worse-success": true, "no-worse-p95": true, "no-worse-p99": true}},
		{"answers become failures", answersLate, withFails, map[string]bool{"no-worse-success": false, "no-worse-p95": false, "no-worse-p99": false}},
		{"fails more, sooner", withFails, failsSooner, map[string]bool{"no-worse-success": false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gs := Gates{NoWorse: true, Tolerance: tol}.Apply(result(tc.cand...), result(tc.base...))
			for name, want := range tc.pass {
				x := gateByName(t, gs, name)
				if x.Pass != want {
					t.Errorf("%s: pass %v, want %v (want %s, got %s)", name, x.Pass, want, x.Want, x.Got)
				}
			}
		})
	}
	// Without a baseline the no-worse gates do not apply.
	if gs := (Gates{NoWorse: true}).Apply(result(fast...), nil); len(gs) != 0 {
		t.Errorf("no baseline: got gates %+v", gs)
	}
}

func TestQuantileInf(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{[]float64{1, 2, 3, 4, 5}, 0.5, 3},
		{[]float64{1, 2, 3, 4, 5}, 0.9, 4.6},
		{[]float64{1, 2, 3, 4, inf}, 0.5, 3},
		{[]float64{1, 2, 3, 4, inf}, 0.75, 4}, // h = 3 exactly: the 4th value
		{[]float64{1, 2, 3, 4, inf}, 0.8, inf},
		{[]float64{inf}, 0.5, inf},
	}
	for _, tc := range cases {
		if got := quantileInf(tc.xs, tc.q); math.Abs(got-tc.want) > 1e-9 && !(math.IsInf(got, 1) && math.IsInf(tc.want, 1)) {
			t.Errorf("quantileInf(%v, %v) = %v, want %v", tc.xs, tc.q, got, tc.want)
		}
	}
	if !math.IsNaN(quantileInf(nil, 0.5)) {
		t.Errorf("empty: want NaN")
	}
}

package report

import (
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/check"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/replay"
)

// parseRange reads a printed duration range back: "59.5ms–1.55s",
// "9–10.02s" (the lower end borrows the upper end's unit when it has none).
func parseRange(t *testing.T, s string) (lo, hi time.Duration) {
	t.Helper()
	a, b, ok := strings.Cut(s, "–")
	if !ok || strings.Contains(b, "–") {
		t.Fatalf("%q is not one range", s)
	}
	if durUnit(a) == "" {
		a += durUnit(b)
	}
	lo, err := time.ParseDuration(a)
	if err != nil {
		t.Fatalf("%q: lower end: %v", s, err)
	}
	hi, err = time.ParseDuration(b)
	if err != nil {
		t.Fatalf("%q: upper end: %v", s, err)
	}
	return lo, hi
}

// roundingOf is how far a printed duration may be from its value: three
// significant digits in ms, the ms in s, the µs below a ms.
func roundingOf(d time.Duration) float64 {
	switch {
	case d < time.Microsecond:
		return 1
	case d < time.Millisecond:
		return 500
	}
	return 0.005*float64(d) + 1
}

func TestDurRangeExamples(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64 // ms
		want   string
	}{
		{59.5, 1550, "59.5ms–1.55s"},
		{608, 1750, "608ms–1.75s"},
		{9000, 10020, "9–10.02s"},
		{5, 2800, "5ms–2.8s"},
		{1, 2, "1–2ms"},
		{0.5, 2, "500µs–2ms"},
		{0.0005, 0.002, "500ns–2µs"},
		{0, 1500, "0–1.5s"},
		{0, 50, "0s–50ms"},
		{999.7, 1200, "1–1.2s"},  // 999.7ms prints as 1s: the shared unit is s
		{0.9996, 1.5, "1–1.5ms"}, // 999.6µs prints as 1ms
		{120_000, 7_200_000, "120–7200s"},
	} {
		if got := durRange(c.lo, c.hi); got != c.want {
			t.Errorf("durRange(%v, %v) = %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}

// TestFailTextUnits: the FAILURES LAND cell and the failure-landing line
// with the values of a reported case (failures landing between 59.5 ms and
// 10.02 s), which printed mixed units.
func TestFailTextUnits(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{{59.5, 1550, "59.5ms–1.55s, 7"}, {608, 1750, "608ms–1.75s, 7"}, {9000, 10020, "9–10.02s, 7"}} {
		r := check.Replay{Failed: 7, FailureMs: replay.FailureTimes{Min: f(c.lo), Max: f(c.hi)}}
		if got := failText(r); got != c.want {
			t.Errorf("failText(%v–%v) = %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
	got := landing([]quantile.Bucket{{FromMs: 0.5, ToMs: 2, Count: 1}, {FromMs: 900, ToMs: 1000, Count: 2}, {FromMs: 1000, ToMs: 1100, Count: 3}})
	if want := "500µs–2ms: 1, 900ms–1s: 2, 1–1.1s: 3"; got != want {
		t.Errorf("landing = %q, want %q", got, want)
	}
}

// TestDurRangeParsesBack: every printed range, from nanoseconds to hours,
// reads back (with Go's duration syntax, in which "m" is minutes) as its
// two values within the rounding of the print; the bug this guards
// against printed 59.5ms–1.55s as "59.5m–1.55s", which reads as minutes.
func TestDurRangeParsesBack(t *testing.T) {
	edges := []time.Duration{1, 999, time.Microsecond, 999_499, 999_500, time.Millisecond, 9_995_000,
		999_499_999, 999_500_000, time.Second, 99_994_999_999, 99_995_000_000, 100 * time.Second,
		999_949_999_999, 999_950_000_000, 1000 * time.Second, time.Hour, 36 * time.Hour}
	var vals []time.Duration
	vals = append(vals, edges...)
	rng := rand.New(rand.NewSource(12))
	for i := 0; i < 400; i++ {
		// log-uniform over 1ns … 48h
		vals = append(vals, time.Duration(math.Pow(10, rng.Float64()*math.Log10(float64(48*time.Hour)))))
	}
	pairs := 0
	for i, a := range vals {
		for _, b := range []time.Duration{vals[(i*7+3)%len(vals)], vals[(i*13+1)%len(vals)], a * 3, a + a/100} {
			lo, hi := min(a, b), max(a, b)
			if lo == hi {
				continue
			}
			// The report's values are float ms; pass them the same way.
			loMs, hiMs := float64(lo)/1e6, float64(hi)/1e6
			s := durRange(loMs, hiMs)
			plo, phi := parseRange(t, s)
			if e := math.Abs(float64(plo - time.Duration(loMs*1e6))); e > roundingOf(lo) {
				t.Errorf("%v–%v printed %q: lower end reads %v", lo, hi, s, plo)
			}
			if e := math.Abs(float64(phi - time.Duration(hiMs*1e6))); e > roundingOf(hi) {
				t.Errorf("%v–%v printed %q: upper end reads %v", lo, hi, s, phi)
			}
			pairs++
		}
	}
	if pairs < 1000 {
		t.Fatalf("only %d pairs tried", pairs)
	}
}

// TestFailuresLandUnits: the FAILURES LAND cells and the failure-landing
// line of real reports read back in their units (no "m" for ms).
func TestFailuresLandUnits(t *testing.T) {
	for _, name := range []string{"analyze-seed-under-A", "check-demo"} {
		var out string
		if strings.HasPrefix(name, "check") {
			out = string(render(t, "text", name, "", "", true, Options{}))
		} else {
			out = string(render(t, "text", name, "recorded-under-A.jsonl", "A", false, Options{}))
		}
		for _, f := range strings.Fields(out) {
			f = strings.TrimRight(f, ",:;")
			if strings.Contains(f, "–") && strings.ContainsAny(f, "0123456789") && strings.HasSuffix(f, "s") {
				parseRange(t, f)
				if a, _, _ := strings.Cut(f, "–"); strings.HasSuffix(a, "m") {
					t.Errorf("%s: %q has a lower end in minutes", name, f)
				}
			}
		}
	}
}

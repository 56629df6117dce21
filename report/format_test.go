package report

import (
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/check"
	"github.com/tailscope/tailscope/internal/units"
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
	if units.Unit(a) == "" {
		a += units.Unit(b)
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

// TestFailTextUnits: the FAILURES LAND cell and the failure-landing line
// with the values of a reported case (failures landing between 59.5 ms and
// 10.02 s), which printed mixed units; three significant digits.
func TestFailTextUnits(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{{59.5, 1550, "59.5ms–1.55s, 7"}, {608, 1750, "608ms–1.75s, 7"}, {9000, 10020, "9–10s, 7"}, {9000, 10570, "9–10.6s, 7"}} {
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

package summary_test

import (
	"math"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/recommend"
	"github.com/tailscope/tailscope/span"
	"github.com/tailscope/tailscope/summary"
)

// edited returns the bytes of the summary b with its state changed by
// edit and everything re-encoded (checksum included), as someone editing
// a summary on purpose would leave it; nil when the analysis layer itself
// refuses the state before it can be written.
func edited(t testing.TB, b []byte, edit func(*analyze.State)) []byte {
	t.Helper()
	s, err := summary.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	st := s.Accum.State()
	edit(st)
	acc, err := analyze.FromState(st)
	if err != nil {
		return nil
	}
	return summary.Encode(&summary.Summary{Accum: acc, Stats: s.Stats, HopDef: s.HopDef})
}

// impossible are edits of a summary's decoded values that no reader
// could have produced.
var impossible = []struct {
	name string
	edit func(*analyze.State)
}{
	{"negative start", func(st *analyze.State) { st.Sample[0].Span.Start = -5 }},
	{"start past time", func(st *analyze.State) { st.Sample[0].Span.Start = math.MaxInt64 - 10 }},
	{"zero weight", func(st *analyze.State) { st.Sample[0].Span.Weight = 0 }},
	{"NaN weight", func(st *analyze.State) { st.Sample[0].Span.Weight = math.NaN() }},
	{"negative timeout", func(st *analyze.State) { st.Sample[0].Span.TimeoutInForce = -1 }},
	{"9.2e12 ms timeout", func(st *analyze.State) { st.Sample[0].Span.TimeoutInForce = 9.2e18 }},
	{"negative attempt", func(st *analyze.State) { st.Sample[0].Span.Attempt = -1 }},
	{"unknown kind", func(st *analyze.State) { st.Sample[0].Span.Kind = "sideways" }},
	{"a failure the hop does not count", func(st *analyze.State) {
		for i := range st.Hops {
			h := &st.Hops[i]
			for j := range st.Sample {
				if sp := &st.Sample[j].Span; sp.Hop == h.Name && h.Failed == 0 {
					sp.Status = span.Error
					return
				}
			}
		}
		for i := range st.Sample { // every hop failed somewhere: fail them all
			st.Sample[i].Span.Status = span.Error
		}
		for i := range st.Hops {
			st.Hops[i].Failed = 0
		}
	}},
}

// A summary edited and re-summed was accepted with impossible values
// (negative starts, a 9.2e12 ms timeout, failures in requests while the
// hop section says none). Each is refused with an error saying what.
func TestImplausibleValuesRefused(t *testing.T) {
	good := small(t)
	written := 0
	defer func() {
		// Most edits must reach the summary's own checks, or the test
		// shows nothing about them.
		if written < len(impossible)-1 {
			t.Errorf("only %d of %d edited summaries could be written", written, len(impossible))
		}
	}()
	for _, c := range impossible {
		b := edited(t, good, c.edit)
		if b == nil {
			continue // the state itself refused it
		}
		written++
		_, err := summary.Decode(b)
		if err == nil {
			t.Errorf("%s: decoded", c.name)
			continue
		}
		if !strings.Contains(err.Error(), "summary state") {
			t.Errorf("%s: %v, want a summary state error", c.name, err)
		}
	}
}

// plausibleDecoded asserts what every decoded summary holds: sampled
// spans as a reader gives them, and a report whose numbers are not
// negative (FuzzDecode checks it on whatever decodes).
func plausibleDecoded(t *testing.T, s *summary.Summary) {
	t.Helper()
	failed := map[string]int{}
	for _, sp := range s.Accum.Spans() {
		if sp.Duration < 0 || sp.Start < 0 || !(sp.Weight > 0) || math.IsInf(sp.Weight, 0) || sp.TimeoutInForce < 0 || sp.Attempt < 0 || sp.Code < 0 || sp.Hop == "" {
			t.Fatalf("decoded a span no reader gives: %+v", sp)
		}
		if sp.Status == span.Error {
			failed[sp.Hop]++
		}
	}
	neg := func(ps ...*float64) bool {
		for _, p := range ps {
			if p != nil && *p < 0 {
				return true
			}
		}
		return false
	}
	rep, _ := recommend.FromAccum(s.Accum, analyze.Options{})
	for _, h := range rep.Hops {
		l := h.LatencyMs
		if h.Attempts < 0 || h.FailedAttempts < 0 || h.FailedAttempts > h.Attempts || failed[h.Hop] > h.FailedAttempts ||
			neg(l.P50, l.P99, l.Max, h.TimeoutMs) {
			t.Fatalf("hop %q: impossible figures: %d attempts, %d failed (%d in the sample), latency %+v, timeout %v",
				h.Hop, h.Attempts, h.FailedAttempts, failed[h.Hop], l, h.TimeoutMs)
		}
	}
}

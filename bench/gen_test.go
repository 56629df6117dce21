package main

import (
	"math"
	"testing"
)

// The generated logs must have the shape the benchmark claims: twelve
// hops, an 8% tail of requests that fail after three attempts cut at 3 s,
// transient 503s that a retry recovers, and a fixed seed.
func TestGenerateShape(t *testing.T) {
	const n = 60_000
	hops := map[string]int{}
	traces, failedTraces, cut, fast := 0, 0, 0, 0
	maxAttempt := 0
	var first []genSpan
	got, err := generate(n, func(s *genSpan) error {
		if len(first) < 20 {
			first = append(first, *s)
		}
		hops[s.hop]++
		if s.parent == 0 {
			traces++
			if s.failed {
				failedTraces++
			}
		}
		if s.timeout {
			cut++
			if s.durNs < hopTimeoutNs || s.durNs > hopTimeoutNs+1_000_000 {
				t.Fatalf("cut attempt of %d ns, want just past the 3 s timeout", s.durNs)
			}
		}
		if s.code == 503 {
			fast++
		}
		maxAttempt = max(maxAttempt, s.attempt)
		return nil
	})
	if err != nil || got < n {
		t.Fatalf("generated %d spans (%v)", got, err)
	}
	if len(hops) != 12 {
		t.Errorf("%d hops, want 12 (gateway and eleven calls)", len(hops))
	}
	if share := float64(failedTraces) / float64(traces); math.Abs(share-tailShare) > 0.015 {
		t.Errorf("%.3f of requests failed, want about %.2f (the tail)", share, tailShare)
	}
	// Three cuts per failed request (1 + 2 retries), plus the rare
	// lognormal body past 3 s that a retry then gets through.
	if cut < 3*failedTraces || cut > 3*failedTraces+traces/100 {
		t.Errorf("%d cut attempts for %d failed requests of %d, want 3 each and a few jitter cuts", cut, failedTraces, traces)
	}
	if fast == 0 || maxAttempt != retries+1 {
		t.Errorf("%d transient failures, max attempt %d", fast, maxAttempt)
	}
	var second []genSpan
	generate(n, func(s *genSpan) error {
		if len(second) < 20 {
			second = append(second, *s)
		}
		return nil
	})
	for i := range first {
		if first[i] != second[i] {
			t.Fatal("generation is not deterministic for a given n")
		}
	}
}

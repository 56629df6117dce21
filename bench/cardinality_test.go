package main

import (
	"strings"
	"testing"
)

// The cardinality logs have the same spans at any hop count, and about
// the distinct hops asked for: ids of four shapes under four routes, plus
// the two bounded hops.
func TestGenerateCardinality(t *testing.T) {
	const n = 40_000
	for _, hops := range []int{400, 4000} {
		seen := map[string]bool{}
		routes := map[string]bool{}
		got, err := generateCardinality(n, hops, func(s *genSpan, route string) error {
			seen[s.hop] = true
			routes[route] = true
			return nil
		})
		if err != nil || got < n || got > n+6 {
			t.Fatalf("%d hops: generated %d spans (%v)", hops, got, err)
		}
		// Uniform draws: n·4/6 calls over hops names leave few unseen.
		if len(seen) < hops*9/10 || len(seen) > hops+2 {
			t.Errorf("%d distinct hops, want about %d", len(seen), hops)
		}
		if len(routes) != len(idRoutes)+2 {
			t.Errorf("routes %v", routes)
		}
		for h := range seen {
			if strings.Contains(h, "{id}") {
				t.Fatalf("hop %q carries the template, not an id", h)
			}
		}
	}
}

package recommend

import (
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/span/spantest"
)

// The policy does not list every id: the id-laden hops measured too
// rarely are left to its default and still get keep; the unbounded-hops
// warning says how many, and the policy still meets the target.
func TestUnboundedHopsLeftToTheDefault(t *testing.T) {
	cases := []struct {
		name   string
		shapes []int
		traces int
		hops   int
		sample int
	}{
		{"digits", []int{0}, 3000, 2000, 0},
		{"uuids", []int{1}, 3000, 2000, 0},
		{"hex", []int{2}, 3000, 2000, 0},
		{"tokens", []int{3}, 3000, 2000, 0},
		{"mixed, sampled", []int{0, 1, 2, 3, 4}, 6000, 5000, 5000},
		{"few hops each seen often", []int{0, 4}, 4000, 60, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spans := spantest.IDSpans(7, c.traces, c.hops, c.shapes)
			a := analyze.NewAccum(c.sample)
			for i := range spans {
				a.Add(&spans[i])
			}
			rep, p := FromAccum(a, analyze.Options{Names: angled})
			u := rep.UnboundedHops()
			if u == nil {
				t.Fatalf("no %s over %d hops", analyze.WarnUnboundedHops, len(rep.Hops))
			}
			var w *analyze.Warning
			for i := range rep.Warnings {
				if rep.Warnings[i].Code == analyze.WarnUnboundedHops {
					w = &rep.Warnings[i]
				}
			}
			if w == nil || *w != u.Warning(angled) || !strings.Contains(w.Message, "<HopBy>") {
				t.Fatalf("the report's %s warning %+v, want %+v", analyze.WarnUnboundedHops, w, u.Warning(angled))
			}
			listed := 0
			for _, h := range rep.Hops {
				if _, ok := rep.RecommendedPolicy.Hops[h.Hop]; ok && u.IDLaden(h.Hop) {
					listed++
				}
				_, inPolicy := p.Hops[h.Hop]
				if _, inDoc := rep.RecommendedPolicy.Hops[h.Hop]; inPolicy != inDoc {
					t.Errorf("%s: listed in the policy %v, in its report form %v", h.Hop, inPolicy, inDoc)
				}
				if u.IDLaden(h.Hop) && h.Attempts < analyze.MinSamplesRecommend && h.Recommendation.Action != analyze.ActionKeep {
					t.Errorf("%s: %d attempts, action %s", h.Hop, h.Attempts, h.Recommendation.Action)
				}
			}
			if u.Few > 0 && (u.Unlisted == 0 || listed > u.IDHops-u.Few) {
				t.Errorf("%d of %d id-laden hops listed in the policy (%d seen fewer than %d times, %d unlisted)", listed, u.IDHops, u.Few, analyze.MinSamplesP99, u.Unlisted)
			}
			if u.Unlisted > 0 && !strings.Contains(w.Message, "leaves") {
				t.Errorf("the warning does not say what the policy leaves to its default: %s", w.Message)
			}
			if !rep.RecommendationCheck.Met {
				t.Errorf("the policy with the rare id-laden hops left to its default misses the target: %+v", rep.RecommendationCheck)
			}
		})
	}
}

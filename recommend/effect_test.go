package recommend

import (
	"reflect"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
	"github.com/tailscope/tailscope/span/spantest"
)

// TestPredictedEffectReusesOnlyAnUnchangedReplay: the recommendation's
// column of the predicted effect is the engine's last replay when the
// policy did not change after it, and a fresh replay when it did (here a
// --max-budget cap); either way it equals replaying the final policy.
func TestPredictedEffectReusesOnlyAnUnchangedReplay(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	spans := spantest.Build(3,
		spantest.Scenario{Hop: "pay", Calls: 600, Timeout: 2 * s, Retries: 1, Backoff: 100 * ms, Attempt: spantest.Persistent(0.05, 3*s, 5*s), Mark: true},
		spantest.Scenario{Hop: "ship", Calls: 600, Timeout: 1 * s, Attempt: spantest.Persistent(0.02, 2*s, 3*s), Mark: true})
	for _, tc := range []struct {
		name   string
		opt    analyze.Options
		reused bool
	}{
		{"unchanged", analyze.Options{}, true},
		{"budget capped after the replay", analyze.Options{MaxBudget: 500 * ms}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := append([]span.Span(nil), spans...)
			reqs, probs := span.Assemble(sp)
			rec, _, last, _ := recommendPolicy(analyze.Measure(sp, reqs, probs, tc.opt), reqs, tc.opt)
			if got := last.of(rec) != nil; got != tc.reused {
				t.Errorf("the engine's last replay reusable: %v, want %v", got, tc.reused)
			}
			rep, repRec := Run(sp, reqs, probs, tc.opt)
			want := replay.Run(reqs, repRec, replay.Options{}).Summary()
			if got := rep.PredictedEffect[len(rep.PredictedEffect)-1]; got.Policy != "recommended" || !reflect.DeepEqual(got.Summary, want) {
				t.Errorf("predicted effect %+v, want a replay of the final policy %+v", got.Summary, want)
			}
		})
	}
}

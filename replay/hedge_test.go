package replay

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/span"
)

// TestHedgeRules pins the hedge model on single requests: a hedge is sent
// only while the try has not answered, drawn from the next logged attempt
// (the same wall beyond them), the first success wins, the hedges count as
// attempts, and what a cancelled attempt would have done later is undone.
func TestHedgeRules(t *testing.T) {
	s, msd := time.Second, time.Millisecond
	hedge := func(delay time.Duration, n int) policy.Hedge { return policy.Hedge{Delay: delay, Max: n} }
	tests := []struct {
		name     string
		req      *span.Request
		hop      policy.Hop
		ok       bool
		endMs    int64
		attempts int
		hedges   int
		cuts     int
	}{
		{"answered before the delay: no hedge",
			build(att{hop: "a", dur: 30}),
			policy.Hop{Timeout: s, Hedge: hedge(50*msd, 1)}, true, 30, 1, 0, 0},
		{"a slow attempt is hedged by the next logged one, which wins",
			build(att{hop: "a", dur: 900, err: true, attempt: 1}, att{hop: "a", start: 900, dur: 100, attempt: 2}),
			policy.Hop{Timeout: 2 * s, Hedge: hedge(50*msd, 1)}, true, 150, 2, 1, 0},
		{"same wall: the hedge is as slow, the first attempt still wins",
			build(att{hop: "a", dur: 900}),
			policy.Hop{Timeout: 2 * s, Hedge: hedge(50*msd, 1)}, true, 900, 2, 1, 0},
		{"the timeout that would cut the cancelled attempt later is no cut",
			build(att{hop: "a", dur: 900, err: true, attempt: 1}, att{hop: "a", start: 900, dur: 100, attempt: 2}),
			policy.Hop{Timeout: 200 * msd, Hedge: hedge(50*msd, 1)}, true, 150, 2, 1, 0},
		{"a fast failure before the delay: no hedge, the retry follows",
			build(att{hop: "a", dur: 20, err: true, attempt: 1}, att{hop: "a", start: 20, dur: 30, attempt: 2}),
			policy.Hop{Timeout: s, Retries: 1, Hedge: hedge(50*msd, 1)}, true, 50, 2, 0, 0},
		{"a retry is hedged too",
			build(att{hop: "a", dur: 20, err: true, attempt: 1}, att{hop: "a", start: 20, dur: 100, attempt: 2}),
			policy.Hop{Timeout: s, Retries: 1, Hedge: hedge(50*msd, 1)}, true, 120, 3, 1, 0},
		{"max 2: a second hedge one delay later",
			build(att{hop: "a", dur: 900, err: true, attempt: 1}, att{hop: "a", start: 900, dur: 800, err: true, attempt: 2},
				att{hop: "a", start: 1700, dur: 100, attempt: 3}),
			policy.Hop{Timeout: 2 * s, Hedge: hedge(50*msd, 2)}, true, 200, 3, 2, 0},
		{"every attempt fails: the try fails when the last one does",
			build(att{hop: "a", dur: 900, err: true}),
			policy.Hop{Timeout: 2 * s, Hedge: hedge(50*msd, 1)}, false, 950, 2, 1, 0},
		{"hedges cut by their own timeout, all of them: one cut each",
			build(att{hop: "a", dur: 900}),
			policy.Hop{Timeout: 300 * msd, Hedge: hedge(100*msd, 1)}, false, 400, 2, 1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := Run([]*span.Request{tc.req}, pol(0, tc.hop), Options{})
			o := res.Outcomes[0]
			if o.OK != tc.ok || o.End != tc.endMs*ms || o.Attempts != tc.attempts || o.Hedges != tc.hedges || len(o.Cuts) != tc.cuts {
				t.Errorf("ok %v end %dms attempts %d hedges %d cuts %d; want %v %dms %d %d %d",
					o.OK, o.End/ms, o.Attempts, o.Hedges, len(o.Cuts), tc.ok, tc.endMs, tc.attempts, tc.hedges, tc.cuts)
			}
			if res.Hedges != tc.hedges || res.HedgesByHop["a"] != tc.hedges {
				t.Errorf("result hedges %d by hop %v, want %d", res.Hedges, res.HedgesByHop, tc.hedges)
			}
			sum := res.Summary()
			if (sum.Hedges != nil) != (tc.hedges > 0) {
				t.Errorf("summary hedges %+v, want %d fired", sum.Hedges, tc.hedges)
			}
		})
	}
}

// TestHedgeIndependent: on a hop whose slow attempts are independent
// draws, a hedge at about the p95 of its latency, replayed with the
// independent model, cuts the request p99 to about the delay plus a
// typical attempt, for about 5% more attempts; without the hedge the
// replay is the logged one.
func TestHedgeIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var reqs []*span.Request
	var spans []span.Span
	for i := range 2000 {
		d := 20 + rng.Int64N(20)
		if rng.Float64() < 0.04 {
			d = 400 + rng.Int64N(400) // slow, independently of anything else
		}
		spans = append(spans, span.Span{TraceID: fmt.Sprint("t", i), SpanID: "1", Hop: "a", Start: 1e12, Duration: d * ms, Status: span.OK})
	}
	reqs, _ = span.Assemble(spans)
	plain := pol(0, policy.Hop{Timeout: time.Second})
	hedged := pol(0, policy.Hop{Timeout: time.Second, Hedge: policy.Hedge{Delay: 60 * time.Millisecond, Max: 1}})
	base := Run(reqs, plain, Options{RetryModel: ModelIndependent})
	obs := Observed(reqs)
	if base.P99 != obs.P99 || base.Hedges != 0 {
		t.Fatalf("no hedge: p99 %v, logged %v, hedges %d", base.P99, obs.P99, base.Hedges)
	}
	h := Run(reqs, hedged, Options{RetryModel: ModelIndependent})
	load := float64(h.Hedges) / float64(len(reqs))
	t.Logf("p99 %.0fms → %.0fms, hedges %d (%.1f%% extra attempts)", base.P99/1e6, h.P99/1e6, h.Hedges, 100*load)
	if h.P99 > 150*float64(ms) || h.P99 >= base.P99/2 {
		t.Errorf("hedged p99 %.0fms, unhedged %.0fms: want the tail cut", h.P99/1e6, base.P99/1e6)
	}
	if load < 0.02 || load > 0.08 {
		t.Errorf("extra load %.3f, want about the 4%% slow share", load)
	}
	if h.Succeeded != len(reqs) {
		t.Errorf("%d of %d succeeded", h.Succeeded, len(reqs))
	}
}

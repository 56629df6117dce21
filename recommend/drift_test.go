package recommend

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
)

// rampLogs is 90 minutes of requests (perMinute a minute) through one call
// "db", lognormal around 200 ms, times scale(minute).
func rampLogs(seed uint64, perMinute int, sigma float64, scale func(int) float64) []span.Span {
	r := rand.New(rand.NewPCG(seed, 11))
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	var out []span.Span
	for m := 0; m < 90; m++ {
		for i := 0; i < perMinute; i++ {
			id := fmt.Sprintf("t%d-%d", m, i)
			start := t0 + int64(m)*int64(time.Minute) + int64(i)*int64(time.Minute)/int64(perMinute)
			d := int64(float64(200*time.Millisecond) * math.Exp(sigma*r.NormFloat64()) * scale(m))
			out = append(out,
				span.Span{TraceID: id, SpanID: "r", Service: "api", Name: "GET /", Hop: "api GET /", Kind: "server", Start: start, Duration: d + int64(time.Millisecond)},
				span.Span{TraceID: id, SpanID: "c", ParentID: "r", Service: "api", Name: "db", Hop: "db", Kind: "client", Start: start, Duration: d})
		}
	}
	return out
}

// A tail that rises through the last third: the held-out replay (fitted on
// the first two thirds) sees drift cut requests, and the policy carries a
// scale that brings drift within the target; the basis and the held-out
// line say so, and the budget stays within 3× the slowest request.
func TestHeldOutScalesForDrift(t *testing.T) {
	spans := rampLogs(3, 30, 0.1, func(m int) float64 {
		if m < 60 {
			return 1
		}
		return 1 + 0.45*float64(m-60)/30
	})
	reqs, probs := span.Assemble(spans)
	rep, p := Run(spans, reqs, probs, analyze.Options{})
	h := rep.RecommendedPolicy.Safety.HeldOut
	if h == nil {
		t.Fatal("no held-out replay")
	}
	if h.UnscaledLost == 0 {
		t.Fatalf("held out %+v: the fit on the flat part should cut the ramp", h)
	}
	if h.Scale <= 1 || !h.Met {
		t.Errorf("held out %+v: want a scale > 1 that brings drift within the target", h)
	}
	var db *analyze.Hop
	for i := range rep.Hops {
		if rep.Hops[i].Hop == "db" {
			db = &rep.Hops[i]
		}
	}
	if db == nil || !strings.Contains(db.Recommendation.Basis, "every timeout ×") {
		t.Errorf("db basis does not say the held-out scale: %q", db.Recommendation.Basis)
	}
	var slowest int64
	for _, r := range reqs {
		slowest = max(slowest, r.Latency())
	}
	if p.Budget > RoundUpNice(time.Duration(3*slowest)) || p.Budget <= p.Hops["db"].Timeout {
		t.Errorf("budget %s: want above db's %s and within 3× the slowest request %s", p.Budget, p.Hops["db"].Timeout, time.Duration(slowest))
	}
	// What the policy says is what a replay of the logs finds.
	if res := replay.Run(reqs, p, replay.Options{}); res.Succeeded < len(reqs)-1 {
		t.Errorf("the policy fails %d of its own %d requests", len(reqs)-res.Succeeded, len(reqs))
	}
}

// Logs of one distribution, cut in blocks: no headroom beyond the margin,
// no incident, no scale.
func TestNoDriftNoHeadroom(t *testing.T) {
	spans := rampLogs(5, 30, 0.4, func(int) float64 { return 1 })
	reqs, probs := span.Assemble(spans)
	rep, _ := Run(spans, reqs, probs, analyze.Options{})
	if len(rep.Incidents) != 0 {
		t.Errorf("incidents on stationary logs: %+v", rep.Incidents)
	}
	if h := rep.RecommendedPolicy.Safety.HeldOut; h == nil || h.Scale != 1 {
		t.Errorf("held out %+v: want no scale", h)
	}
	for _, hp := range rep.Hops {
		if strings.Contains(hp.Recommendation.Basis, "drift:") && strings.Contains(hp.Recommendation.Basis, "→") &&
			hp.Recommendation.Headroom > 1.1 {
			t.Errorf("%s: headroom %g on stationary logs: %s", hp.Hop, hp.Recommendation.Headroom, hp.Recommendation.Basis)
		}
	}
}

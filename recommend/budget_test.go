package recommend

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/span"
)

func TestInFlight(t *testing.T) {
	mean, peak := inFlight([][2]int64{{0, 10}, {5, 15}, {10, 20}})
	if mean != 1.5 || peak != 2 {
		t.Errorf("mean %v peak %d, want 1.5 and 2 (an end and a start at one time do not overlap)", mean, peak)
	}
	if mean, peak := inFlight(nil); mean != 0 || peak != 0 {
		t.Errorf("empty: %v %d", mean, peak)
	}
}

// TestRecommendRetryBudgets: a hop that retries gets a budget from its
// logged retry rate and its in-flight attempts (calls every 10 ms taking
// 50 ms: about 5 in flight); a hop without retries gets none; the budget
// is in recommended_policy.hops[h].retry_budget.
func TestRecommendRetryBudgets(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	var spans []span.Span
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	for i := range 2000 {
		trace := fmt.Sprintf("busy-%05d", i)
		start := t0 + int64(i)*int64(10*time.Millisecond)
		d := int64(45+r.IntN(10)) * int64(time.Millisecond)
		if r.Float64() < 0.05 {
			spans = append(spans, span.Span{TraceID: trace, SpanID: trace + "-1", Hop: "busy", Start: start, Duration: 5e6, Status: span.Error, Code: 503, Attempt: 1, Weight: 1})
			start += 6e6
			spans = append(spans, span.Span{TraceID: trace, SpanID: trace + "-2", Hop: "busy", Start: start, Duration: d, Status: span.OK, Attempt: 2, Weight: 1})
		} else {
			spans = append(spans, span.Span{TraceID: trace, SpanID: trace + "-1", Hop: "busy", Start: start, Duration: d, Status: span.OK, Attempt: 1, Weight: 1})
		}
		spans = append(spans, span.Span{TraceID: trace, SpanID: trace + "-w", Hop: "steady", Start: start + d, Duration: 20e6, Status: span.OK, Attempt: 1, Weight: 1})
	}
	rep, p := analyse(spans, analyze.Options{})
	if p.For("busy").Retries == 0 {
		t.Fatalf("busy: no retries: %s", hopOf(rep, "busy").Recommendation.Basis)
	}
	rb, ok := p.RetryBudgets["busy"]
	if !ok {
		t.Fatal("busy: no retry budget")
	}
	t.Logf("busy: %+v", rb)
	if rb.InFlightMean < 4 || rb.InFlightMean > 7 || rb.InFlightPeak < 5 || rb.InFlightPeak > 9 {
		t.Errorf("in flight %v (peak %d), want about 5", rb.InFlightMean, rb.InFlightPeak)
	}
	if rb.RetryRate < 0.03 || rb.RetryRate > 0.08 || rb.Percent != math.Ceil(200*rb.RetryRate) || rb.MinConcurrency != 1 {
		t.Errorf("retry rate %v → budget %v%% min %d, want ~0.05 → twice that, min ⌈5 × share⌉ = 1", rb.RetryRate, rb.Percent, rb.MinConcurrency)
	}
	if rb.TokenRatio < 0.1 || rb.TokenRatio > 0.25 || rb.MaxTokens < 10 {
		t.Errorf("throttling %d/%v, want tokenRatio three times ~5%% failures", rb.MaxTokens, rb.TokenRatio)
	}
	if _, ok := p.RetryBudgets["steady"]; ok {
		t.Error("steady: a budget on a hop without retries")
	}
	doc := rep.RecommendedPolicy.Hops["busy"].RetryBudget
	if doc == nil || doc.Envoy.BudgetPercent != rb.Percent || doc.GRPC.MaxTokens != rb.MaxTokens || doc.Observed.InFlightPeak != rb.InFlightPeak {
		t.Errorf("recommended_policy.hops.busy.retry_budget = %+v", doc)
	}
	// Linkerd: the same share, and a floor above the logged retry rate.
	if doc.Linkerd.RetryRatio != rb.Percent/100 || doc.Linkerd.TTL != "10s" || rb.RetriesPerSecond <= 0 ||
		float64(doc.Linkerd.MinRetriesPerSecond) < 2*rb.RetriesPerSecond || doc.Observed.RetriesPerSecond != rb.RetriesPerSecond {
		t.Errorf("linkerd budget %+v from %g retries/s", doc.Linkerd, rb.RetriesPerSecond)
	}
	if rep.RecommendedPolicy.Hops["steady"].RetryBudget != nil {
		t.Error("steady: retry_budget in the JSON")
	}
}

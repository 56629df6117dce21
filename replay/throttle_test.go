package replay

import (
	"fmt"
	"testing"
	"time"

	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/span"
)

// TestThrottleStorm: requests every 10 ms call db; for 500 requests every
// attempt of db fails (a storm: 3 logged attempts, all 503). Under 2
// retries, the storm costs 3 attempts a request; with a retry budget
// (gRPC retryThrottling: 10 tokens, 0.1 per success) retries stop after
// 5 failures and the storm costs about 1 attempt a request. Outside the
// storm, and without a budget, nothing changes.
func TestThrottleStorm(t *testing.T) {
	var spans []span.Span
	t0 := int64(1e18)
	for i := range 3000 {
		tr := fmt.Sprintf("r%05d", i)
		start := t0 + int64(i)*int64(10*time.Millisecond)
		if i >= 1000 && i < 1500 {
			for k := 1; k <= 3; k++ {
				spans = append(spans, span.Span{TraceID: tr, SpanID: fmt.Sprint(tr, k), Hop: "db", Start: start + int64(k-1)*6e6, Duration: 5e6,
					Status: span.Error, Code: 503, Attempt: k})
			}
			continue
		}
		spans = append(spans, span.Span{TraceID: tr, SpanID: tr + "1", Hop: "db", Start: start, Duration: 20e6, Status: span.OK, Attempt: 1})
	}
	reqs, _ := span.Assemble(spans)
	p := pol(0, policy.Hop{Timeout: time.Second, Retries: 2})
	budget := map[string]policy.RetryBudget{"db": {MaxTokens: 10, TokenRatio: 0.1}}
	free := Run(reqs, p, Options{})
	capped := Run(reqs, p, Options{Throttle: budget})
	storm := func(res *Result) (attempts float64) {
		n := 0
		for _, o := range res.Outcomes {
			var i int
			fmt.Sscanf(o.TraceID, "r%d", &i)
			if i >= 1000 && i < 1500 {
				attempts += float64(o.Attempts)
				n++
			}
		}
		return attempts / float64(n)
	}
	a, b := storm(free), storm(capped)
	t.Logf("storm: %.2f attempts per request without the budget, %.2f with; all requests %.3f → %.3f",
		a, b, float64(free.AttemptsByHop["db"])/3000, float64(capped.AttemptsByHop["db"])/3000)
	if a != 3 || b > 1.05 {
		t.Errorf("storm attempts per request %.2f → %.2f, want 3 → about 1", a, b)
	}
	if free.Succeeded != capped.Succeeded || free.Succeeded != 2500 {
		t.Errorf("succeeded %d without, %d with the budget; want 2500 both", free.Succeeded, capped.Succeeded)
	}
	for i, o := range capped.Outcomes {
		if o.TraceID != reqs[i].TraceID {
			t.Fatalf("outcome %d is %s, request %s: outcomes out of order", i, o.TraceID, reqs[i].TraceID)
		}
	}
	// A budget on another hop changes nothing.
	other := Run(reqs, p, Options{Throttle: map[string]policy.RetryBudget{"x": {MaxTokens: 10, TokenRatio: 0.1}}})
	if other.AttemptsByHop["db"] != free.AttemptsByHop["db"] || other.P99 != free.P99 {
		t.Errorf("a budget on another hop changed db: %d vs %d attempts", other.AttemptsByHop["db"], free.AttemptsByHop["db"])
	}
}

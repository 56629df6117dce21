package recommend

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/span"
)

// TestPredictionDeterministic: the same logs give the same report, run
// after run. The risk bound's calls per request were once a float sum in
// a map's order, whose last bits changed from run to run, so that a
// per-request figure on the exact midpoint of its rounding (here
// 189 calls over 20 requests: 9.45) printed as 9.4 or 9.5 at random.
func TestPredictionDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC).UnixNano()
	// 20 requests; hop j is called once by the first calls[j] of them,
	// 189 calls in all, so that each hop's share of a request (c/20) is
	// inexact in binary and their sum depends on its order.
	calls := []int{17, 13, 11, 19, 7, 3, 9, 18, 14, 16, 12, 19, 19, 12}
	counts := make([][]int, 20)
	for i := range counts {
		counts[i] = make([]int, len(calls))
		for j, c := range calls {
			if i < c {
				counts[i][j] = 1
			}
		}
	}
	var spans []span.Span
	for i, row := range counts {
		trace := fmt.Sprintf("t%03d", i)
		start := base + int64(i)*int64(time.Second)
		at := start + int64(time.Millisecond)
		n := 0
		for j, c := range row {
			for range c {
				n++
				d := int64((1 + r.Float64()*9) * 1e6)
				spans = append(spans, span.Span{TraceID: trace, SpanID: fmt.Sprintf("%s-%d", trace, n), ParentID: trace + "-0",
					Service: "gateway", Name: fmt.Sprintf("call-%02d", j), Hop: fmt.Sprintf("call-%02d", j), Kind: "client", Start: at, Duration: d, Weight: 1})
				at += d
			}
		}
		spans = append(spans, span.Span{TraceID: trace, SpanID: trace + "-0", Service: "gateway", Name: "GET /", Hop: "gateway GET /",
			Kind: "server", Start: start, Duration: at + int64(time.Millisecond) - start, Weight: 1})
	}
	var first string
	for run := range 30 {
		reqs, probs := span.Assemble(spans)
		rep, _ := Run(spans, reqs, probs, analyze.Options{})
		p := rep.RecommendedPolicy.Safety.Predicted
		got := fmt.Sprintf("%s | need %d | upper %g", p.Basis, p.NeedSuccesses, p.Upper)
		if run == 0 {
			first = got
			if !strings.Contains(got, "20 successful requests") || !strings.Contains(got, "~9.4 per request") {
				t.Fatalf("basis %q: want the 20 requests counted, ~9.4 calls each (189/20 rounded as a float64)", got)
			}
			continue
		}
		if got != first {
			t.Fatalf("run %d differs:\n%s\nfirst:\n%s", run, got, first)
		}
	}
}

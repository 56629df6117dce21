package analyze

import (
	"github.com/tailscope/tailscope/internal/units"

	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
)

// With integer weights the weighted quantile is the unweighted one of the
// sample with each value repeated as many times as its weight; with all
// weights 1 it is the unweighted quantile.
func TestWeightedQuantileIsTheExpandedSample(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := range 200 {
		n := 1 + r.IntN(40)
		var xs []weighted
		var expanded []int64
		ones := trial%4 == 0
		for range n {
			v := int64(r.IntN(1000)) * int64(time.Millisecond)
			w := 1 + r.IntN(5)
			if ones {
				w = 1
			}
			xs = append(xs, weighted{v, float64(w)})
			for range w {
				expanded = append(expanded, v)
			}
		}
		quantile.SortInt64(expanded)
		l := weightedLatency(xs)
		for _, c := range []struct {
			got *float64
			q   float64
		}{{l.P50, 0.5}, {l.P90, 0.9}, {l.P95, 0.95}, {l.P99, 0.99}, {l.P999, 0.999}, {l.Max, 1}} {
			want := quantile.Int64(expanded, c.q) / 1e6
			if c.got == nil || math.Abs(*c.got-want) > 1e-6 {
				t.Fatalf("trial %d, q %v: got %v, want %v (n %d)", trial, c.q, deref(c.got), want, n)
			}
		}
	}
}

// The case that shows weights matter: 100 slow spans of weight 10 and 500 fast ones of
// weight 1 give the slow value as p50, per hop and per request (each span
// is a request of its own), and the success rate is weighted too.
func TestWeightedSlowSpansMakeTheMedian(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	var spans []span.Span
	r := rand.New(rand.NewPCG(13, 14))
	for i := range 600 {
		// Fast spans at 5–15 ms, one in five of them failed; slow ones
		// at 800 ms, all succeeded.
		s := span.Span{TraceID: fmt.Sprintf("t%04d", i), SpanID: "s", Hop: "pay", Start: t0 + int64(i)*int64(time.Millisecond),
			Duration: int64(5*time.Millisecond) + r.Int64N(int64(10*time.Millisecond)), Status: span.OK, Weight: 1}
		if i%6 == 0 { // 100 of them
			s.Duration, s.Weight = int64(800*time.Millisecond), 10
		} else if i%5 == 1 {
			s.Status = span.Error
		}
		spans = append(spans, s)
	}
	failed := 0
	for _, s := range spans {
		if s.Failed() {
			failed++
		}
	}
	rep := analyse(spans, Options{})
	h := hopOf(rep, "pay")
	if h == nil || !h.Weighted || h.LatencyMs.P50 == nil || *h.LatencyMs.P50 != 800 {
		t.Fatalf("hop p50 %v (weighted %v), want the slow 800ms", deref(h.LatencyMs.P50), h.Weighted)
	}
	rq := rep.Requests
	if !rq.Weighted || rq.LatencyMs.P50 == nil || *rq.LatencyMs.P50 != 800 {
		t.Errorf("request p50 %v (weighted %v), want 800ms", rq.LatencyMs.P50, rq.Weighted)
	}
	// The failed fast requests weigh 1 each in 1500.
	want := units.Round(float64(1500-failed)/1500, 4)
	if rq.SuccessRate != want || rq.Succeeded != 600-failed || h.Attempts != 600 {
		t.Errorf("success rate %v (succeeded %d, attempts %d), want %v with the counts as logged", rq.SuccessRate, rq.Succeeded, h.Attempts, want)
	}
	found := false
	for _, w := range rep.Warnings {
		if w.Code == WarnWeighted {
			found = strings.Contains(w.Message, "1 to 10")
		}
		if w.Code == WarnUnweighted {
			t.Errorf("weighted spans also warned as unweighted: %s", w.Message)
		}
	}
	if !found {
		t.Errorf("no weighted warning naming the weights: %+v", rep.Warnings)
	}
	// The same spans without weights: the fast value.
	for i := range spans {
		spans[i].Weight = 1
	}
	if p := hopOf(analyse(spans, Options{}), "pay").LatencyMs.P50; *p > 15 {
		t.Errorf("unweighted p50 %v, want a fast one", *p)
	}
}

// A tracing system's spans (they carry kinds) without any weight get the
// unweighted-sample warning; a flat log without kinds does not.
func TestUnweightedSampleWarning(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	for _, kind := range []string{"server", ""} {
		var spans []span.Span
		for i := range 50 {
			spans = append(spans, span.Span{TraceID: fmt.Sprintf("t%d", i), SpanID: "s", Hop: "h", Kind: kind, Start: t0, Duration: int64(time.Millisecond), Weight: 1})
		}
		warned := false
		for _, w := range analyse(spans, Options{}).Warnings {
			warned = warned || w.Code == WarnUnweighted
		}
		if warned != (kind != "") {
			t.Errorf("kind %q: unweighted-sample warning %v", kind, warned)
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

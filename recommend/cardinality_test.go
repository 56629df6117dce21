package recommend

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/span"
)

// The logs below are the cardinality tests' (analyze/cardinality_test.go):
// hop names that carry ids, which the analysis finds unbounded.

// idShapes are span-name shapes that carry an id, as instrumentation that
// names spans by URL path (or by message key) writes them.
var idShapes = []struct {
	route string
	name  func(r *rand.Rand, k int) string
}{
	{"/users/{id}", func(_ *rand.Rand, k int) string { return fmt.Sprintf("GET /users/%d", 100000+k) }},
	{"/orders/{id}", func(r *rand.Rand, k int) string {
		return fmt.Sprintf("GET /orders/%08x-%04x-4%03x-a%03x-%012x", r.Uint32(), k&0xffff, r.IntN(4096), r.IntN(4096), r.Uint64()>>16)
	}},
	{"/blobs/{id}/meta", func(r *rand.Rand, k int) string {
		return fmt.Sprintf("GET /blobs/%012x%012x/meta", r.Uint64()>>16, uint64(k))
	}},
	{"/sessions/{id}", func(r *rand.Rand, k int) string {
		// Base62: digits anywhere (two placed, so that it alternates).
		const a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
		b := make([]byte, 22)
		for i := range b {
			b[i] = a[r.IntN(len(a))]
		}
		b[3], b[4], b[9], b[10] = byte('0'+k%10), 'x', byte('0'+r.IntN(10)), 'Q'
		return "POST /sessions/" + string(b)
	}},
	{"/carts/{id}/items", func(_ *rand.Rand, k int) string { return fmt.Sprintf("PUT /carts/cart_%d/items", 7000+k) }},
}

// idSpans generates flat traces (a root and calls under it) whose call
// hops carry ids of the given shapes: hops distinct names in all, each
// call span with its route in http.route.
func idSpans(seed uint64, traces, hops int, shapes []int) []span.Span {
	r := rand.New(rand.NewPCG(seed, 18))
	names := make([][]string, len(shapes))
	for i, s := range shapes {
		for k := range max(1, hops/len(shapes)) {
			names[i] = append(names[i], idShapes[s].name(r, k))
		}
	}
	var out []span.Span
	t0 := int64(1_767_225_600) * 1e9
	for tr := range traces {
		id := fmt.Sprintf("t%07d", tr)
		at := t0 + int64(tr)*1e6
		root := span.Span{TraceID: id, SpanID: id + "r", Service: "gateway", Name: "gateway", Hop: "gateway", Kind: "server", Start: at, Weight: 1}
		start := at
		for i, s := range shapes {
			n := names[i][r.IntN(len(names[i]))]
			d := int64((5 + r.ExpFloat64()*20) * 1e6)
			sp := span.Span{TraceID: id, SpanID: fmt.Sprintf("%s%d", id, i), ParentID: id + "r", Service: strings.Trim(idShapes[s].route[:strings.Index(idShapes[s].route[1:], "/")+1], "/"),
				Name: n, Hop: n, Kind: "client", Start: start, Duration: d, Weight: 1,
				Attrs: []span.Attr{{Key: "http.route", Value: idShapes[s].route}}}
			if r.IntN(100) == 0 {
				sp.Status = span.Error
			}
			out = append(out, sp)
			start += d
		}
		root.Duration = start - at + 1e5
		out = append(out, root)
	}
	return out
}

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
			spans := idSpans(7, c.traces, c.hops, c.shapes)
			a := analyze.NewAccum(c.sample)
			for i := range spans {
				a.Add(&spans[i])
			}
			rep, p := FromAccum(a, analyze.Options{})
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
			if w == nil || *w != u.Warning() {
				t.Fatalf("the report's %s warning %+v, want %+v", analyze.WarnUnboundedHops, w, u.Warning())
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

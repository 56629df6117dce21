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

// The logs below are the attribution tests' (analyze/attribution_test.go,
// analyze/tail_test.go): the eject advice is recommended on the same logs
// the attribution names the instance in.

// fleet generates calls to one hop served by five pods in two zones: every
// attempt is lognormal around 120 ms, slowed by slow(pod, r) and failing
// fast (503) when fail(pod, r); each span carries its pod, its zone, the
// version (the same everywhere), a request id (one value per span: high
// cardinality) and a 300-byte value (too long to count). A second hop,
// "auth", is healthy and carries the same attributes.
func fleet(seed uint64, calls int, slow func(pod int, r *rand.Rand) time.Duration, fail func(pod int, r *rand.Rand) bool) []span.Span {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	long := strings.Repeat("x", 300)
	var out []span.Span
	for i := range calls {
		trace := fmt.Sprintf("%016x", seed*1_000_003+uint64(i))
		for _, hop := range []string{"cart", "auth"} {
			pod := r.IntN(5)
			d := lognormal(r, 120*time.Millisecond, 0.3)
			failed := false
			if hop == "cart" {
				d += slow(pod, r)
				failed = fail(pod, r)
			}
			s := span.Span{TraceID: trace, SpanID: trace + hop, Service: "gw", Name: hop, Hop: hop, Kind: "client",
				Start: t0 + int64(i)*int64(time.Second), Duration: int64(d), Status: span.OK, Weight: 1,
				Attrs: []span.Attr{
					{Key: "k8s.pod.name", Value: fmt.Sprintf("%s-%d", hop, pod)},
					{Key: "cloud.availability_zone", Value: fmt.Sprintf("z%d", pod%2)},
					{Key: "service.version", Value: "1.4.2"},
					{Key: "request.id", Value: fmt.Sprintf("req-%d", i)},
					{Key: "blob", Value: long},
				}}
			if failed {
				s.Status, s.Code, s.Duration = span.Error, 503, int64(uniform(r, 2*time.Millisecond, 20*time.Millisecond))
				s.Attrs = append(s.Attrs, span.Attr{Key: "http.response.status_code", Value: "503"})
			}
			out = append(out, s)
		}
	}
	return out
}

func never(int, *rand.Rand) bool { return false }

// badPod: pod 3 is slow (+400–900 ms) on 20% of its attempts.
func badPod(pod int, r *rand.Rand) time.Duration {
	if pod == 3 && r.Float64() < 0.2 {
		return uniform(r, 400*time.Millisecond, 900*time.Millisecond)
	}
	return 0
}

// traceGen writes traces of a gateway fanning out to services: a server
// root "gw GET /", and under it, per callee, a client span "gw → NAME" in
// the gateway with the callee's server span "NAME handle" inside it. The
// client span lasts the server's time plus the gap between them.
type traceGen struct {
	spans []span.Span
	t0    int64
}

// callee is one call a request makes: the server's time, the gap, and
// whether it fails.
type callee struct {
	name        string
	server, gap time.Duration
	failed      bool
}

// add writes one request. parallel: the calls run side by side (fan-out);
// otherwise one after the other.
func (g *traceGen) add(trace string, parallel bool, calls []callee) {
	root := span.Span{TraceID: trace, SpanID: trace + "-r", Service: "gw", Name: "GET /", Kind: "server", Hop: "gw GET /", Start: g.t0, Weight: 1}
	at := g.t0 + int64(time.Millisecond)
	end := at
	failed := false
	for i, c := range calls {
		id := fmt.Sprintf("%s-%d", trace, i)
		cd := int64(c.server + c.gap)
		cl := span.Span{TraceID: trace, SpanID: id + "c", ParentID: root.SpanID, Service: "gw", Name: "→ " + c.name, Kind: "client",
			Hop: "gw → " + c.name, Start: at, Duration: cd, Weight: 1}
		sv := span.Span{TraceID: trace, SpanID: id + "s", ParentID: cl.SpanID, Service: c.name, Name: "handle", Kind: "server",
			Hop: c.name + " handle", Start: at + int64(c.gap)/2, Duration: int64(c.server), Weight: 1}
		if c.failed {
			cl.Status, sv.Status, failed = span.Error, span.Error, true
		}
		g.spans = append(g.spans, cl, sv)
		end = max(end, at+cd)
		if !parallel {
			at += cd
		}
	}
	root.Duration = end - g.t0 + int64(time.Millisecond)
	if failed {
		root.Status = span.Error
	}
	g.spans = append(g.spans, root)
	g.t0 += int64(2 * time.Second)
}

func rms(r *rand.Rand, lo, hi int) time.Duration {
	return time.Duration(lo+r.IntN(hi-lo+1)) * time.Millisecond
}

// One slow pod among five: the recommendation says eject, with the pod
// and its lift, in the basis, the policy's ejections and its comment, and
// keeps the numeric timeout and retries of the same logs without
// attributes (eject is advice on top, never a lower timeout).
func TestEjectBadInstance(t *testing.T) {
	spans := fleet(1, 4000, badPod, never)
	rep, p := analyse(spans, analyze.Options{})
	h := hopOf(rep, "cart")
	if len(h.Attribution) == 0 {
		t.Fatal("the slow pod is not named")
	}
	a := h.Attribution[0]
	e := h.Recommendation.Eject
	if e == nil || e.Key != "k8s.pod.name" || e.Value != "cart-3" || e.Lift != a.Lift {
		t.Fatalf("recommendation.eject = %+v", e)
	}
	if !strings.Contains(h.Recommendation.Basis, "eject k8s.pod.name=cart-3") || !strings.Contains(h.Recommendation.Basis, "neither retries nor a longer timeout") {
		t.Errorf("basis: %s", h.Recommendation.Basis)
	}
	if ej, ok := p.Ejections["cart"]; !ok || ej.Value != "cart-3" || ej.Instances != 5 {
		t.Errorf("policy ejections %+v", p.Ejections)
	}
	if !strings.Contains(p.Comments["cart"], "eject k8s.pod.name=cart-3") {
		t.Errorf("policy comment %q", p.Comments["cart"])
	}
	if g := hopOf(rep, "auth"); g.Recommendation.Eject != nil {
		t.Errorf("the healthy hop is ejected from: %+v", g.Recommendation.Eject)
	}
	plain := append([]span.Span(nil), spans...)
	for i := range plain {
		plain[i].Attrs = nil
	}
	prep, _ := analyse(plain, analyze.Options{})
	ph := hopOf(prep, "cart")
	if ph.Recommendation.TimeoutMs != h.Recommendation.TimeoutMs || ph.Recommendation.Retries != h.Recommendation.Retries {
		t.Errorf("eject changed the numbers: %+v vs %+v", h.Recommendation, ph.Recommendation)
	}
	if ph.Attribution != nil || ph.Recommendation.Eject != nil {
		t.Errorf("without attributes: %+v", ph.Attribution)
	}
}

// A callee-side hop whose slow attempts concentrate on one pod passes the
// eject advice to the calls into it (their spans name no pod), through
// the client/server pairs; the policy records it for that hop.
func TestEjectReachesCaller(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	g := &traceGen{t0: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()}
	pods := map[string]int{}
	for i := range 2000 {
		trace := fmt.Sprintf("t%05d", i)
		pod := r.IntN(5)
		c := callee{name: "cart", server: rms(r, 20, 60), gap: rms(r, 1, 3)}
		if pod == 2 && r.IntN(5) == 0 {
			c.server += rms(r, 400, 800)
		}
		pods[trace] = pod
		g.add(trace, false, []callee{c})
	}
	for i := range g.spans {
		if s := &g.spans[i]; s.Hop == "cart handle" {
			s.Attrs = []span.Attr{{Key: "service.instance.id", Value: fmt.Sprintf("cart-%d", pods[s.TraceID])}}
		}
	}
	rep, p := analyse(g.spans, analyze.Options{})
	callee, caller := hopOf(rep, "cart handle"), hopOf(rep, "gw → cart")
	if e := callee.Recommendation.Eject; e == nil || e.Value != "cart-2" || e.From != "" {
		t.Fatalf("callee eject %+v (attribution %+v)", e, callee.Attribution)
	}
	e := caller.Recommendation.Eject
	if e == nil || e.Value != "cart-2" || e.From != "cart handle" || !strings.Contains(caller.Recommendation.Basis, "its callee cart handle") {
		t.Fatalf("caller eject %+v: %s", e, caller.Recommendation.Basis)
	}
	if ej, ok := p.Ejections["gw → cart"]; !ok || ej.Value != "cart-2" {
		t.Errorf("policy ejections %+v", p.Ejections)
	}
}

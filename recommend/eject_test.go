package recommend

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/span"
	"github.com/tailscope/tailscope/span/spantest"
)

// One slow pod among five: the recommendation says eject, with the pod
// and its lift, in the basis, the policy's ejections and its comment, and
// keeps the numeric timeout and retries of the same logs without
// attributes (eject is advice on top, never a lower timeout).
func TestEjectBadInstance(t *testing.T) {
	spans := spantest.Fleet(1, 4000, spantest.BadPod, spantest.Never)
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
	g := &spantest.TraceGen{T0: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()}
	pods := map[string]int{}
	for i := range 2000 {
		trace := fmt.Sprintf("t%05d", i)
		pod := r.IntN(5)
		c := spantest.Callee{Name: "cart", Server: spantest.RMS(r, 20, 60), Gap: spantest.RMS(r, 1, 3)}
		if pod == 2 && r.IntN(5) == 0 {
			c.Server += spantest.RMS(r, 400, 800)
		}
		pods[trace] = pod
		g.Add(trace, false, []spantest.Callee{c})
	}
	for i := range g.Spans {
		if s := &g.Spans[i]; s.Hop == "cart handle" {
			s.Attrs = []span.Attr{{Key: "service.instance.id", Value: fmt.Sprintf("cart-%d", pods[s.TraceID])}}
		}
	}
	rep, p := analyse(g.Spans, analyze.Options{})
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

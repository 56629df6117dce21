package check

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/recommend"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
)

// TestHedgeLints: on the seed sample recorded under A (every hop
// ran-to-timeout), a hedge is an error on each hop it is set on; a hedge
// delay not below the timeout is a warning; a policy without hedges has
// neither.
func TestHedgeLints(t *testing.T) {
	pa := loadPolicy(t, filepath.Join(seedDir, "A.yaml"))
	l := analyse(readSpans(t, filepath.Join(seedDir, "recorded-under-A.jsonl")), pa)
	none(t, Lint(l.rep, l.reqs, pa), CodeHedgeOnPersistent)
	none(t, Lint(l.rep, l.reqs, pa), CodeHedgeNotBelowTimeout)

	p := parsePolicy(t, `budget: 30s
default: {timeout: 3s, retries: 0}
hops:
  forward: {timeout: 3s, hedge: {delay: 800ms}}
  retrieve: {timeout: 3s, hedge: {delay: 3s, max: 2}}
`)
	fs := Lint(l.rep, l.reqs, p)
	f := one(t, fs, CodeHedgeOnPersistent, "forward", SevError)
	contains(t, f, "hops.forward hedges after 800ms on a ran-to-timeout hop", "so the hedge waits on the same wall", "up to 1 attempt per call", "remove the hedge")
	r := one(t, fs, CodeHedgeOnPersistent, "retrieve", SevError)
	contains(t, r, "so each hedge waits on the same wall", "up to 2 attempts per call")
	w := one(t, fs, CodeHedgeNotBelowTimeout, "retrieve", SevWarning)
	contains(t, w, "3s is not below its 3s timeout", "never fires")
	if len(findings(fs, CodeHedgeOnPersistent, "generate")) != 0 {
		t.Errorf("generate has no hedge:\n%s", dump(fs))
	}
	if p.For("forward").Hedge != (policy.Hedge{Delay: 800 * time.Millisecond, Max: 1}) {
		t.Errorf("forward hedge %+v", p.For("forward").Hedge)
	}
}

// jitteryChain generates n requests front → jittery, the jittery call's
// attempts independent draws (1.5% slow, 1% fast 503s retried once).
func jitteryChain(seed uint64, n int) []span.Span {
	r := rand.New(rand.NewPCG(seed, seed+1))
	var out []span.Span
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	draw := func() (int64, bool) {
		switch x := r.Float64(); {
		case x < 0.01:
			return int64(2+r.IntN(6)) * 1e6, false
		case x < 0.025:
			return int64(300+r.IntN(600)) * 1e6, true
		}
		return int64(20+r.IntN(20)) * 1e6, true
	}
	for i := range n {
		tr := fmt.Sprintf("t%05d", i)
		start := t0 + int64(i)*int64(5*time.Second)
		t := start + 1e6
		k := 1
		for ; ; k++ {
			d, ok := draw()
			s := span.Span{TraceID: tr, SpanID: fmt.Sprintf("%s-j%d", tr, k), ParentID: tr + "-root", Service: "front", Name: "jittery",
				Hop: "jittery", Kind: "client", Start: t, Duration: d, Status: span.OK, Attempt: k, Weight: 1}
			if !ok {
				s.Status, s.Code = span.Error, 503
			}
			out = append(out, s)
			t += d
			if ok || k == 2 {
				break
			}
			t += 1e6
		}
		out = append(out, span.Span{TraceID: tr, SpanID: tr + "-root", Service: "front", Name: "front", Hop: "front", Kind: "server",
			Start: start, Duration: t - start + 1e6, Status: span.OK, Weight: 1})
	}
	return out
}

// TestRecommendedHedgePassesCheck: recommend with --hedge-load 2% on a
// jittery hop writes a hedge; check passes that policy on the same logs,
// and its replay (independent retry model) reports the hedges fired, at
// about the allowed load, and a lower p99 than without the hedge.
func TestRecommendedHedgePassesCheck(t *testing.T) {
	spans := jitteryChain(5, 3000)
	reqs, probs := span.Assemble(spans)
	rep, p := recommend.Run(spans, reqs, probs, analyze.Options{HedgeLoad: 0.02})
	if p.For("jittery").Hedge.Delay == 0 {
		t.Fatalf("no hedge on the jittery hop: %+v", p.For("jittery"))
	}
	opt := Options{Replay: replay.Options{RetryModel: replay.ModelIndependent}}
	cr := Run(rep, reqs, []*policy.Policy{p}, opt)
	if cr.Verdict != Pass {
		t.Fatalf("check of the recommendation: %s %+v", cr.Verdict, cr.Results[0].Lint)
	}
	if same := Run(rep, reqs, []*policy.Policy{p}, Options{}); same.Verdict != Pass {
		t.Fatalf("check (same-wall model): %s %+v", same.Verdict, same.Results[0].Lint)
	}
	sum := cr.Results[0].Replay
	if sum.Hedges == nil || sum.Hedges.PerRequest <= 0 || sum.Hedges.PerRequest > 0.03 {
		t.Fatalf("replay hedges %+v, want about 2%% per request", sum.Hedges)
	}
	plain := *p
	plain.Name = "unhedged"
	plain.Hops = map[string]policy.Hop{}
	for n, h := range p.Hops {
		h.Hedge = policy.Hedge{}
		plain.Hops[n] = h
	}
	cu := Run(rep, reqs, []*policy.Policy{&plain}, opt)
	before, after := *cu.Results[0].Replay.LatencyMs.P99, *sum.LatencyMs.P99
	t.Logf("request p99 %.1fms → %.1fms with %.2f%% hedges per request", before, after, 100*sum.Hedges.PerRequest)
	if after >= before/2 {
		t.Errorf("request p99 %.1fms → %.1fms: want the tail cut", before, after)
	}
}

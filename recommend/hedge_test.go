package recommend

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
)

// hedgeLogs generates n traces of each of three hops, one call per trace
// (attempts numbered from 1, a failed attempt retried once):
//
//   - jittery: every attempt is an independent draw — 1.5% slow
//     (300–900 ms), the rest 20–40 ms — and 1% fail fast with a 503;
//   - sticky: 1.5% of calls are slow on every attempt (the first fails at
//     500 ms, the retry succeeds as slowly), the rest like jittery's fast;
//   - wall: 5% of calls run to the 1 s timeout in force on both attempts.
func hedgeLogs(seed uint64, n int) []span.Span {
	r := rand.New(rand.NewPCG(seed, seed^0x9e37))
	var out []span.Span
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	ms := func(lo, hi int64) int64 { return (lo + r.Int64N(hi-lo+1)) * int64(time.Millisecond) }
	call := func(hop string, i int, atts [][2]int64) { // {duration ns, code: 0 ok, -1 timeout, else error}
		trace := fmt.Sprintf("%s-%05d", hop, i)
		t := t0 + int64(i)*int64(10*time.Second)
		for k, a := range atts {
			s := span.Span{TraceID: trace, SpanID: fmt.Sprintf("%s-%d", trace, k+1), Service: "svc", Name: hop, Hop: hop,
				Start: t, Duration: a[0], Attempt: k + 1, Status: span.OK, Weight: 1}
			switch {
			case a[1] == -1:
				s.Status, s.Timeout, s.TimeoutInForce = span.Error, true, int64(time.Second)
			case a[1] != 0:
				s.Status, s.Code = span.Error, int(a[1])
			}
			out = append(out, s)
			t += a[0] + int64(2*time.Millisecond)
		}
	}
	jitter := func() [2]int64 {
		switch x := r.Float64(); {
		case x < 0.01:
			return [2]int64{ms(2, 8), 503}
		case x < 0.025:
			return [2]int64{ms(300, 900), 0}
		}
		return [2]int64{ms(20, 40), 0}
	}
	for i := range n {
		a := jitter()
		atts := [][2]int64{a}
		if a[1] != 0 {
			atts = append(atts, jitter())
		}
		call("jittery", i, atts)

		switch x := r.Float64(); {
		case x < 0.015:
			call("sticky", i, [][2]int64{{ms(480, 520), 500}, {ms(480, 520), 0}})
		case x < 0.025:
			call("sticky", i, [][2]int64{{ms(2, 8), 503}, {ms(20, 40), 0}})
		default:
			call("sticky", i, [][2]int64{{ms(20, 40), 0}})
		}

		if r.Float64() < 0.05 {
			call("wall", i, [][2]int64{{int64(time.Second) + ms(0, 3), -1}, {int64(time.Second) + ms(0, 3), -1}})
		} else {
			call("wall", i, [][2]int64{{ms(150, 250), 0}})
		}
	}
	return out
}

// TestRecommendHedges: with --hedge-load 2%, the hop whose slow attempts
// are independent draws gets a hedge at about p98 of its time to success,
// and replaying the recommended policy on its calls cuts their p99 for
// about 2% more attempts; the hop whose slowness persists across a call's
// attempts and the ran-to-timeout hop get none, and say why. Without
// --hedge-load nothing is hedged.
func TestRecommendHedges(t *testing.T) {
	spans := hedgeLogs(11, 3000)
	rep, p := analyse(spans, analyze.Options{HedgeLoad: 0.02, Names: angled})
	jit := p.For("jittery")
	if jit.Hedge.Delay <= 0 || jit.Hedge.Max != 1 {
		t.Fatalf("jittery: no hedge: %+v; basis %s", jit, hopOf(rep, "jittery").Recommendation.Basis)
	}
	basis := hopOf(rep, "jittery").Recommendation.Basis
	t.Logf("jittery: %s", basis)
	if jit.Hedge.Delay < 35*time.Millisecond || jit.Hedge.Delay > 60*time.Millisecond {
		t.Errorf("jittery: hedge after %s, want about p98 of 20–40 ms", jit.Hedge.Delay)
	}
	if !strings.Contains(basis, "hedge after") || !strings.Contains(basis, "more attempts") || !strings.Contains(basis, "→") || !strings.Contains(basis, "<HedgeLoad> 2%") {
		t.Errorf("jittery: the basis does not show the tail cut and the load: %s", basis)
	}
	for _, hop := range []string{"sticky", "wall"} {
		h := hopOf(rep, hop)
		t.Logf("%s (%s): %s", hop, h.FailureClass, h.Recommendation.Basis)
		if p.For(hop).Hedge != (policy.Hedge{}) {
			t.Errorf("%s: hedged %+v", hop, p.For(hop).Hedge)
		}
		if !strings.Contains(h.Recommendation.Basis, "no hedge: ") {
			t.Errorf("%s: the basis does not say why there is no hedge: %s", hop, h.Recommendation.Basis)
		}
	}
	if c := hopOf(rep, "wall").FailureClass; c != analyze.ClassRanToTimeout {
		t.Errorf("wall is %s, want %s", c, analyze.ClassRanToTimeout)
	}
	if doc := rep.RecommendedPolicy.Hops["jittery"].Hedge; doc == nil || doc.DelayMs != units.Ms(int64(jit.Hedge.Delay)) || doc.Max != 1 {
		t.Errorf("recommended_policy.hops.jittery.hedge = %+v", doc)
	}

	// The replay of the recommended policy on the requests that call the
	// jittery hop, its attempts drawn independently: p99 cut, at about
	// the stated load.
	reqs, _ := span.Assemble(spans)
	var jreqs []*span.Request
	for _, r := range reqs {
		if strings.HasPrefix(r.TraceID, "jittery-") {
			jreqs = append(jreqs, r)
		}
	}
	unhedged := *p
	unhedged.Hops = map[string]policy.Hop{}
	for n, h := range p.Hops {
		h.Hedge = policy.Hedge{}
		unhedged.Hops[n] = h
	}
	ind := replay.Options{RetryModel: replay.ModelIndependent}
	base, with := replay.Run(jreqs, &unhedged, ind), replay.Run(jreqs, p, ind)
	extra := float64(with.Hedges) / float64(base.AttemptsByHop["jittery"])
	t.Logf("replayed: p99 %s → %s, %d hedges, %.2f%% more attempts", time.Duration(base.P99), time.Duration(with.P99), with.Hedges, 100*extra)
	if with.P99 >= base.P99/3 {
		t.Errorf("p99 %s → %s: want the jittery tail cut", time.Duration(base.P99), time.Duration(with.P99))
	}
	if extra <= 0 || extra > 0.03 {
		t.Errorf("extra load %.4f, want about the 2%% allowed", extra)
	}
	if with.Succeeded < base.Succeeded {
		t.Errorf("hedged replay succeeds %d, unhedged %d", with.Succeeded, base.Succeeded)
	}
	// The policy reads back with its hedge.
	back, err := policy.Parse("rec.yaml", p.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if back.For("jittery") != jit {
		t.Errorf("read back %+v, wrote %+v", back.For("jittery"), jit)
	}

	// No --hedge-load: no hedge, and no word of hedges.
	rep0, rep0Rec := analyse(spans, analyze.Options{})
	for _, h := range rep0.Hops {
		if rep0Rec.For(h.Hop).Hedge != (policy.Hedge{}) || strings.Contains(h.Recommendation.Basis, "hedge") {
			t.Errorf("%s: hedge without --hedge-load: %+v %s", h.Hop, rep0Rec.For(h.Hop).Hedge, h.Recommendation.Basis)
		}
	}
}

package recommend

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
)

// This file holds the recommendation to traffic it was not fitted to: a
// chain whose hop latencies come from known distributions is generated,
// the policy is fitted on a few hundred or thousand requests, and fresh
// requests from the same distributions are replayed under it.

// hopDist is a hop's true time-to-success distribution.
type hopDist struct {
	name string
	draw func(r *rand.Rand) float64 // ms
	surv func(x float64) float64    // P(X > x ms)
}

func normSurvTest(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

func lognormalHop(name string, median, sigma float64) hopDist {
	return hopDist{name, func(r *rand.Rand) float64 { return median * math.Exp(sigma*r.NormFloat64()) },
		func(x float64) float64 { return normSurvTest(math.Log(x/median) / sigma) }}
}

// paretoHop is a floor plus a Pareto tail (α, scale xm): heavy-tailed.
func paretoHop(name string, floor, xm, alpha float64) hopDist {
	return hopDist{name, func(r *rand.Rand) float64 { return floor + xm*math.Pow(1-r.Float64(), -1/alpha) },
		func(x float64) float64 {
			if x-floor < xm {
				return 1
			}
			return math.Pow((x-floor)/xm, -alpha)
		}}
}

// bimodalHop is a fast path and, with weight w, a slow one (a cache miss).
func bimodalHop(name string, fast, slow, sigma, w float64) hopDist {
	return hopDist{name, func(r *rand.Rand) float64 {
		if r.Float64() < w {
			return slow * math.Exp(sigma*r.NormFloat64())
		}
		return fast * math.Exp(sigma*r.NormFloat64())
	}, func(x float64) float64 {
		return (1-w)*normSurvTest(math.Log(x/fast)/sigma) + w*normSurvTest(math.Log(x/slow)/sigma)
	}}
}

// quantileOf is the x with P(X > x) = p, by bisection.
func (d hopDist) quantileOf(p float64) float64 {
	lo, hi := 1e-6, 1e9
	for i := 0; i < 200; i++ {
		m := math.Sqrt(lo * hi)
		if d.surv(m) > p {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}

// chain is a gateway calling six hops in sequence and two in parallel.
var oosChain = struct {
	seq, par []hopDist
}{
	seq: []hopDist{
		lognormalHop("auth", 20, 0.5),
		lognormalHop("search", 120, 1.0),
		paretoHop("rank", 5, 10, 3),
		paretoHop("fetch", 2, 8, 2.5),
		bimodalHop("cache", 8, 90, 0.3, 0.3),
		bimodalHop("profile", 5, 60, 0.5, 0.1),
	},
	par: []hopDist{lognormalHop("ads", 30, 0.4), lognormalHop("recs", 40, 0.6)},
}

// genChain writes n requests of the chain, from id offset on: a root span
// and one client span per call, all successful.
func genChain(r *rand.Rand, n, offset int) []span.Span {
	out := make([]span.Span, 0, n*(2+len(oosChain.seq)+len(oosChain.par)))
	base := time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC).UnixNano()
	ms := func(x float64) int64 { return int64(x * 1e6) }
	for i := 0; i < n; i++ {
		trace := fmt.Sprintf("t%07d", offset+i)
		start := base + int64(offset+i)*int64(50*time.Millisecond)
		t := start + ms(1)
		var kids []span.Span
		add := func(d hopDist, at int64) int64 {
			dur := ms(d.draw(r))
			kids = append(kids, span.Span{TraceID: trace, SpanID: fmt.Sprintf("%s-%d", trace, len(kids)+1), ParentID: trace + "-0",
				Service: "gateway", Name: d.name, Hop: d.name, Kind: "client", Start: at, Duration: dur, Weight: 1})
			return at + dur
		}
		for _, d := range oosChain.seq {
			t = add(d, t) + ms(0.2)
		}
		end := t
		for _, d := range oosChain.par {
			end = max(end, add(d, t))
		}
		root := span.Span{TraceID: trace, SpanID: trace + "-0", Service: "gateway", Name: "GET /page", Hop: "gateway GET /page",
			Kind: "server", Start: start, Duration: end + ms(1) - start, Weight: 1}
		out = append(out, root)
		out = append(out, kids...)
	}
	return out
}

// TestRecommendationHoldsOutOfSample fits on 300 and on 3,000 generated
// requests and replays 30,000 fresh ones. What it holds, and why so:
//
//   - The distribution-free bound the report predicts covers the loss
//     measured on the fresh requests, every time.
//   - Fitted on 3,000, every fit loses at most twice the target, and no
//     timeout is above the true quantile at 1/20 of the hop's per-call
//     share (a timeout bought by brute force), times the records' factor
//     (at most 1.25 here: what chance gives a stationary chain).
//   - Fitted on 300 (1 in 8,000 per call from 300 successes: a 27-fold
//     extrapolation), each of eight fits loses at most twice the target,
//     and at most one hop fit in twenty is above its ceiling (the timeout
//     is a random variable; the narrow bimodal hops sit closest to it).
//     Measured when written: losses of 0.05–0.07% on 3,000, 0.05–0.17%
//     (median 0.065%) on 300, 3 ceilings passed in 64 hop fits, none on
//     3,000.
func TestRecommendationHoldsOutOfSample(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 30,000 generated requests per fit")
	}
	fresh := genChain(rand.New(rand.NewPCG(99, 100)), 30000, 1_000_000)
	freshReqs, _ := span.Assemble(fresh)
	hops := append(append([]hopDist{}, oosChain.seq...), oosChain.par...)
	target := analyze.DefaultFalseTimeouts
	share := target / float64(len(hops)) // each request makes one call of each
	fit := func(t *testing.T, n int, seed uint64) (loss float64, above int) {
		spans := genChain(rand.New(rand.NewPCG(seed, 7)), n, 0)
		reqs, probs := span.Assemble(spans)
		rep, pol := Run(spans, reqs, probs, analyze.Options{})
		res := replay.Run(freshReqs, pol, replay.Options{})
		ok, lost := 0, 0
		for _, o := range res.Outcomes {
			if o.LoggedOK {
				ok++
				if !o.OK {
					lost++
				}
			}
		}
		loss = float64(lost) / float64(ok)
		if os.Getenv("OOS_DEBUG") != "" {
			t.Logf("timeline %+v", rep.Timeline.Headroom)
			if rc := rep.Timeline.Headroom.Records; rc != nil {
				t.Logf("records: %d calls over %d hops, beyond %v", rc.Calls, rc.Hops, rc.Beyond)
			}
			for _, h := range rep.Hops {
				t.Logf("  %s headroom %g drift %+v basis %s", h.Hop, h.Recommendation.Headroom, h.Drift, h.Recommendation.Basis)
			}
		}
		pred := rep.RecommendedPolicy.Safety.Predicted
		t.Logf("fit on %d (seed %d): lost %d of %d fresh requests (%.3f%%), predicted ≤ %.3f%% (expected %.3f%%)", n, seed, lost, ok, 100*loss, 100*pred.Upper, 100*pred.Expected)
		if pred.Upper < loss {
			t.Errorf("fit on %d (seed %d): the predicted bound %.3f%% does not cover the measured loss %.3f%%", n, seed, 100*pred.Upper, 100*loss)
		}
		// The records' factor (analyze/records.go) is a count judged as the
		// next window is: on this stationary chain chance alone puts it at
		// 1.25 now and then (seed 5: 7 of 24,000 held-out calls past 1×,
		// where the share allows 3), never further, and the ceiling
		// carries what it carries.
		records := map[string]float64{}
		for _, h := range rep.Hops {
			if f := h.Recommendation.Records; f > 0 {
				records[h.Hop] = f
				if f > 1.25 {
					t.Errorf("seed %d: %s carries a records factor of %g on stationary traffic", seed, h.Hop, f)
				}
			}
		}
		for _, d := range hops {
			hp, listed := pol.Hops[d.name]
			if !listed {
				t.Fatalf("hop %s has no timeout", d.name)
			}
			got := float64(hp.Timeout) / 1e6
			ceiling := d.quantileOf(share/20) * max(1, records[d.name])
			if os.Getenv("OOS_DEBUG") != "" {
				t.Logf("  %-8s %8.1f ms exceed %.2g (share %.2g)", d.name, got, d.surv(got), share)
			}
			if got > ceiling {
				above++
				t.Logf("  %s: timeout %.1f ms is above the true quantile at 1/20 of its share (%.1f ms)", d.name, got, ceiling)
			}
		}
		return loss, above
	}
	t.Run("fit on 3000", func(t *testing.T) {
		for _, seed := range []uint64{4, 5} {
			loss, above := fit(t, 3000, seed)
			if loss > 2*target {
				t.Errorf("seed %d: out-of-sample loss %.3f%% is above twice the %.1f%% target", seed, 100*loss, 100*target)
			}
			if above > 0 {
				t.Errorf("seed %d: %d timeouts above their ceiling", seed, above)
			}
		}
	})
	t.Run("fit on 300", func(t *testing.T) {
		var losses []float64
		above := 0
		for seed := uint64(1); seed <= 8; seed++ {
			l, a := fit(t, 300, seed)
			if l > 2*target {
				t.Errorf("seed %d: out-of-sample loss %.3f%% is above twice the %.1f%% target", seed, 100*l, 100*target)
			}
			losses = append(losses, l)
			above += a
		}
		slices.Sort(losses)
		if med := (losses[3] + losses[4]) / 2; med > 2*target {
			t.Errorf("median out-of-sample loss %.3f%% over 8 fits is above twice the %.1f%% target", 100*med, 100*target)
		}
		if fits := 8 * len(hops); above*20 > fits {
			t.Errorf("%d of %d hop fits put the timeout above its ceiling (more than 1 in 20)", above, fits)
		}
	})
}

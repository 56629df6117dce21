package analyze

import (
	"fmt"
	"math"
	"slices"

	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/span"
)

// Sampling weights. A span kept by a sampler with probability p stands for
// 1/p spans (span.Weight: an explicit weight, OTel's th threshold in its
// tracestate, 1 when the logs say nothing). When the spans kept whole
// carry weights other than 1, the per-hop latency percentiles are weighted
// by each span's weight and the request numbers (latency percentiles,
// success rate) by each request's root span's weight; counts, histograms,
// failure classes and the replay stay per span and per request as logged,
// and a "weighted" warning says so. The weighted q-quantile is the
// unweighted one (numpy's linear interpolation between closest ranks) of
// the sample in which each value is repeated as many times as its weight
// says: with integer weights exactly that, and the same rule over the
// cumulative weights otherwise; all weights 1 give the unweighted
// percentile. 100 slow spans of weight 10 beside 500 fast ones of weight 1
// stand for 1000 slow and 500 fast: the p50 is slow.
//
// A censored hop (attempts cut by a timeout) keeps its unweighted numbers:
// which of its percentiles are known is decided by ranks, and weighting
// them would need the same rule over weights (left for later); the
// warning names how many hops kept them.
//
// Spans from a tracing system (they carry a kind) with no weight at all
// get an "unweighted-sample" warning instead: a store that samples by the
// tail keeps slow and failed traces, and the numbers then describe the
// traces kept, not the requests served.

// Warning codes of this file.
const (
	WarnWeighted   = "weighted"
	WarnUnweighted = "unweighted-sample"
)

// weighted is a value and the number of values it stands for.
type weighted struct {
	v int64
	w float64
}

// weightedQuantile is the q-quantile of xs (sorted by value, weights > 0)
// as defined above, or NaN when the weights add up to nothing.
func weightedQuantile(xs []weighted, q float64) float64 {
	var total float64
	for _, x := range xs {
		total += x.w
	}
	if len(xs) == 0 || !(total > 0) {
		return math.NaN()
	}
	// The value at (fractional, 0-based) rank k of the expanded sample.
	at := func(k float64) float64 {
		var c float64
		for _, x := range xs {
			c += x.w
			if k < c {
				return float64(x.v)
			}
		}
		return float64(xs[len(xs)-1].v)
	}
	h := q * math.Max(total-1, 0)
	lo, hi := math.Floor(h), math.Ceil(h)
	a, b := at(lo), at(hi)
	return a + (h-lo)*(b-a)
}

// weightedLatency is a Latency over xs (any order; sorted here).
func weightedLatency(xs []weighted) Latency {
	slices.SortFunc(xs, func(a, b weighted) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	l, _ := latencyOf(len(xs), len(xs), func(q float64) float64 { return weightedQuantile(xs, q) })
	return l
}

// hasWeights reports whether some span kept whole carries a weight other
// than 1, and whether some carries a kind (a tracing system's span).
func hasWeights(spans []*span.Span) (weights, kinds bool) {
	for _, s := range spans {
		if s.Weight != 1 && s.Weight > 0 {
			weights = true
		}
		if s.Kind != "" {
			kinds = true
		}
	}
	return weights, kinds
}

// requestWeight is the weight of a request: its root span's, else its
// first top-level call's first attempt's.
func requestWeight(r *span.Request) float64 {
	switch {
	case r.Root != nil:
		return r.Root.Weight
	case len(r.Calls) > 0 && len(r.Calls[0].Attempts) > 0:
		return r.Calls[0].Attempts[0].Span.Weight
	}
	return 1
}

// applyWeights weights the hop and request numbers when the spans carry
// weights, or warns that they carry none (see above).
func applyWeights(rep *Report, spans []*span.Span, byHop map[string][]*span.Span, reqs []*span.Request) {
	weights, kinds := hasWeights(spans)
	if !weights {
		if kinds {
			rep.Warnings = append(rep.Warnings, Warning{Code: WarnUnweighted, Message: "no span carries a sampling weight " +
				"(a weight, an OTel th threshold in its tracestate, sampling.priority): if the store sampled traces — tail sampling keeps the slow and failed ones — " +
				"the percentiles and success rates describe the traces kept, not the requests served"})
		}
		return
	}
	lo, hi := math.Inf(1), 0.0
	for _, s := range spans {
		if w := s.Weight; w > 0 {
			lo, hi = min(lo, w), max(hi, w)
		}
	}
	kept := 0
	for i := range rep.Hops {
		h := &rep.Hops[i]
		if h.Censored != nil {
			kept++
			continue
		}
		ss := byHop[h.Hop]
		if len(ss) == 0 {
			continue
		}
		xs := make([]weighted, 0, len(ss))
		for _, s := range ss {
			if s.Weight > 0 {
				xs = append(xs, weighted{s.Duration, s.Weight})
			}
		}
		if len(xs) > 0 {
			h.LatencyMs, h.Weighted = weightedLatency(xs), true
		}
	}
	rq := &rep.Requests
	xs := make([]weighted, 0, len(reqs))
	var all, ok float64
	for _, r := range reqs {
		w := requestWeight(r)
		if !(w > 0) {
			continue
		}
		xs = append(xs, weighted{r.Latency(), w})
		all += w
		if !r.Failed {
			ok += w
		}
	}
	if len(xs) > 0 && all > 0 {
		rq.LatencyMs, rq.Weighted = weightedLatency(xs), true
		rq.SuccessRate = units.Round(ok/all, 4)
	}
	msg := fmt.Sprintf("spans carry sampling weights (%s to %s): per-hop latency percentiles are weighted by each span's weight, "+
		"request latency and success rate by each request's root span's; counts, histograms, failure classes and the replay are per span as logged",
		units.Significant(lo, 3), units.Significant(hi, 3))
	if kept > 0 {
		msg += fmt.Sprintf("; %s cut by a timeout keep unweighted percentiles", units.Count(kept, "hop", "hops"))
	}
	rep.Warnings = append(rep.Warnings, Warning{Code: WarnWeighted, Message: msg})
}

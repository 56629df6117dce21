package replay

import (
	"math"

	"github.com/tailscope/tailscope/outcome"
	"github.com/tailscope/tailscope/quantile"
)

// The report form of a replay is defined in package outcome (so that the
// analysis report can carry it without importing the replay engine); these
// are its names here.
type (
	Summary      = outcome.Summary
	Hedges       = outcome.Hedges
	Attempts     = outcome.Attempts
	Range        = outcome.Range
	Latency      = outcome.Latency
	FailureTimes = outcome.FailureTimes
	RetryTime    = outcome.RetryTime
)

func msPtr(ns float64) *float64 {
	if math.IsNaN(ns) || math.IsInf(ns, 0) {
		return nil
	}
	v := math.Round(ns/1e3) / 1e3
	return &v
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// Summary converts a replay result to its report form.
func (r *Result) Summary() Summary {
	out := Summary{
		Requests: r.Requests, Succeeded: r.Succeeded, Failed: r.Failed, Undetermined: r.Undetermined,
		SuccessRate:    Range{Low: round4(r.SuccessLow), High: round4(r.SuccessHigh)},
		LatencyMs:      Latency{P50: msPtr(r.P50), P95: msPtr(r.P95), P99: msPtr(r.P99)},
		FailureLanding: r.FailureLanding,
		FailuresByHop:  r.FailuresByHop,
		RetryMs:        RetryTime{Spent: float64(r.RetrySpent) / 1e6, Wasted: float64(r.RetryWasted) / 1e6},
	}
	var ok []int64
	for _, o := range r.Outcomes {
		if o.OK && !o.Undetermined {
			ok = append(ok, o.End)
		}
	}
	if len(ok) > 0 {
		quantile.SortInt64(ok)
		out.LatencyOKMs = Latency{P50: msPtr(quantile.Int64(ok, 0.50)), P95: msPtr(quantile.Int64(ok, 0.95)), P99: msPtr(quantile.Int64(ok, 0.99))}
	}
	if r.Failed > 0 {
		out.FailureMs = FailureTimes{Min: msPtr(float64(r.FailMin)), Max: msPtr(float64(r.FailMax)), Mean: msPtr(r.FailMean)}
	}
	out.AttemptsPerRequest = r.attemptsPerRequest()
	if r.Hedges > 0 && len(r.Outcomes) > 0 {
		n := float64(len(r.Outcomes))
		h := &Hedges{Fired: r.Hedges, PerRequest: round4(float64(r.Hedges) / n), ByHop: map[string]float64{}}
		for hop, c := range r.HedgesByHop {
			if c > 0 {
				h.ByHop[hop] = round4(float64(c) / n)
			}
		}
		out.Hedges = h
	}
	return out
}

func (r *Result) attemptsPerRequest() Attempts {
	a := Attempts{ByHop: map[string]float64{}}
	if len(r.Outcomes) == 0 {
		return a
	}
	counts := make([]int64, len(r.Outcomes))
	var sum int64
	for i, o := range r.Outcomes {
		counts[i] = int64(o.Attempts)
		sum += counts[i]
		a.Max = max(a.Max, o.Attempts)
	}
	quantile.SortInt64(counts)
	n := float64(len(counts))
	a.Mean = round4(float64(sum) / n)
	a.P99 = round4(quantile.Int64(counts, 0.99))
	for hop, c := range r.AttemptsByHop {
		a.ByHop[hop] = round4(float64(c) / n)
	}
	return a
}

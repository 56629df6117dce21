package replay

import (
	"github.com/tailscope/tailscope/internal/units"

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

// Summary converts a replay result to its report form.
func (r *Result) Summary() Summary {
	out := Summary{
		Requests: r.Requests, Succeeded: r.Succeeded, Failed: r.Failed, Undetermined: r.Undetermined,
		SuccessRate:    Range{Low: units.Round(r.SuccessLow, 4), High: units.Round(r.SuccessHigh, 4)},
		LatencyMs:      Latency{P50: units.MsPtr(r.P50), P95: units.MsPtr(r.P95), P99: units.MsPtr(r.P99)},
		FailureLanding: r.FailureLanding,
		FailuresByHop:  r.FailuresByHop,
		RetryMs:        RetryTime{Spent: units.Ms(r.RetrySpent), Wasted: units.Ms(r.RetryWasted)},
	}
	var ok []int64
	for _, o := range r.Outcomes {
		if o.OK && !o.Undetermined {
			ok = append(ok, o.End)
		}
	}
	if len(ok) > 0 {
		quantile.SortInt64(ok)
		out.LatencyOKMs = Latency{P50: units.MsPtr(quantile.Int64(ok, 0.50)), P95: units.MsPtr(quantile.Int64(ok, 0.95)), P99: units.MsPtr(quantile.Int64(ok, 0.99))}
	}
	if r.Failed > 0 {
		out.FailureMs = FailureTimes{Min: units.MsPtr(float64(r.FailMin)), Max: units.MsPtr(float64(r.FailMax)), Mean: units.MsPtr(r.FailMean)}
	}
	out.AttemptsPerRequest = r.attemptsPerRequest()
	if r.Hedges > 0 && len(r.Outcomes) > 0 {
		n := float64(len(r.Outcomes))
		h := &Hedges{Fired: r.Hedges, PerRequest: units.Round(float64(r.Hedges)/n, 4), ByHop: map[string]float64{}}
		for hop, c := range r.HedgesByHop {
			if c > 0 {
				h.ByHop[hop] = units.Round(float64(c)/n, 4)
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
	a.Mean = units.Round(float64(sum)/n, 4)
	a.P99 = units.Round(quantile.Int64(counts, 0.99), 4)
	for hop, c := range r.AttemptsByHop {
		a.ByHop[hop] = units.Round(float64(c)/n, 4)
	}
	return a
}

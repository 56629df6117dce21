package replay

import (
	"math"

	"github.com/tailscope/tailscope/quantile"
)

// Summary is a replay in report form (docs/DESIGN.md §8, the "replay" object of
// tailscope.check/v1): times in ms, unknown values null.
type Summary struct {
	Requests     int     `json:"requests"`
	Succeeded    int     `json:"succeeded"`
	Failed       int     `json:"failed"`
	Undetermined int     `json:"undetermined"`
	SuccessRate  Range   `json:"success_rate"`
	LatencyMs    Latency `json:"latency_ms"`
	// LatencyOKMs is the same over the requests that succeeded only: the
	// time to an answer. LatencyMs counts a failed request at the time it
	// gave up, so a policy that cuts most requests short has a low p50
	// there (63 ms beside 7.5% success read as an improvement).
	LatencyOKMs    Latency           `json:"latency_ok_ms"`
	FailureMs      FailureTimes      `json:"failure_ms"`
	FailureLanding []quantile.Bucket `json:"failure_landing"`
	FailuresByHop  map[string]int    `json:"failures_by_hop"`
	RetryMs        RetryTime         `json:"retry_ms"`
	// AttemptsPerRequest is the load the policy puts on the hops: attempts
	// (first tries and retries, every hop) per request.
	AttemptsPerRequest Attempts `json:"attempts_per_request"`
	// Hedges counts the hedged attempts the policy sent; absent when it
	// hedges nowhere.
	Hedges *Hedges `json:"hedges,omitempty"`
}

// Hedges is the hedged attempts a policy sent (also counted in
// attempts_per_request): in all, per request, and per request by hop.
type Hedges struct {
	Fired      int                `json:"fired"`
	PerRequest float64            `json:"per_request"`
	ByHop      map[string]float64 `json:"by_hop"`
}

// Attempts is attempts per request: mean, p99 and max over requests, and
// the mean per request of each hop.
type Attempts struct {
	Mean  float64            `json:"mean"`
	P99   float64            `json:"p99"`
	Max   int                `json:"max"`
	ByHop map[string]float64 `json:"by_hop"`
}

// Range is a success rate known only between Low and High.
type Range struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Latency holds replayed request latency percentiles, ms.
type Latency struct {
	P50 *float64 `json:"p50"`
	P95 *float64 `json:"p95"`
	P99 *float64 `json:"p99"`
}

// FailureTimes summarises when failed requests gave up, ms.
type FailureTimes struct {
	Min  *float64 `json:"min"`
	Max  *float64 `json:"max"`
	Mean *float64 `json:"mean"`
}

// RetryTime is time spent retrying, ms.
type RetryTime struct {
	Spent  float64 `json:"spent"`
	Wasted float64 `json:"wasted"`
}

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

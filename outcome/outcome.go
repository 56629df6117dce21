// Package outcome holds what a replay of the logs under a policy comes
// to, in report form (docs/DESIGN.md §8): the "replay" object of
// tailscope.check/v1 and each column of the analysis report's
// predicted_effect. Package replay computes it; packages analyze (whose
// Report carries the predicted effect as data) and check carry it. It is
// a package of its own so that analyze holds the report's data model
// without depending on the replay engine.
package outcome

import "github.com/tailscope/tailscope/quantile"

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

package analyze

import (
	"github.com/tailscope/tailscope/internal/units"

	"math"

	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
)

// nsOf converts an optional ms value to ns (0 when unknown).
func nsOf(msv *float64) int64 {
	if msv == nil {
		return 0
	}
	return int64(math.Round(units.NsOfMs(*msv)))
}

// cutBy reports whether attempt s was cut by a timeout, T being the hop's
// timeout in force (ns, 0 when unknown). A cut attempt is right-censored:
// its true latency is only known to be ≥ its duration.
//
// An attempt is cut when its span says so (span.Span.Timeout: a timeout
// status or error type, DEADLINE_EXCEEDED, HTTP 408/504, Envoy UT), when it
// failed with a timeout code the reader did not turn into the flag, or —
// the decision for logs that do not mark timeouts — when it failed and
// ended within the tolerance of T (2%, at least 1 ms). Such a span is the
// caller giving up at its timer; counting it as a latency of T would
// report the censoring point as a percentile, which docs/DESIGN.md §3 forbids.
// A successful attempt that ended near T is a real, measured success and
// is never censored.
func cutBy(s *span.Span, T int64) bool {
	if !s.Failed() {
		return false
	}
	return markedCut(s) || near(s.Duration, T)
}

// markedCut reports whether a failed attempt's span says a timeout cut it:
// the flag, or a timeout code (span.Span.Timeout implies failed). The rest
// of cutBy's rule, a failure that ended near T, is cutWindow's.
func markedCut(s *span.Span) bool { return s.Timeout || timeoutCode(s.Code) }

// cutWindow is the range of durations within the tolerance of T (near):
// a failure that ended in it was cut by T. Empty when T is not set.
func cutWindow(T int64) (lo, hi int64) {
	if T <= 0 {
		return 0, -1
	}
	return T - tolerance(T), T + tolerance(T)
}

// timeoutCode reports whether an HTTP or gRPC status code says that a
// deadline ran out: HTTP 408 and 504, gRPC 4 (DEADLINE_EXCEEDED). gRPC
// codes are below 100, HTTP codes at or above.
func timeoutCode(c int) bool {
	return c == 408 || c == 504 || c == 4
}

// transientCode reports whether a code names a failure that a retry with
// backoff usually gets past: HTTP 429, 502, 503; gRPC 8
// (RESOURCE_EXHAUSTED) and 14 (UNAVAILABLE, which also covers connection
// resets and refused connections).
func transientCode(c int) bool {
	return c == 429 || c == 502 || c == 503 || c == 8 || c == 14
}

// callFailureHistogram buckets the durations of a hop's failed calls, from
// the start of the first attempt to the end of the last: the time a caller
// lost on the hop, retries and backoff included.
func callFailureHistogram(cs []*span.Call) []quantile.Bucket {
	var d []int64
	for _, c := range cs {
		if c.Failed() {
			d = append(d, c.End()-c.Start())
		}
	}
	quantile.SortInt64(d)
	return quantile.Histogram(d, failureWidth(d))
}

// kmLatency is the Kaplan–Meier estimate of a hop's time to success:
// successful attempts are events at their duration, attempts cut by a
// timeout are right-censored at their duration, and failed attempts that
// were not cut (fast errors) are left out, as in the recommendation
// (docs/DESIGN.md §5).
//
// Why beside success_latency_ms: when all cuts happen at one timeout above
// every success, both agree and a percentile is known only below the
// censored share. When cuts happen at several points — callers with
// different timeouts, attempts cut early by a request deadline — the rank
// rule must give up at the lowest cut, while Kaplan–Meier keeps every
// attempt in the risk set until it was cut and still estimates the
// quantiles that the uncensored attempts reach.
//
// The quantile is the KM step quantile: the smallest duration t with
// 1 − S(t) ≥ q. It is therefore not the contract's interpolated percentile
// (with no censoring it is the lower empirical quantile), which is why it
// has its own name. A quantile the curve never reaches (the tail lies
// beyond the last cut) is null; max is known only when the longest
// attempt is a success.
func kmLatency(sortedSucc, cut []int64) Latency {
	cut = append([]int64(nil), cut...)
	quantile.SortInt64(cut)
	n := len(sortedSucc) + len(cut)
	var l Latency
	if n == 0 || len(sortedSucc) == 0 {
		return l
	}
	qs := []struct {
		q   float64
		dst **float64
	}{{0.50, &l.P50}, {0.90, &l.P90}, {0.95, &l.P95}, {0.99, &l.P99}, {0.999, &l.P999}, {1, &l.Max}}
	atRisk := float64(n)
	surv := 1.0
	i, j, k := 0, 0, 0
	for i < len(sortedSucc) && k < len(qs) {
		t := sortedSucc[i]
		// Attempts cut strictly before t leave the risk set first; a cut at
		// t itself counts as at risk at t (events before censorings on ties).
		for j < len(cut) && cut[j] < t {
			atRisk--
			j++
		}
		d := 0
		for i < len(sortedSucc) && sortedSucc[i] == t {
			d++
			i++
		}
		surv *= 1 - float64(d)/atRisk
		atRisk -= float64(d)
		for k < len(qs) && 1-surv >= qs[k].q-1e-12 {
			*qs[k].dst = units.RoundPtr(units.Ms(t), 3)
			k++
		}
	}
	return l
}

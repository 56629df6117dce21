package analyze

import (
	"bufio"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/samples"
	"github.com/tailscope/tailscope/span"
)

// seedRecordedA reads the embedded seed sample as config A logged it. The
// flat schema is decoded here with encoding/json so that this package's
// tests do not depend on the readers.
func seedRecordedA(t *testing.T) []span.Span {
	t.Helper()
	f, err := samples.SeedChain.Open("seed-chain/recorded-under-A.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []span.Span
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			Trace, ID, Hop, Status string
			Start                  int64
			DurationMs             float64
			Attempt                int
			TimeoutMs              float64
			Timeout                bool
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatal(err)
		}
		get := func(k string, v any) {
			if b, ok := raw[k]; ok {
				if err := json.Unmarshal(b, v); err != nil {
					t.Fatalf("%s: %v", k, err)
				}
			}
		}
		get("trace_id", &r.Trace)
		get("span_id", &r.ID)
		get("hop", &r.Hop)
		get("status", &r.Status)
		get("start", &r.Start)
		get("duration_ms", &r.DurationMs)
		get("attempt", &r.Attempt)
		get("timeout_ms", &r.TimeoutMs)
		get("timeout", &r.Timeout)
		s := span.Span{TraceID: r.Trace, SpanID: r.ID, Hop: r.Hop, Name: r.Hop, Start: r.Start,
			Duration: int64(math.Round(r.DurationMs * 1e6)), Attempt: r.Attempt, Timeout: r.Timeout,
			TimeoutInForce: int64(r.TimeoutMs * 1e6), Weight: 1, Status: span.OK}
		if r.Status == "error" {
			s.Status = span.Error
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSeedRecordedUnderA: the hops that hit the tail are ran-to-timeout
// with retry yield 0, and their p99 is censored at 3 s.
func TestSeedRecordedUnderA(t *testing.T) {
	spans := seedRecordedA(t)
	rep := analyse(spans, Options{})
	tailHops := 0
	for _, h := range rep.Hops {
		t.Logf("%s: %s: %s", h.Hop, h.FailureClass, h.Evidence)
		if h.FailedAttempts == 0 {
			continue
		}
		tailHops++
		if h.FailureClass != ClassRanToTimeout && h.FailureClass != ClassTooFew {
			t.Errorf("%s: class %s, want ran-to-timeout", h.Hop, h.FailureClass)
		}
		if h.FailedAttempts >= MinFailures && h.FailureClass != ClassRanToTimeout {
			t.Errorf("%s: %d failures but class %s", h.Hop, h.FailedAttempts, h.FailureClass)
		}
		if y := h.RetryYield; y == nil || y.Recovered != 0 || y.AfterTimeout.Succeeded != 0 || y.AfterTimeout.Retried == 0 {
			t.Errorf("%s: retry yield %+v, want 0 of n after timeouts", h.Hop, y)
		}
		if h.LatencyMs.P99 != nil {
			t.Errorf("%s: p99 %v reported though censored", h.Hop, *h.LatencyMs.P99)
		}
		if c := h.Censored; c == nil || c.TimeoutMs != 3000 || !slices.Contains(c.Unknown, "p99") {
			t.Errorf("%s: censored %+v, want p99 unknown, cut at 3000ms", h.Hop, c)
		}
		if h.TimeoutMs == nil || *h.TimeoutMs != 3000 {
			t.Errorf("%s: timeout %v", h.Hop, h.TimeoutMs)
		}
	}
	if tailHops == 0 {
		t.Fatal("no hop failed in the seed sample")
	}
	// Requests: 19 failed, each after 3 attempts of 3 s on its slow hop.
	rq := rep.Requests
	if rq.Count != 200 || rq.Count-rq.Succeeded != 19 {
		t.Errorf("requests %d, failed %d; want 200, 19", rq.Count, rq.Count-rq.Succeeded)
	}
	if rq.MeanTimeToFailureMs == nil || *rq.MeanTimeToFailureMs < 9000 {
		t.Errorf("mean time to failure %v, want ≥ 9 s (three 3 s attempts)", rq.MeanTimeToFailureMs)
	}
	landed := 0
	for _, b := range rq.FailureLanding {
		landed += b.Count
		if b.Count > 0 && b.FromMs < 9000 {
			t.Errorf("a failure lands at %v–%v ms, before 3×3 s", b.FromMs, b.ToMs)
		}
	}
	if landed != 19 {
		t.Errorf("failure landing holds %d, want 19", landed)
	}
	if !hasWarning(rep, "averages-hide-tail", "") {
		t.Errorf("no averages-hide-tail note; warnings %+v", rep.Warnings)
	}
}

func hasWarning(rep *Report, code, hop string) bool {
	for _, w := range rep.Warnings {
		if w.Code == code && (hop == "" || w.Hop == hop) {
			return true
		}
	}
	return false
}

// TestCensoredPercentiles: a percentile is unknown exactly when its rank
// reaches into the cut attempts, i.e. when more than (100 − q)% of the
// attempts are cut (give or take the interpolation's neighbour), and a
// known one equals the oracle over the uncut values.
func TestCensoredPercentiles(t *testing.T) {
	for _, cutShare := range []float64{0, 0.005, 0.02, 0.04, 0.07, 0.12, 0.3, 0.6} {
		const n = 1000
		T := 2 * time.Second
		var spans []span.Span
		var uncut []int64
		nCut := int(math.Round(cutShare * n))
		for i := 0; i < n; i++ {
			s := span.Span{TraceID: "t" + string(rune('a'+i%26)) + time.Duration(i).String(), SpanID: "s", Hop: "h", Start: int64(i) * 1e10, Weight: 1, Status: span.OK}
			if i < nCut {
				s.Duration, s.Status = int64(T)+int64(i%7)*100_000, span.Error
				// Half of the cut attempts lack the timeout mark: their
				// end at T must still make them censored.
				s.Timeout = i%2 == 0
			} else {
				s.Duration = int64(time.Millisecond) * int64(100+i%1500)
				uncut = append(uncut, s.Duration)
			}
			s.TimeoutInForce = int64(T)
			spans = append(spans, s)
		}
		h := hopOf(analyse(spans, Options{}), "h")
		quantile.SortInt64(uncut)
		all := append(append([]int64(nil), uncut...), make([]int64, nCut)...)
		for i := len(uncut); i < len(all); i++ {
			all[i] = int64(T)
		}
		for _, p := range []struct {
			name string
			q    float64
			got  *float64
		}{{"p50", 0.5, h.LatencyMs.P50}, {"p90", 0.9, h.LatencyMs.P90}, {"p95", 0.95, h.LatencyMs.P95}, {"p99", 0.99, h.LatencyMs.P99}, {"p999", 0.999, h.LatencyMs.P999}} {
			unknown := float64(nCut) > (1-p.q)*float64(n-1)-1e-9 && nCut > 0
			if unknown != (p.got == nil) {
				t.Errorf("cut %.1f%%: %s known=%v, want known=%v", cutShare*100, p.name, p.got != nil, !unknown)
				continue
			}
			if p.got != nil {
				want := quantile.Int64(all, p.q) / 1e6
				if math.Abs(*p.got-want) > 0.001 {
					t.Errorf("cut %.1f%%: %s %v, oracle %v", cutShare*100, p.name, *p.got, want)
				}
			}
		}
		if nCut > 0 && (h.Censored == nil || h.Censored.Attempts != nCut) {
			t.Errorf("cut %.1f%%: censored %+v, want %d attempts", cutShare*100, h.Censored, nCut)
		}
		if nCut == 0 && h.Censored != nil {
			t.Errorf("nothing cut, censored %+v", h.Censored)
		}
	}
}

// TestKaplanMeier: with one cut point above every success the estimate is
// the empirical step quantile and stops at the cut share; with a cut
// below some successes it still estimates what the rank rule cannot.
func TestKaplanMeier(t *testing.T) {
	msv := func(xs ...float64) []int64 {
		out := make([]int64, len(xs))
		for i, x := range xs {
			out[i] = int64(x * 1e6)
		}
		return out
	}
	val := func(p *float64) float64 {
		if p == nil {
			return -1
		}
		return *p
	}
	// Hand-computed: successes 1..5 ms, one attempt cut at 2.5 ms.
	// S(1)=5/6, S(2)=4/6, S(3)=4/6·2/3=0.444, S(4)=0.222, S(5)=0.
	l := kmLatency(msv(1, 2, 3, 4, 5), msv(2.5))
	if val(l.P50) != 3 || val(l.P90) != 5 || val(l.Max) != 5 {
		t.Errorf("km %v %v %v, want 3 5 5", val(l.P50), val(l.P90), val(l.Max))
	}
	// 90 successes 1..90 ms and 10 cut at 100 ms: p90 = 90, p95 unknown.
	var succ []float64
	for i := 1; i <= 90; i++ {
		succ = append(succ, float64(i))
	}
	cut := []float64{100, 100, 100, 100, 100, 100, 100, 100, 100, 100}
	l = kmLatency(msv(succ...), msv(cut...))
	if val(l.P50) != 50 || val(l.P90) != 90 || l.P95 != nil || l.Max != nil {
		t.Errorf("km p50 %v p90 %v p95 %v max %v; want 50 90 null null", val(l.P50), val(l.P90), val(l.P95), val(l.Max))
	}
	// Without censoring it is the lower empirical quantile x[⌈qn⌉−1].
	l = kmLatency(msv(succ...), nil)
	for _, c := range []struct {
		q   float64
		got *float64
	}{{0.5, l.P50}, {0.9, l.P90}, {0.95, l.P95}, {0.99, l.P99}} {
		want := succ[int(math.Ceil(c.q*90))-1]
		if val(c.got) != want {
			t.Errorf("km q=%v: %v, want %v", c.q, val(c.got), want)
		}
	}
	if l := kmLatency(nil, msv(1, 2)); l.P50 != nil {
		t.Error("no successes: nothing is known")
	}
}

// TestAveragesHideTail: the note appears when failures sit in the tail
// and the median does not move, and not for a uniform healthy set.
func TestAveragesHideTail(t *testing.T) {
	mk := func(lat []time.Duration, failed func(i int) bool) []*span.Request {
		var out []*span.Request
		for i, d := range lat {
			out = append(out, &span.Request{Start: 0, End: int64(d), Failed: failed(i)})
		}
		return out
	}
	var lat []time.Duration
	for i := 0; i < 100; i++ {
		lat = append(lat, time.Duration(500+i*10)*time.Millisecond)
	}
	if w := hiddenTail(mk(lat, func(int) bool { return false })); w != nil {
		t.Errorf("healthy uniform requests: %+v", w)
	}
	tail := append([]time.Duration(nil), lat...)
	for i := 0; i < 10; i++ {
		tail = append(tail, 9*time.Second+time.Duration(i)*time.Millisecond)
	}
	w := hiddenTail(mk(tail, func(i int) bool { return i >= 100 }))
	if w == nil || w.Code != "averages-hide-tail" || !strings.Contains(w.Message, "10 of 110 requests failed") {
		t.Errorf("tail failures: %+v", w)
	}
	// Failures spread through the body move the median: no note.
	if w := hiddenTail(mk(lat, func(i int) bool { return i%2 == 0 })); w != nil {
		t.Errorf("failures in the body: %+v", w)
	}
}

func TestMergeAscending(t *testing.T) {
	for _, tc := range []struct{ a, b, want []int64 }{
		{nil, nil, []int64{}},
		{[]int64{1, 3}, nil, []int64{1, 3}},
		{nil, []int64{2}, []int64{2}},
		{[]int64{1, 3, 3, 9}, []int64{0, 3, 4, 10, 11}, []int64{0, 1, 3, 3, 3, 4, 9, 10, 11}},
	} {
		if got := mergeAscending(tc.a, tc.b); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("mergeAscending(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

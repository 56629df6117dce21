package recommend

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
	"github.com/tailscope/tailscope/span/spantest"
)

func TestRoundUpNice(t *testing.T) {
	tests := []struct{ in, want time.Duration }{
		{11990 * time.Millisecond, 12 * time.Second},
		{12 * time.Second, 12 * time.Second},
		{770 * time.Millisecond, 770 * time.Millisecond},
		{771 * time.Millisecond, 780 * time.Millisecond},
		{1010 * time.Millisecond, 1050 * time.Millisecond},
		{1234 * time.Millisecond, 1250 * time.Millisecond},
		{2345 * time.Millisecond, 2400 * time.Millisecond},
		{3 * time.Millisecond, 3 * time.Millisecond},
		{45 * time.Second, 45 * time.Second},
		{101 * time.Second, 105 * time.Second},
	}
	for _, tc := range tests {
		if got := RoundUpNice(tc.in); got != tc.want {
			t.Errorf("RoundUpNice(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if got := RoundUpNice(tc.in); got < tc.in || float64(got) > float64(tc.in)*1.05+float64(time.Millisecond) {
			t.Errorf("RoundUpNice(%s) = %s: below the input or more than 5%% above", tc.in, got)
		}
	}
}

func loadFile(t *testing.T, path string) ([]span.Span, []*span.Request, span.Problems) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return loadBytes(t, data)
}

func loadBytes(t *testing.T, data []byte) ([]span.Span, []*span.Request, span.Problems) {
	t.Helper()
	var spans []span.Span
	if _, err := ingest.ReadStream("t.jsonl", bytes.NewReader(data), ingest.Options{}, ingest.SinkFunc(func(s *span.Span) { spans = append(spans, *s) })); err != nil {
		t.Fatal(err)
	}
	reqs, probs := span.Assemble(spans)
	return spans, reqs, probs
}

func exactP(xs []int64, q float64) float64 {
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	h := float64(len(s)-1) * q
	i := int(h)
	if i+1 >= len(s) {
		return float64(s[len(s)-1])
	}
	return float64(s[i]) + (h-float64(i))*float64(s[i+1]-s[i])
}

// On the seed sample: each hop's timeout comes from its own time to
// success at the percentile the request-level target implies (3 calls per
// request, 0.1% of requests → p99.967 per call, which 200 successes cannot
// certify: extrapolated, and here the slowest success × 1.1, rounded); no retries; a budget that
// covers the critical path; and the recommendation replayed on the same
// logs loses nothing.
func TestRecommendSeedSample(t *testing.T) {
	spans, reqs, probs := loadFile(t, "../samples/seed-chain/spans.jsonl")
	rep, p := Run(spans, reqs, probs, analyze.Options{})
	byHop := map[string][]int64{}
	for _, s := range spans {
		byHop[s.Hop] = append(byHop[s.Hop], s.Duration)
	}
	k := float64(len(spans)) / float64(len(reqs))
	q := max(0.99, 1-analyze.DefaultFalseTimeouts/k)
	var path time.Duration
	for _, h := range rep.Hops {
		xs := byHop[h.Hop]
		var want time.Duration
		if float64(len(xs))*(1-q) >= 1 {
			want = RoundUpNice(time.Duration(exactP(xs, q) * 1.1))
		} else {
			want = RoundUpNice(time.Duration(exactP(xs, 1) * 1.1))
			// 200 successes cannot certify p99.967: the tail is
			// extrapolated, and on this sample (slow modes of 8–11 s)
			// the fitted quantile falls below the slowest success ×
			// 1.1, which the timeout then covers.
			for _, w := range []string{"extrapolated: the tail of the 200 successes", "below the slowest success", "~3 calls per request share the 0.1% request target"} {
				if !strings.Contains(h.Recommendation.Basis, w) {
					t.Errorf("%s: basis %q does not say %q", h.Hop, h.Recommendation.Basis, w)
				}
			}
		}
		got := p.For(h.Hop)
		// The drift headroom (drift.go) may carry the timeout higher:
		// the seed's blocks are draws of one distribution, so it may
		// only by a little (a lower confidence bound of each block's
		// quantile, not the noisy sample quantile).
		if f := h.Recommendation.Headroom; f > 0 {
			if f > 1.25 {
				t.Errorf("%s: drift headroom ×%g on logs drawn from one distribution", h.Hop, f)
			}
			if f > 1.1 { // the 10% margin carries drift up to 1.1×
				want = max(want, RoundUpNice(time.Duration(float64(want)*f/1.1)))
			}
		}
		if got.Timeout != want {
			t.Errorf("%s: timeout %s, want %s", h.Hop, got.Timeout, want)
		}
		if got.Timeout < 10*time.Second || got.Timeout > 14*time.Second {
			t.Errorf("%s: timeout %s, want 12s-ish for a hop with an 8–11s tail", h.Hop, got.Timeout)
		}
		if got.Retries != 0 || h.Recommendation.Retries != 0 || h.Recommendation.Action != analyze.ActionSet {
			t.Errorf("%s: %+v", h.Hop, h.Recommendation)
		}
		if !strings.Contains(h.Recommendation.Basis, "× 1.10") {
			t.Errorf("%s: basis %q does not state × 1.10", h.Hop, h.Recommendation.Basis)
		}
		path += got.Timeout
	}
	// The budget comes from the requests' own tail (drift.go), not the
	// sum of the timeouts along the path: above the slowest request and
	// every hop timeout, within 3× the slowest request.
	var slowest time.Duration
	for _, r := range reqs {
		slowest = max(slowest, time.Duration(r.Latency()))
	}
	if p.Budget < slowest || p.Budget <= maxTimeout(p) || p.Budget > 3*slowest {
		t.Errorf("budget %s: want above the slowest request %s and every hop timeout, within 3× the slowest (critical path at the timeouts: %s)", p.Budget, slowest, path)
	}
	res := replay.Run(reqs, p, replay.Options{})
	if res.Succeeded != 200 {
		t.Errorf("recommendation replayed: %d/200", res.Succeeded)
	}
	eff := rep.PredictedEffect
	if len(eff) != 2 || eff[0].Policy != "as logged" || eff[1].Policy != "recommended" || eff[1].Succeeded != 200 {
		t.Errorf("predicted effect: %+v", eff)
	}
}

// Where the logs were cut at a timeout, the tail is unknown: the
// recommendation is observe-first with a canary, and never a guessed
// value presented as measured.
func TestRecommendObserveFirst(t *testing.T) {
	spans, reqs, probs := loadFile(t, "../samples/seed-chain/recorded-under-A.jsonl")
	rep, _ := Run(spans, reqs, probs, analyze.Options{})
	for _, h := range rep.Hops {
		if h.Censored == nil {
			t.Fatalf("%s: not censored", h.Hop)
		}
		r := h.Recommendation
		if r.Action != analyze.ActionObserveFirst {
			t.Errorf("%s: action %s, want observe-first (%s)", h.Hop, r.Action, r.Basis)
		}
		if !strings.Contains(r.Basis, "unknown") || !strings.Contains(r.Basis, "canary") {
			t.Errorf("%s: basis %q does not say the percentile is unknown and name a canary", h.Hop, r.Basis)
		}
		if r.TimeoutMs <= h.Censored.AtLeastMs {
			t.Errorf("%s: canary %vms does not exceed the cut at %vms", h.Hop, r.TimeoutMs, h.Censored.AtLeastMs)
		}
		if r.Retries != 0 {
			t.Errorf("%s: %d retries on a ran-to-timeout hop", h.Hop, r.Retries)
		}
	}
}

// A 300 ms forwarder next to a 10 s generator gets its own timeout.
func TestRecommendPerHop(t *testing.T) {
	data := spantest.Chain(3, 2000, []string{"forward", "generate"}, func(rng *rand.Rand, h int) (time.Duration, bool) {
		if h == 0 {
			return time.Duration(100+rng.IntN(200)) * time.Millisecond, false
		}
		return time.Duration(5000+rng.IntN(5000)) * time.Millisecond, false
	})
	spans, reqs, probs := loadBytes(t, data)
	_, p := Run(spans, reqs, probs, analyze.Options{})
	f, g := p.For("forward").Timeout, p.For("generate").Timeout
	if f > 400*time.Millisecond || g < 10*time.Second || g > 11500*time.Millisecond {
		t.Errorf("forward %s, generate %s: want ~330ms and ~11s", f, g)
	}
}

// Held-out shapes with a known true p99: the recommendation lands within
// 15% of true p99 × (1 + margin).
func TestRecommendAccuracy(t *testing.T) {
	type shape struct {
		name string
		p99  float64 // true p99, ns
		draw func(rng *rand.Rand) time.Duration
	}
	const z99 = 2.3263478740408408
	logn := func(medianMs, sigma float64) shape {
		return shape{fmt.Sprintf("lognormal(%gms,%g)", medianMs, sigma), medianMs * 1e6 * math.Exp(sigma*z99), func(rng *rand.Rand) time.Duration {
			return time.Duration(medianMs * 1e6 * math.Exp(sigma*rng.NormFloat64()))
		}}
	}
	shapes := []shape{
		logn(40, 0.5), logn(300, 0.8), logn(2000, 0.3),
		{"uniform 200–700ms", (200 + 0.99*500) * 1e6, func(rng *rand.Rand) time.Duration {
			return time.Duration((200 + 500*rng.Float64()) * 1e6)
		}},
		{"bimodal 95% 100ms / 5% 8–11s", 8e9 + 3e9*(0.99-0.95)/0.05, func(rng *rand.Rand) time.Duration {
			if rng.Float64() < 0.95 {
				return time.Duration(80+rng.IntN(40)) * time.Millisecond
			}
			return time.Duration(8e9 + 3e9*rng.Float64())
		}},
	}
	for i, sh := range shapes {
		for _, margin := range []float64{0.10, 0.25} {
			data := spantest.Chain(uint64(10+i), 5000, []string{"hop"}, func(rng *rand.Rand, _ int) (time.Duration, bool) { return sh.draw(rng), false })
			spans, reqs, probs := loadBytes(t, data)
			// One call per request and a 1% request-level target: the
			// per-call percentile is p99 itself.
			_, p := Run(spans, reqs, probs, analyze.Options{Margin: margin, FalseTimeouts: 0.01})
			got := float64(p.For("hop").Timeout)
			want := sh.p99 * (1 + margin)
			if math.Abs(got-want)/want > 0.15 {
				t.Errorf("%s margin %.2f: timeout %s, true p99 × %.2f = %s", sh.name, margin, time.Duration(got), 1+margin, time.Duration(want))
			}
		}
	}
}

// A hop whose fast errors are cured by a retry gets retries with backoff;
// one whose failures run to the timeout gets none.
func TestRecommendRetries(t *testing.T) {
	var b bytes.Buffer
	rng := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 400; i++ {
		t0 := int64(1e18) + int64(i)*int64(time.Second)
		// flaky: 10% fast 503s, retried once, the retry succeeds.
		d := int64(50+rng.IntN(100)) * int64(time.Millisecond)
		if rng.IntN(10) == 0 {
			fmt.Fprintf(&b, `{"trace_id":"r%d","span_id":"a%d","hop":"flaky","start":%d,"duration_ms":5,"status":"error","code":503,"attempt":1}`+"\n", i, i, t0)
			t0 += 5e6
			fmt.Fprintf(&b, `{"trace_id":"r%d","span_id":"b%d","hop":"flaky","start":%d,"duration_ns":%d,"status":"ok","attempt":2}`+"\n", i, i, t0, d)
		} else {
			fmt.Fprintf(&b, `{"trace_id":"r%d","span_id":"a%d","hop":"flaky","start":%d,"duration_ns":%d,"status":"ok","attempt":1}`+"\n", i, i, t0, d)
		}
		t0 += d
		// wall: 5% persistently slow, cut at 1s twice.
		if rng.IntN(20) == 0 {
			for k := 1; k <= 2; k++ {
				fmt.Fprintf(&b, `{"trace_id":"r%d","span_id":"w%d-%d","hop":"wall","start":%d,"duration_ms":1000,"status":"error","timeout":true,"attempt":%d}`+"\n", i, i, k, t0, k)
				t0 += 1e9
			}
		} else {
			fmt.Fprintf(&b, `{"trace_id":"r%d","span_id":"w%d","hop":"wall","start":%d,"duration_ms":200,"status":"ok","attempt":1}`+"\n", i, i, t0)
		}
	}
	spans, reqs, probs := loadBytes(t, b.Bytes())
	_, p := Run(spans, reqs, probs, analyze.Options{})
	if h := p.For("flaky"); h.Retries < 1 || h.Backoff.Base <= 0 || !h.BudgetAware {
		t.Errorf("flaky: %+v, want retries with backoff, budget-aware", h)
	}
	if h := p.For("wall"); h.Retries != 0 {
		t.Errorf("wall: %d retries on a hop whose failures run to the timeout", h.Retries)
	}
	// The policy file round-trips through the parser.
	back, err := policy.Parse("rec.yaml", p.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"flaky", "wall"} {
		if back.For(h) != p.For(h) {
			t.Errorf("%s: wrote %+v, read back %+v", h, p.For(h), back.For(h))
		}
	}
	if back.Budget != p.Budget {
		t.Errorf("budget %s read back as %s", p.Budget, back.Budget)
	}
}

func TestRecommendMaxBudget(t *testing.T) {
	spans, reqs, probs := loadFile(t, "../samples/seed-chain/spans.jsonl")
	// The budget from the requests' tail is 15s (their slowest took
	// 11.7s): a 12s cap is below it.
	rep, repRec := Run(spans, reqs, probs, analyze.Options{MaxBudget: 12 * time.Second, Names: angled})
	if repRec.Budget != 12*time.Second {
		t.Errorf("budget %s, want the 12s cap", repRec.Budget)
	}
	found := false
	for _, w := range rep.Warnings {
		if w.Code == "budget-capped" {
			found = true
			if !strings.Contains(w.Message, "but <MaxBudget> is 12s") {
				t.Errorf("the warning does not name MaxBudget by the caller's Names: %s", w.Message)
			}
		}
	}
	if !found {
		t.Error("no budget-capped warning saying what had to give")
	}
}

// Spans longer than a policy can hold get the longest timeout a policy
// holds, with a warning, so that the written policy reads back.
func TestRecommendCapsDurations(t *testing.T) {
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, `{"trace_id":"t%d","span_id":"s%d","hop":"batch","start":%d,"duration_ms":%d}`+"\n", i, i, 1_700_000_000_000_000_000+int64(i)*1e9, int64(2000*time.Hour/time.Millisecond)+int64(i))
	}
	spans, reqs, probs := loadBytes(t, []byte(b.String()))
	rep, p := Run(spans, reqs, probs, analyze.Options{})
	if got := p.For("batch").Timeout; got != policy.MaxDuration || p.Budget != policy.MaxDuration {
		t.Errorf("timeout %s, budget %s: want both capped at %s", got, p.Budget, policy.MaxDuration)
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || w.Code == "duration-capped"
	}
	if !found {
		t.Errorf("no duration-capped warning: %+v", rep.Warnings)
	}
	if _, err := policy.Parse("p.yaml", p.Marshal()); err != nil {
		t.Errorf("the recommended policy does not read back: %v", err)
	}
}

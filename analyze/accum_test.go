package analyze

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/tailscope/tailscope/span"
)

// chainSpans generates requests over a root and three hops, with
// retries, timeouts and a persistent tail: enough structure that every
// part of a report has something to say.
func chainSpans(seed uint64, traces int) []span.Span {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []span.Span
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	for i := range traces {
		id := string(rune('a'+i%26)) + time.Duration(i).String()
		at := t0 + int64(i)*int64(time.Second)
		start := at
		failed := false
		var kids []span.Span
		for hi, hop := range []string{"forward", "retrieve", "generate"} {
			slow := r.Float64() < 0.08 && hi > 0
			for k := 1; k <= 3; k++ {
				lat := int64(float64(200*time.Millisecond) * math.Exp(0.5*r.NormFloat64()))
				s := span.Span{TraceID: id, SpanID: id + hop + string(rune('0'+k)), ParentID: id + "root", Hop: hop, Start: at, Attempt: k, Weight: 1, TimeoutInForce: int64(3 * time.Second)}
				switch {
				case slow:
					s.Duration, s.Status, s.Timeout = int64(3*time.Second)+r.Int64N(1e6), span.Error, true
				case r.Float64() < 0.03:
					s.Duration, s.Status, s.Code = int64(5*time.Millisecond), span.Error, 503
				default:
					s.Duration, s.Status = lat, span.OK
				}
				kids = append(kids, s)
				at += s.Duration
				if !s.Failed() {
					break
				}
				if k == 3 {
					failed = true
				}
			}
			if failed {
				break
			}
		}
		root := span.Span{TraceID: id, SpanID: id + "root", Hop: "gateway", Start: start, Duration: at - start + 1e6, Status: span.OK, Weight: 1}
		if failed {
			root.Status = span.Error
		}
		out = append(out, root)
		out = append(out, kids...)
	}
	return out
}

func reportJSON(t *testing.T, rep *Report) []byte {
	b, err := json.MarshalIndent(rep, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Exact mode: when everything fits, the streaming path gives the same
// report, byte for byte, as Run over all spans — on the seed sample and
// on generated chains.
func TestAccumExactSameReport(t *testing.T) {
	sets := map[string][]span.Span{"generated": chainSpans(1, 3000)}
	for _, f := range []string{"spans.jsonl", "recorded-under-A.jsonl"} {
		sets[f] = seedSpans(t, filepath.Join("..", "samples", "seed-chain", f))
	}
	for name, ss := range sets {
		acc := NewAccum(0)
		for i := range ss {
			acc.Add(&ss[i])
		}
		if acc.Sampled() {
			t.Fatalf("%s: sampled", name)
		}
		reqs, probs := span.Assemble(ss)
		want := reportJSON(t, analysed(ss, reqs, probs, Options{}))
		if got := reportJSON(t, measured(acc, Options{})); !bytes.Equal(got, want) {
			t.Errorf("%s: streaming report differs from Run", name)
		}
	}
}

// seedSpans reads a flat JSON-lines file with encoding/json (package
// analyze must not import the reader). The seed files are in the
// repository: one that cannot be read fails the test, rather than leave
// it comparing fewer sets than it says.
func seedSpans(t *testing.T, path string) []span.Span {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no %s: %v", path, err)
	}
	var out []span.Span
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var m struct {
			TraceID    string  `json:"trace_id"`
			SpanID     string  `json:"span_id"`
			ParentID   string  `json:"parent_id"`
			Hop        string  `json:"hop"`
			Start      int64   `json:"start"`
			DurationMs float64 `json:"duration_ms"`
			Status     string  `json:"status"`
			Timeout    bool    `json:"timeout"`
			Attempt    int     `json:"attempt"`
			TimeoutMs  float64 `json:"timeout_ms"`
		}
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		s := span.Span{TraceID: m.TraceID, SpanID: m.SpanID, ParentID: m.ParentID, Hop: m.Hop, Start: m.Start,
			Duration: int64(math.Round(m.DurationMs * 1e6)), Timeout: m.Timeout, Attempt: m.Attempt,
			TimeoutInForce: int64(math.Round(m.TimeoutMs * 1e6)), Weight: 1}
		if m.Status == "error" || m.Timeout {
			s.Status = span.Error
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no spans", path)
	}
	return out
}

// Sampled mode: the per-hop counts and percentiles stay those over all
// spans (exact here: every hop is under ExactLimit), the sample is stated,
// and the sample is the same whatever the order of the input.
func TestAccumSampled(t *testing.T) {
	ss := chainSpans(2, 4000)
	reqs, probs := span.Assemble(ss)
	full := analysed(ss, reqs, probs, Options{})
	acc := NewAccum(2000)
	for i := range ss {
		acc.Add(&ss[i])
	}
	if !acc.Sampled() || len(acc.Spans()) > 2000 {
		t.Fatalf("sampled %v, %d spans kept", acc.Sampled(), len(acc.Spans()))
	}
	rep := measured(acc, Options{})
	if rep.Sample == nil || rep.Sample.TotalSpans != int64(len(ss)) || rep.Sample.Traces >= len(reqs) {
		t.Fatalf("sample: %+v", rep.Sample)
	}
	byHop := map[string]Hop{}
	for _, h := range full.Hops {
		byHop[h.Hop] = h
	}
	for _, h := range rep.Hops {
		w := byHop[h.Hop]
		if h.Attempts != w.Attempts || h.FailedAttempts != w.FailedAttempts || h.TimeoutAttempts != w.TimeoutAttempts {
			t.Errorf("%s: counts %d/%d/%d, want %d/%d/%d", h.Hop, h.Attempts, h.FailedAttempts, h.TimeoutAttempts, w.Attempts, w.FailedAttempts, w.TimeoutAttempts)
		}
		for _, p := range [][2]any{{h.LatencyMs, w.LatencyMs}, {h.SuccessLatencyMs, w.SuccessLatencyMs}, {h.Censored, w.Censored}, {h.FailureHistogram, w.FailureHistogram}, {h.LatencyHistogram, w.LatencyHistogram}, {h.Recommendation.TimeoutMs, w.Recommendation.TimeoutMs}} {
			if !reflect.DeepEqual(p[0], p[1]) {
				a, _ := json.Marshal(p[0])
				b, _ := json.Marshal(p[1])
				t.Errorf("%s: %s, want %s", h.Hop, a, b)
			}
		}
	}
	// A hop too rare to reach the sample is still reported, over all spans.
	rare := NewAccum(2000)
	for i := range ss {
		rare.Add(&ss[i])
	}
	odd := span.Span{TraceID: "not-sampled", Hop: "rare", Duration: 5e6, Weight: 1}
	for x := 0; hashID(odd.TraceID)>>(64-rare.level) == 0; x++ {
		odd.TraceID = "not-sampled-" + time.Duration(x).String()
	}
	rare.Add(&odd)
	found := false
	for _, h := range measured(rare, Options{}).Hops {
		if h.Hop == "rare" {
			found = h.Attempts == 1 && h.LatencyMs.P50 != nil && *h.LatencyMs.P50 == 5
		}
	}
	if !found {
		t.Error("a hop outside the sample is missing or wrong")
	}
	// Any order of the input keeps the same traces.
	rev := NewAccum(2000)
	for i := len(ss) - 1; i >= 0; i-- {
		rev.Add(&ss[i])
	}
	if !bytes.Equal(reportJSON(t, measured(rev, Options{})), reportJSON(t, rep)) {
		t.Error("the sample depends on the order of the input")
	}
}

// A trace larger than the sample limit, up to maxHold times it, is kept
// whole rather than leaving an empty sample (a larger one leaves the
// sample: TestGiantTraceLeavesTheSample).
func TestAccumOneHugeTrace(t *testing.T) {
	acc := NewAccum(100)
	acc.noHoldFloor = true
	n := maxHold * 100
	for i := range n {
		acc.Add(&span.Span{TraceID: "big", SpanID: time.Duration(i).String(), Hop: "h", Duration: int64(i+1) * 1e6, Weight: 1})
	}
	if len(acc.Spans()) != n || acc.Sampled() {
		t.Fatalf("kept %d spans, sampled %v", len(acc.Spans()), acc.Sampled())
	}
	if rep := measured(acc, Options{}); rep.Requests.Count != 1 || len(rep.Hops) != 1 || rep.Hops[0].Attempts != n {
		t.Errorf("report: %d requests, hops %+v", rep.Requests.Count, len(rep.Hops))
	}
}

func BenchmarkAccumAdd(b *testing.B) {
	ss := chainSpans(3, 20_000)
	b.ReportAllocs()
	for b.Loop() {
		acc := NewAccum(10_000)
		for i := range ss {
			acc.Add(&ss[i])
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(ss))/b.Elapsed().Seconds(), "spans/s")
}

func BenchmarkAnalyze(b *testing.B) {
	ss := chainSpans(4, 20_000)
	b.ReportAllocs()
	for b.Loop() {
		acc := NewAccum(0)
		for i := range ss {
			acc.Add(&ss[i])
		}
		measured(acc, Options{})
	}
}

// TestAccumSampleOwnsIDs feeds spans whose ids alias one buffer the
// caller overwrites after each Add (as readers with borrowed ids do):
// the sample must keep each span's ids as they were, a trace's spans
// sharing their trace id or not, empty ids included.
func TestAccumSampleOwnsIDs(t *testing.T) {
	a := NewAccum(0)
	buf := make([]byte, 64)
	type ids struct{ trace, span, parent string }
	var want []ids
	for i := range 50 {
		tr := fmt.Sprintf("t%03d", i/4)
		if i%7 == 0 {
			tr = "" // its own trace
		}
		sp := fmt.Sprintf("s%03d", i)
		par := ""
		if i%4 != 0 {
			par = fmt.Sprintf("s%03d", i-1)
		}
		n := copy(buf, tr)
		n += copy(buf[n:], sp)
		copy(buf[n:], par)
		s := span.Span{Hop: "h", Duration: 1,
			TraceID:  unsafe.String(&buf[0], len(tr)),
			SpanID:   unsafe.String(&buf[len(tr)], len(sp)),
			ParentID: unsafe.String(&buf[len(tr)+len(sp)], len(par))}
		if par == "" {
			s.ParentID = ""
		}
		a.Add(&s)
		for j := range buf {
			buf[j] = 'x'
		}
		want = append(want, ids{tr, sp, par})
	}
	if len(a.Spans()) != len(want) {
		t.Fatalf("sample holds %d spans, want %d", len(a.Spans()), len(want))
	}
	for i, s := range a.Spans() {
		if got := (ids{s.TraceID, s.SpanID, s.ParentID}); got != want[i] {
			t.Errorf("span %d: ids %q, want %q", i, got, want[i])
		}
	}
}

// Hops outside the trace sample are filled in name order: their warnings
// (too few attempts for a percentile, one a hop) came out in the order a
// map gave them, so the same logs made a different report at each run.
func TestUnsampledHopsInNameOrder(t *testing.T) {
	ss := chainSpans(2, 4000)
	var rare []span.Span
	for i := range 40 {
		odd := span.Span{Hop: fmt.Sprintf("rare-%02d", i), Duration: 5e6, Weight: 1}
		probe := NewAccum(2000)
		for j := range ss {
			probe.Add(&ss[j])
		}
		for x := 0; ; x++ { // a trace the sample does not keep
			odd.TraceID = fmt.Sprintf("not-sampled-%d-%d", i, x)
			if hashID(odd.TraceID)>>(64-probe.level) != 0 {
				break
			}
		}
		rare = append(rare, odd)
	}
	var first []byte
	for run := range 5 {
		acc := NewAccum(2000)
		for j := range ss {
			acc.Add(&ss[j])
		}
		for j := range rare {
			acc.Add(&rare[j])
		}
		rep := measured(acc, Options{})
		var names []string
		for _, w := range rep.Warnings {
			if strings.HasPrefix(w.Hop, "rare-") {
				names = append(names, w.Hop)
			}
		}
		if len(names) < len(rare) || !slices.IsSorted(names) {
			t.Fatalf("run %d: the unsampled hops' warnings are not one a hop in name order: %v", run, names)
		}
		b := reportJSON(t, rep)
		if run == 0 {
			first = b
		} else if !bytes.Equal(b, first) {
			t.Fatalf("run %d: the report differs from the first run's", run)
		}
	}
}

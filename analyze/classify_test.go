package analyze

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/span/spantest"
)

// TestClassify checks each generated hop against its known truth, and that
// the evidence sentence carries numbers recomputed from the spans.
func TestClassify(t *testing.T) {
	s := time.Second
	ms := time.Millisecond
	cases := []struct {
		name string
		sc   spantest.Scenario
		want string
		// evidence must match these patterns.
		evidence []string
		// wantT is the true timeout when the analysis must find it (0: skip).
		wantT time.Duration
	}{
		{name: "persistent slowness, no retries, marked",
			sc:   spantest.Scenario{Timeout: 3 * s, Attempt: spantest.Persistent(0.1, 8*s, 11*s), Mark: true},
			want: ClassRanToTimeout, evidence: []string{`^(\d+) of (\d+) failures within 0\.[1-3]% of 3s`, `no retries in the logs`}, wantT: 3 * s},
		{name: "persistent slowness, 2 retries, 100ms backoff, marked",
			sc:   spantest.Scenario{Timeout: 2 * s, Retries: 2, Backoff: 100 * ms, Attempt: spantest.Persistent(0.08, 5*s, 9*s), Mark: true},
			want: ClassRanToTimeout, evidence: []string{`failures within 0\.[1-3]% of 2s`, `retry yield after timeouts 0/\d+`, `end within 2% of k×2s \+ \(k−1\)×100ms backoff \(6\.2s at k = 3\)`}, wantT: 2 * s},
		{name: "persistent slowness, 1 retry, unmarked, no attribute: inferred",
			sc:   spantest.Scenario{Timeout: 1500 * ms, Retries: 1, Attempt: spantest.Persistent(0.1, 4*s, 6*s), Noise: 0.01},
			want: ClassRanToTimeout, evidence: []string{`failures within 1(\.\d)?% of 1\.5s`, `retry yield after timeouts 0/\d+`}, wantT: 1500 * ms},
		{name: "persistent slowness, span attribute, odd timeout",
			sc:   spantest.Scenario{Timeout: 2750 * ms, Attempt: spantest.Persistent(0.05, 4*s, 6*s), Attr: true},
			want: ClassRanToTimeout, evidence: []string{`failures within 0\.[1-3]% of 2\.75s`}, wantT: 2750 * ms},
		{name: "fast 503s that retries fix",
			sc:   spantest.Scenario{Timeout: 2 * s, Retries: 2, Attempt: spantest.FastErrors(0.08, 503), Mark: true, Attr: true},
			want: ClassTransient, evidence: []string{`^(\d+) of (\d+) failures ended away from the timeout: (\d+) fast \(under 1s\)`, `503×\d+ \(transient\)`, `retry yield after other errors (\d+)/(\d+)`}},
		{name: "fast 429s, no timeout known, no retries",
			sc:   spantest.Scenario{Attempt: spantest.FastErrors(0.1, 429)},
			want: ClassTransient, evidence: []string{`no timeout known or inferred`, `429×\d+ \(transient\)`}},
		{name: "latency jitter cut at the timeout, retries recover",
			sc:   spantest.Scenario{Timeout: time.Second, Retries: 2, Attempt: spantest.Jitter(300*ms, 0.8), Mark: true},
			want: ClassTransient, evidence: []string{`failures within 0\.[1-3]% of 1s`, `retries after a timeout recovered (\d+) of (\d+): the slowness is jitter`}, wantT: time.Second},
		{name: "errors spread across many durations",
			sc:   spantest.Scenario{Timeout: 3 * s, Attempt: spantest.SpreadErrors(0.1, 50*ms, 2900*ms, 0), Mark: true, Attr: true},
			want: ClassTransient, evidence: []string{`^\d+ of \d+ failures ended away from the timeout`, `no pile-up \(densest 2% band holds \d\)`}},
		{name: "healthy",
			sc:   spantest.Scenario{Timeout: 3 * s, Retries: 2, Attempt: spantest.Healthy, Mark: true},
			want: ClassNone, evidence: []string{`^no failed attempts$`}},
		{name: "three failures",
			sc:   spantest.Scenario{Timeout: 3 * s, Retries: 1, Attempt: spantest.FailFirst(3), Mark: true},
			want: ClassTooFew, evidence: []string{`^3 failed attempts: too few`}},
		{name: "half persistent timeouts, half fast 503s",
			sc:   spantest.Scenario{Timeout: 3 * s, Attempt: spantest.Both(spantest.Persistent(0.1, 8*s, 11*s), spantest.FastErrors(0.1, 503), func(i int) bool { return i%2 == 0 }), Mark: true},
			want: ClassMixed, evidence: []string{`failures within 0\.[1-3]% of 3s`, `ended away from the timeout`}, wantT: 3 * s},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.sc.Hop = fmt.Sprintf("hop-%d", i)
			if c.sc.Calls == 0 {
				c.sc.Calls = 400
			}
			spans := spantest.Build(uint64(100+i), c.sc)
			h := hopOf(analyse(spans, Options{}), c.sc.Hop)
			if h == nil {
				t.Fatal("hop missing from the report")
			}
			t.Logf("%s: %s (timeout %v, %s)", h.FailureClass, h.Evidence, fmtPtr(h.TimeoutMs), h.TimeoutSource)
			if h.FailureClass != c.want {
				t.Errorf("class %s, want %s; evidence: %s", h.FailureClass, c.want, h.Evidence)
			}
			for _, p := range c.evidence {
				if !regexp.MustCompile(p).MatchString(h.Evidence) {
					t.Errorf("evidence %q does not match %q", h.Evidence, p)
				}
			}
			// Counts in the evidence are the spans' own.
			failed, cut := 0, 0
			for _, s := range spans {
				if s.Failed() {
					failed++
					if s.Timeout || (c.wantT > 0 && math.Abs(float64(s.Duration-int64(c.wantT))) <= 0.02*float64(c.wantT)) {
						cut++
					}
				}
			}
			if h.FailedAttempts != failed {
				t.Errorf("failed attempts %d, spans say %d", h.FailedAttempts, failed)
			}
			if m := regexp.MustCompile(`(\d+) of (\d+) failures within`).FindStringSubmatch(h.Evidence); m != nil {
				if m[1] != strconv.Itoa(cut) || m[2] != strconv.Itoa(failed) {
					t.Errorf("evidence says %s of %s failures at the timeout, spans say %d of %d", m[1], m[2], cut, failed)
				}
			}
			if c.wantT > 0 {
				if h.TimeoutMs == nil {
					t.Fatalf("timeout unknown (%s), want %s", h.TimeoutSource, c.wantT)
				}
				if got := time.Duration(*h.TimeoutMs * 1e6); math.Abs(float64(got-c.wantT)) > 0.02*float64(c.wantT) {
					t.Errorf("timeout %s (%s), want %s ±2%%", got, h.TimeoutSource, c.wantT)
				}
			}
		})
	}
}

// TestClassifyRetryYieldNumbers: the yield in the evidence and in the
// report is the count of retries after each kind of failure.
func TestClassifyRetryYieldNumbers(t *testing.T) {
	sc := spantest.Scenario{Hop: "h", Calls: 300, Timeout: 2 * time.Second, Retries: 2, Mark: true,
		Attempt: spantest.Both(spantest.Persistent(0.2, 5*time.Second, 6*time.Second), spantest.FastErrors(0.3, 503), func(i int) bool { return i%2 == 0 })}
	spans := spantest.Build(7, sc)
	h := hopOf(analyse(spans, Options{}), "h")
	// Recount from the spans: attempt k failed and attempt k+1 exists.
	type key struct {
		trace string
		k     int
	}
	byKey := map[key]int{}
	for i, s := range spans {
		byKey[key{s.TraceID, s.Attempt}] = i
	}
	var want Yield
	calls := map[string]bool{}
	recovered := map[string]bool{}
	for _, s := range spans {
		j, ok := byKey[key{s.TraceID, s.Attempt + 1}]
		if !s.Failed() || !ok {
			if s.Attempt > 1 {
				calls[s.TraceID] = true
				recovered[s.TraceID] = !s.Failed()
			}
			continue
		}
		tr := &want.AfterFastFailure
		if s.Timeout {
			tr = &want.AfterTimeout
		}
		tr.Retried++
		if !spans[j].Failed() {
			tr.Succeeded++
		}
	}
	want.RetriedCalls = len(calls)
	for _, ok := range recovered {
		if ok {
			want.Recovered++
		}
	}
	y := h.RetryYield
	if y == nil {
		t.Fatal("no retry yield")
	}
	if y.AfterTimeout != want.AfterTimeout || y.AfterFastFailure != want.AfterFastFailure || y.RetriedCalls != want.RetriedCalls || y.Recovered != want.Recovered {
		t.Errorf("yield %+v, want %+v", *y, want)
	}
	if y.AfterTimeout.Succeeded != 0 {
		t.Errorf("persistent slowness: %d retries after a timeout succeeded", y.AfterTimeout.Succeeded)
	}
	if y.AfterFastFailure.Retried == 0 || float64(y.AfterFastFailure.Succeeded) < 0.5*float64(y.AfterFastFailure.Retried) {
		t.Errorf("fast errors at 30%%: retries should mostly succeed, got %+v", y.AfterFastFailure)
	}
	if h.FailureClass != ClassMixed {
		t.Errorf("class %s, want mixed: %s", h.FailureClass, h.Evidence)
	}
	for _, frag := range []string{
		fmt.Sprintf("after timeouts %d/%d", want.AfterTimeout.Succeeded, want.AfterTimeout.Retried),
		fmt.Sprintf("after other errors %d/%d", want.AfterFastFailure.Succeeded, want.AfterFastFailure.Retried),
	} {
		if !strings.Contains(h.Evidence, frag) {
			t.Errorf("evidence %q lacks %q", h.Evidence, frag)
		}
	}
	if retryYield(nil, nil) != nil {
		t.Error("no calls: yield must be nil (not measured), not 0")
	}
}

// TestClassifyWholeCallSpans: a log with one span per call (retries
// inside it) piles at k×T + backoffs; with the policy in force the echoes
// count as runs to the timeout.
func TestClassifyWholeCallSpans(t *testing.T) {
	// Under the policy: 3s, 2 retries, 100ms backoff → whole-call failures
	// at 9.2s.
	sc := spantest.Scenario{Hop: "h", Calls: 300, Timeout: 9200 * time.Millisecond, Attempt: spantest.Persistent(0.1, 12*time.Second, 14*time.Second)}
	spans := spantest.Build(11, sc)
	p := &policy.Policy{Default: policy.Hop{Timeout: 3 * time.Second, Retries: 2, Backoff: policy.Backoff{Base: 100 * time.Millisecond, Max: 100 * time.Millisecond}}}
	h := hopOf(analyse(spans, Options{PolicyInForce: p}), "h")
	if h.FailureClass != ClassRanToTimeout {
		t.Errorf("class %s, want ran-to-timeout: %s", h.FailureClass, h.Evidence)
	}
	if !strings.Contains(h.Evidence, "at k×3s + backoff (whole calls)") {
		t.Errorf("evidence %q does not name the echo", h.Evidence)
	}
	if h.TimeoutSource != SourcePolicy {
		t.Errorf("timeout source %q, want policy", h.TimeoutSource)
	}
}

// TestInferTimeout: the timeout inferred from unmarked failures lands
// within 2% of the truth when at least 10 failures ran to it, over many
// timeouts and noise levels, and nothing is inferred from scatter or from
// a pile of fast errors below the successes.
func TestInferTimeout(t *testing.T) {
	timeouts := []time.Duration{80 * time.Millisecond, 450 * time.Millisecond, 750 * time.Millisecond, 1200 * time.Millisecond,
		2500 * time.Millisecond, 2750 * time.Millisecond, 3 * time.Second, 4200 * time.Millisecond, 10 * time.Second, 30 * time.Second}
	for i, T := range timeouts {
		for _, noise := range []float64{0, 0.005, 0.015} {
			// 12 of 200 calls slow enough to hit T; the rest below T/2.
			sc := spantest.Scenario{Hop: "h", Calls: 200, Timeout: T, Noise: noise + 1e-9,
				Attempt: func(r *rand.Rand, i, k int) (time.Duration, int) {
					if i%17 == 0 {
						return 3 * T, 0
					}
					return spantest.Uniform(r, T/10, T/2), 0
				}}
			spans := spantest.Build(uint64(i), sc)
			h := hopOf(analyse(spans, Options{}), "h")
			if h.TimeoutMs == nil {
				t.Errorf("T=%s noise=%.3f: no timeout inferred", T, noise)
				continue
			}
			got := time.Duration(*h.TimeoutMs * 1e6)
			if math.Abs(float64(got-T)) > 0.02*float64(T) || h.TimeoutSource != SourcePile {
				t.Errorf("T=%s noise=%.3f: inferred %s (%s)", T, noise, got, h.TimeoutSource)
			}
			if h.FailureClass != ClassRanToTimeout || h.Censored == nil {
				t.Errorf("T=%s: class %s, censored %v", T, h.FailureClass, h.Censored)
			}
		}
	}
	if _, ok := InferPile([]int64{1e6, 2e6, 3e6, 4e6, 5e6, 6e6, 7e6, 8e6, 9e6, 10e6}, nil); ok {
		t.Error("inferred a timeout from scattered failures")
	}
	pile := []int64{5e6, 5e6, 5.01e6, 5.02e6, 5.03e6, 5.04e6}
	if _, ok := InferPile(pile, []int64{100e6, 200e6, 300e6}); ok {
		t.Error("inferred a timeout from fast errors below every success")
	}
	if v, ok := InferPile(pile, []int64{1e6, 2e6, 3e6}); !ok || v != 5e6 {
		t.Errorf("pile at 5ms above the successes: got %d %v", v, ok)
	}
	if _, ok := InferPile(pile[:4], nil); ok {
		t.Error("inferred a timeout from 4 failures")
	}
}

func fmtPtr(v *float64) string {
	if v == nil {
		return "null"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// Codes that are no number are error kinds: counted in the evidence as
// logged, connection-level ones marked transient.
func TestEvidenceCountsTextCodes(t *testing.T) {
	var b strings.Builder
	for i := range 40 {
		code, status := `200`, `"ok"`
		switch i % 8 {
		case 0:
			code, status = `"ECONNRESET"`, `"error"`
		case 1:
			code, status = `"no such table"`, `"error"`
		}
		fmt.Fprintf(&b, `{"trace_id":"t%d","span_id":"s%d","hop":"db","start":%d,"duration_ms":%d,"status":%s,"code":%s,"timeout_ms":1000}`+"\n",
			i, i, 1_700_000_000_000_000_000+int64(i)*1e9, 5+i%7, status, code)
	}
	spans, reqs, probs := loadBytes(t, []byte(b.String()))
	rep := analysed(spans, reqs, probs, Options{})
	ev := rep.Hops[0].Evidence
	if !strings.Contains(ev, "ECONNRESET×5 (transient)") || !strings.Contains(ev, "no such table×5") || strings.Contains(ev, "no such table×5 (transient)") {
		t.Errorf("evidence %q: want ECONNRESET×5 (transient) and no such table×5", ev)
	}
}

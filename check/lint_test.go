package check

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/recommend"
	"github.com/tailscope/tailscope/span"
)

// ---- helpers ----

const seedDir = "../samples/seed-chain"

// readSpans reads a span file with the real reader.
func readSpans(t *testing.T, path string) []span.Span {
	t.Helper()
	var out []span.Span
	st, err := ingest.Read([]string{path}, ingest.Options{}, ingest.SinkFunc(func(s *span.Span) { out = append(out, *s) }))
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if st.Skipped > 0 {
		t.Fatalf("read %s: %d records skipped", path, st.Skipped)
	}
	return out
}

// readSpansLoose reads a file that may have bad records (real traces).
func readSpansLoose(t *testing.T, path string, opt ingest.Options) []span.Span {
	t.Helper()
	var out []span.Span
	if _, err := ingest.Read([]string{path}, opt, ingest.SinkFunc(func(s *span.Span) { out = append(out, *s) })); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return out
}

type logs struct {
	spans []span.Span
	reqs  []*span.Request
	rep   *analyze.Report
	// rec is the policy recommended with rep.
	rec *policy.Policy
}

func analyse(spans []span.Span, inForce *policy.Policy) *logs {
	reqs, probs := span.Assemble(spans)
	rep, rec := recommend.Run(spans, reqs, probs, analyze.Options{PolicyInForce: inForce})
	return &logs{spans: spans, reqs: reqs, rep: rep, rec: rec}
}

func loadPolicy(t *testing.T, path string) *policy.Policy {
	t.Helper()
	p, err := policy.Load(path)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return p
}

func parsePolicy(t *testing.T, yaml string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("parse policy: %v\n%s", err, yaml)
	}
	return p
}

func findings(fs []Finding, code, hop string) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Code == code && (hop == "*" || f.Hop == hop) {
			out = append(out, f)
		}
	}
	return out
}

func one(t *testing.T, fs []Finding, code, hop, sev string) Finding {
	t.Helper()
	got := findings(fs, code, hop)
	if len(got) != 1 {
		t.Fatalf("want one %s on %q, got %d; all findings:\n%s", code, hop, len(got), dump(fs))
	}
	if got[0].Severity != sev {
		t.Fatalf("%s on %q: severity %s, want %s: %s", code, hop, got[0].Severity, sev, got[0].Message)
	}
	return got[0]
}

func none(t *testing.T, fs []Finding, code string) {
	t.Helper()
	if got := findings(fs, code, "*"); len(got) > 0 {
		t.Fatalf("want no %s, got:\n%s", code, dump(got))
	}
}

func dump(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s %s: %s\n", f.Severity, f.Code, f.Hop, f.Message)
	}
	return b.String()
}

func contains(t *testing.T, f Finding, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(f.Message, p) {
			t.Errorf("%s %s: message lacks %q:\n  %s", f.Code, f.Hop, p, f.Message)
		}
	}
}

// att is one attempt of a synthetic call.
type att struct {
	d       time.Duration
	timeout bool // cut by a timeout
	err     bool // a fast error
}

// call is a synthetic call: a hop and its attempts, in order.
type call struct {
	hop  string
	atts []att
}

// chain builds one trace per element of reqs, its calls one after the
// other without parents (like the seed sample).
func chain(reqs ...[]call) []span.Span {
	var out []span.Span
	for i, r := range reqs {
		tid := fmt.Sprintf("t%04d", i)
		t := int64(1_700_000_000_000_000_000) + int64(i)*int64(time.Minute)
		n := 0
		for _, c := range r {
			for k, a := range c.atts {
				n++
				s := span.Span{TraceID: tid, SpanID: fmt.Sprintf("%s-%d", tid, n), Hop: c.hop, Start: t,
					Duration: int64(a.d), Status: span.OK, Attempt: k + 1, Weight: 1}
				if a.timeout {
					s.Status, s.Timeout = span.Error, true
				}
				if a.err {
					s.Status = span.Error
				}
				out = append(out, s)
				t += int64(a.d)
			}
		}
	}
	return out
}

func ok(d time.Duration) att { return att{d: d} }

func ms(x int) time.Duration { return time.Duration(x) * time.Millisecond }

// ---- the seed sample (the article's configs) ----

func TestSeedD_DeadRetries(t *testing.T) {
	l := analyse(readSpans(t, filepath.Join(seedDir, "spans.jsonl")), nil)
	p := loadPolicy(t, filepath.Join(seedDir, "D.yaml"))
	fs := Lint(l.rep, l.reqs, p)
	for _, h := range l.rep.Hops {
		f := one(t, fs, CodeDeadRetries, h.Hop, SevError)
		// Budget 9s; the two other hops at their 3s timeouts take 6s; the
		// first attempt's 3s leaves nothing for backoff 0s + 3s.
		contains(t, f, "2 can never run", fmt.Sprintf("all %d paths", len(l.reqs)), "the 9s budget", "= 6s", "leaves 0s")
	}
	// A has the same timeouts and retries with a 30s budget: covered.
	fa := Lint(l.rep, l.reqs, loadPolicy(t, filepath.Join(seedDir, "A.yaml")))
	none(t, fa, CodeDeadRetries)
}

func TestSeedA_RetryOnPersistent(t *testing.T) {
	pa := loadPolicy(t, filepath.Join(seedDir, "A.yaml"))
	l := analyse(readSpans(t, filepath.Join(seedDir, "recorded-under-A.jsonl")), pa)
	fs := Lint(l.rep, l.reqs, pa)
	for _, h := range l.rep.Hops {
		if h.FailureClass != analyze.ClassRanToTimeout {
			t.Fatalf("%s: class %s, want ran-to-timeout (the sample's premise)", h.Hop, h.FailureClass)
		}
		f := one(t, fs, CodeRetryOnPersistent, h.Hop, SevError)
		y := h.RetryYield
		if y == nil || y.AfterTimeout.Retried == 0 {
			t.Fatalf("%s: the recorded logs show retries; yield %+v", h.Hop, y)
		}
		contains(t, f, fmt.Sprintf("recovered %d of %d", y.AfterTimeout.Succeeded, y.AfterTimeout.Retried), "set retries: 0")
	}
	// B and C do not retry.
	for _, name := range []string{"B", "C"} {
		none(t, Lint(l.rep, l.reqs, loadPolicy(t, filepath.Join(seedDir, name+".yaml"))), CodeRetryOnPersistent)
	}
}

func TestSeedE_TimeoutBelowTail(t *testing.T) {
	spans := readSpans(t, filepath.Join(seedDir, "spans.jsonl"))
	l := analyse(spans, nil)
	p := loadPolicy(t, filepath.Join(seedDir, "E.yaml"))
	fs := Lint(l.rep, l.reqs, p)
	T := int64(p.Default.Timeout)
	for _, h := range l.rep.Hops {
		f := one(t, fs, CodeBelowTail, h.Hop, SevError)
		// The predicted false-timeout rate, counted here from the spans.
		longer, n := 0, 0
		for _, s := range spans {
			if s.Hop != h.Hop || (s.Failed() && !s.Timeout) {
				continue
			}
			n++
			if s.Duration > T {
				longer++
			}
		}
		contains(t, f, "timeout 1s", fmt.Sprintf("%d of %d successful attempts took longer", longer, n),
			fmt.Sprintf("rate of %s", units.Percent(float64(longer)/float64(n), 1)), units.Duration(time.Duration(*h.SuccessLatencyMs.P99*1e6)))
	}
}

func TestSeedC_NoLintError(t *testing.T) {
	for _, file := range []string{"spans.jsonl", "recorded-under-A.jsonl"} {
		var inForce *policy.Policy
		if file != "spans.jsonl" {
			inForce = loadPolicy(t, filepath.Join(seedDir, "A.yaml"))
		}
		l := analyse(readSpans(t, filepath.Join(seedDir, file)), inForce)
		fs := Lint(l.rep, l.reqs, loadPolicy(t, filepath.Join(seedDir, "C.yaml")))
		for _, f := range fs {
			if f.Severity == SevError {
				t.Errorf("%s: C got an error: %s %s: %s", file, f.Code, f.Hop, f.Message)
			}
		}
	}
}

func TestSeedBaselineNoWorse(t *testing.T) {
	l := analyse(readSpans(t, filepath.Join(seedDir, "spans.jsonl")), nil)
	pa := loadPolicy(t, filepath.Join(seedDir, "A.yaml"))
	pc := loadPolicy(t, filepath.Join(seedDir, "C.yaml"))
	pe := loadPolicy(t, filepath.Join(seedDir, "E.yaml"))
	opt := Options{Baseline: pa, Gates: Gates{NoWorse: true, Tolerance: 0.05}}
	rep := Run(l.rep, l.reqs, []*policy.Policy{pc, pe}, opt)
	if rep.Baseline == nil || rep.Baseline.Policy.Name != "A" {
		t.Fatalf("baseline missing from the report")
	}
	gate := func(r Result, name string) Gate {
		for _, g := range r.Gates {
			if g.Name == name {
				return g
			}
		}
		t.Fatalf("%s: no gate %s in %+v", r.Policy.Name, name, r.Gates)
		return Gate{}
	}
	c, e := rep.Results[0], rep.Results[1]
	if c.Verdict != Pass {
		t.Errorf("C: verdict %s, want pass; gates %+v lint:\n%s", c.Verdict, c.Gates, dump(c.Lint))
	}
	for _, g := range c.Gates {
		if !g.Pass {
			t.Errorf("C: gate %s failed: want %s, got %s", g.Name, g.Want, g.Got)
		}
	}
	if e.Verdict != Fail || rep.Verdict != Fail {
		t.Errorf("E: verdict %s (report %s), want fail", e.Verdict, rep.Verdict)
	}
	if g := gate(e, "no-worse-success"); g.Pass {
		t.Errorf("E: no-worse-success passed: want %s, got %s", g.Want, g.Got)
	}
	// The gate's numbers are the replay's.
	if g := gate(e, "no-worse-success"); g.Got != units.Percent(e.Replay.SuccessRate.Low, 1) || !strings.Contains(g.Want, units.Percent(rep.Baseline.Replay.SuccessRate.Low, 1)) {
		t.Errorf("E: gate %+v does not cite the replayed success %v vs baseline %v", g, e.Replay.SuccessRate, rep.Baseline.Replay.SuccessRate)
	}
	// A policy compared with itself passes every no-worse gate.
	self := Run(l.rep, l.reqs, []*policy.Policy{pa}, opt)
	for _, g := range self.Results[0].Gates {
		if !g.Pass {
			t.Errorf("A against itself: gate %s failed: want %s, got %s", g.Name, g.Want, g.Got)
		}
	}
}

// ---- each rule on synthetic logs ----

// three sequential hops, n requests, every attempt 100 ms: nothing is slow.
func plain(n int) []span.Span {
	var reqs [][]call
	for i := 0; i < n; i++ {
		reqs = append(reqs, []call{{"a", []att{ok(ms(100))}}, {"b", []att{ok(ms(100))}}, {"c", []att{ok(ms(100))}}})
	}
	return chain(reqs...)
}

func TestDeadRetries(t *testing.T) {
	l := analyse(plain(10), nil)
	cases := []struct {
		name, policy string
		sev          string // "" = no finding
		msg          []string
	}{
		{"budget = hops × timeout", "budget: 3s\ndefault: {timeout: 1s, retries: 1}", SevError,
			[]string{"1 can never run", "all 10 paths", "the 3s budget", "= 2s", "leaves 0s"}},
		{"one retry fits exactly", "budget: 4s\ndefault: {timeout: 1s, retries: 1}", "", nil},
		{"one of two fits", "budget: 4s\ndefault: {timeout: 1s, retries: 2}", SevWarning,
			[]string{"only 1 of 2 fit on 10 of 10 paths"}},
		// Backoff counts at its shortest: full jitter may wait 0, so with
		// jitter nothing is certainly dead.
		{"backoff makes it dead", "budget: 4.5s\ndefault: {timeout: 1s, retries: 1, backoff: 600ms}", SevError,
			[]string{"backoff 600ms + 1s"}},
		{"full jitter may not wait", "budget: 4.5s\ndefault: {timeout: 1s, retries: 1, backoff: {base: 600ms, max: 600ms, jitter: full}}", "", nil},
		{"no budget", "default: {timeout: 1s, retries: 2}", "", nil},
		{"no retries", "budget: 3s\ndefault: {timeout: 1s, retries: 0}", "", nil},
		// A listed hop with a longer timeout uses more of the others' room.
		{"per-hop timeouts", "budget: 10s\ndefault: {timeout: 1s, retries: 1}\nhops:\n  c: {timeout: 8s, retries: 0}", SevError,
			[]string{"c 8s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := Lint(l.rep, l.reqs, parsePolicy(t, tc.policy))
			if tc.sev == "" {
				none(t, fs, CodeDeadRetries)
				return
			}
			f := one(t, fs, CodeDeadRetries, "a", tc.sev)
			contains(t, f, tc.msg...)
		})
	}
}

func TestDeadRetriesSomePaths(t *testing.T) {
	// 6 requests go a→b, 4 go a→b→c: with budget 3s and 1s timeouts, a's
	// retry fits on the short paths only.
	var reqs [][]call
	for i := 0; i < 10; i++ {
		r := []call{{"a", []att{ok(ms(100))}}, {"b", []att{ok(ms(100))}}}
		if i < 4 {
			r = append(r, call{"c", []att{ok(ms(100))}})
		}
		reqs = append(reqs, r)
	}
	l := analyse(chain(reqs...), nil)
	fs := Lint(l.rep, l.reqs, parsePolicy(t, "budget: 3s\ndefault: {timeout: 1s, retries: 1}"))
	f := one(t, fs, CodeDeadRetries, "a", SevWarning)
	contains(t, f, "never run on 4 of 10 paths")
	f = one(t, fs, CodeDeadRetries, "c", SevError)
	contains(t, f, "all 4 paths")
}

func TestDeadRetriesNested(t *testing.T) {
	// root → gateway (one attempt) → backend, sequentially: the gateway's
	// timeout bounds the backend's retries.
	var spans []span.Span
	for i := 0; i < 5; i++ {
		tid := fmt.Sprintf("n%d", i)
		t0 := int64(i) * int64(time.Minute)
		spans = append(spans,
			span.Span{TraceID: tid, SpanID: tid + "r", Hop: "root", Start: t0, Duration: int64(ms(300)), Status: span.OK},
			span.Span{TraceID: tid, SpanID: tid + "g", ParentID: tid + "r", Hop: "gateway", Start: t0 + 1, Duration: int64(ms(250)), Status: span.OK},
			span.Span{TraceID: tid, SpanID: tid + "b", ParentID: tid + "g", Hop: "backend", Start: t0 + 2, Duration: int64(ms(200)), Status: span.OK},
		)
	}
	l := analyse(spans, nil)
	for _, tc := range []struct {
		policy, sev string
	}{
		{"budget: 30s\nhops:\n  gateway: {timeout: 1500ms}\n  backend: {timeout: 1s, retries: 1}", SevError},
		{"budget: 30s\nhops:\n  gateway: {timeout: 2s}\n  backend: {timeout: 1s, retries: 1}", ""},
		{"budget: 30s\nhops:\n  gateway: {timeout: 2s}\n  backend: {timeout: 1s, retries: 2}", SevWarning},
	} {
		fs := Lint(l.rep, l.reqs, parsePolicy(t, tc.policy))
		if tc.sev == "" {
			none(t, fs, CodeDeadRetries)
			continue
		}
		f := one(t, fs, CodeDeadRetries, "backend", tc.sev)
		contains(t, f, "gateway's")
		// The root is the request: its hop is never linted for timeouts.
		if len(findings(fs, "*", "root")) > 0 {
			t.Errorf("root hop linted:\n%s", dump(fs))
		}
	}
}

// persistentLogs: hop "slow" fails by running to a 1s timeout in 10 of 100
// calls; its retries after a timeout recover `recover` of 10. Hop "flaky"
// fails fast (50 ms errors) and its retries recover.
func persistentLogs(recover int) []span.Span {
	var reqs [][]call
	for i := 0; i < 100; i++ {
		slow := call{"slow", []att{ok(ms(200 + i))}}
		if i < 10 {
			second := att{d: time.Second, timeout: true}
			if i < recover {
				second = ok(ms(300))
			}
			slow.atts = []att{{d: time.Second, timeout: true}, second}
		}
		flaky := call{"flaky", []att{ok(ms(100 + i))}}
		if i%10 == 5 {
			flaky.atts = []att{{d: ms(50), err: true}, ok(ms(100))}
		}
		reqs = append(reqs, []call{slow, flaky})
	}
	return chain(reqs...)
}

func TestRetryOnPersistent(t *testing.T) {
	pol := "budget: 30s\ndefault: {timeout: 1s, retries: 2, budget_aware: true}"
	inForce := parsePolicy(t, "default: {timeout: 1s}")
	for _, tc := range []struct {
		recover int
		fire    bool
	}{{0, true}, {1, false}} { // 1 of 10 = 10% > UselessYield
		l := analyse(persistentLogs(tc.recover), inForce)
		h := hopOf(t, l.rep, "slow")
		if h.FailureClass != analyze.ClassRanToTimeout && tc.recover == 0 {
			t.Fatalf("slow: class %s (%s), want ran-to-timeout", h.FailureClass, h.Evidence)
		}
		fs := Lint(l.rep, l.reqs, parsePolicy(t, pol))
		if tc.fire {
			f := one(t, fs, CodeRetryOnPersistent, "slow", SevError)
			contains(t, f, "recovered 0 of 10", "adds a full 1s")
		} else if got := findings(fs, CodeRetryOnPersistent, "slow"); len(got) > 0 && h.RetryYield.AfterTimeout.Succeeded > 0 {
			t.Errorf("recover %d: fired though retries help:\n%s", tc.recover, dump(got))
		}
		if got := findings(fs, CodeRetryOnPersistent, "flaky"); len(got) > 0 {
			t.Errorf("flaky (fast failures) got:\n%s", dump(got))
		}
		none(t, Lint(l.rep, l.reqs, parsePolicy(t, "budget: 30s\ndefault: {timeout: 1s, retries: 0}")), CodeRetryOnPersistent)
	}
}

func hopOf(t *testing.T, rep *analyze.Report, name string) *analyze.Hop {
	t.Helper()
	for i := range rep.Hops {
		if rep.Hops[i].Hop == name {
			return &rep.Hops[i]
		}
	}
	t.Fatalf("no hop %s", name)
	return nil
}

func TestTailRules(t *testing.T) {
	// Hop "h": 100 successes of 1..100 ms (p99 = 99.01 ms) and 5 errors
	// scattered over 150..470 ms that say nothing about time to success.
	var reqs [][]call
	for i := 1; i <= 100; i++ {
		reqs = append(reqs, []call{{"h", []att{ok(ms(i))}}})
	}
	for i := 0; i < 5; i++ {
		reqs = append(reqs, []call{{"h", []att{{d: ms(150 + 80*i), err: true}}}})
	}
	l := analyse(chain(reqs...), nil)
	p99 := units.Duration(99_010_000) // 1..100 ms: 1 + 0.99×99
	// 100 successes cannot certify the request target: the recommendation
	// extrapolated the tail, and the rule measures against that.
	var need time.Duration
	for i := range l.rep.Hops {
		if l.rep.Hops[i].Hop == "h" {
			need = l.rep.Hops[i].Recommendation.TailNeed
		}
	}
	if need <= 100*time.Millisecond {
		t.Fatalf("fixture: the tail extrapolated for h is %s, not past its slowest success", need)
	}
	farAbove := fmt.Sprintf("%.1f× the tail extrapolated for the request target, %s (100 successful attempts, slowest 100ms)", 2/need.Seconds(), units.Duration(need))
	cases := []struct {
		timeout    string
		code, sev  string
		msg        []string
		notBelow   bool
		notFarAbov bool
	}{
		{"50ms", CodeBelowTail, SevError, []string{"50 of 100 successful attempts took longer", "rate of 50%", "p99 of successful attempts, " + p99}, false, true},
		{"99ms", CodeBelowTail, SevError, []string{"1 of 100", "rate of 1%"}, false, true},
		{"100ms", "", "", nil, true, true},
		{"1s", "", "", nil, true, true}, // 10× but under a second of excess
		{"2s", CodeFarAboveTail, SevWarning, []string{farAbove}, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.timeout, func(t *testing.T) {
			fs := Lint(l.rep, l.reqs, parsePolicy(t, "budget: 30s\nhops:\n  h: {timeout: "+tc.timeout+"}"))
			if tc.notBelow {
				none(t, fs, CodeBelowTail)
			}
			if tc.notFarAbov {
				none(t, fs, CodeFarAboveTail)
			}
			if tc.code != "" {
				contains(t, one(t, fs, tc.code, "h", tc.sev), tc.msg...)
			}
		})
	}
}

func TestTailCensored(t *testing.T) {
	// 90 successes of 100..189 ms and 10 attempts cut at 1s: p99 of time to
	// success is only known to be above 1s.
	var reqs [][]call
	for i := 0; i < 90; i++ {
		reqs = append(reqs, []call{{"h", []att{ok(ms(100 + i))}}})
	}
	for i := 0; i < 10; i++ {
		reqs = append(reqs, []call{{"h", []att{{d: time.Second, timeout: true}}}})
	}
	l := analyse(chain(reqs...), parsePolicy(t, "default: {timeout: 1s}"))
	// At the cut: the 10 cut attempts needed more than 1s.
	fs := Lint(l.rep, l.reqs, parsePolicy(t, "budget: 30s\ndefault: {timeout: 1s}"))
	contains(t, one(t, fs, CodeBelowTail, "h", SevError), "≥", "10 of 100 attempts needed longer", "10 were cut", "rate of 10%")
	// Below the cut: 150 ms; 40 successes and the 10 cut attempts.
	fs = Lint(l.rep, l.reqs, parsePolicy(t, "budget: 30s\ndefault: {timeout: 150ms}"))
	contains(t, one(t, fs, CodeBelowTail, "h", SevError), "49 of 100", "39 successes", "rate of 49%")
	// Above the cut the tail is unknown: neither rule may speak.
	fs = Lint(l.rep, l.reqs, parsePolicy(t, "budget: 30s\ndefault: {timeout: 20s}"))
	none(t, fs, CodeBelowTail)
	none(t, fs, CodeFarAboveTail)
}

func TestConfigRules(t *testing.T) {
	l := analyse(plain(3), nil)
	cases := []struct {
		name, policy   string
		code, hop, sev string
		msg            []string
		absent         []string
	}{
		{"timeout ≥ budget with retries", "budget: 2s\nhops:\n  a: {timeout: 2s, retries: 1}\n  b: {timeout: 1s}\n  c: {timeout: 1s}",
			CodePerTryNotBelow, "a", SevError, []string{"timeout 2s is not below the 2s budget", "1 retry can never run"}, nil},
		{"timeout ≥ budget without retries", "budget: 2s\nhops:\n  a: {timeout: 5s}\n  b: {timeout: 1s}\n  c: {timeout: 1s}",
			CodePerTryNotBelow, "a", SevWarning, []string{"never fires"}, nil},
		{"no per-attempt timeout", "budget: 2s\nhops:\n  a: {retries: 0}\n  b: {timeout: 1s}\n  c: {timeout: 1s}",
			CodePerTryNotBelow, "a", SevWarning, []string{"no per-attempt timeout"}, nil},
		{"not budget aware", "budget: 20s\ndefault: {timeout: 1s, retries: 2}",
			CodeNotBudgetAware, "", SevWarning, []string{"default (used by a, b, c) has 2 retries", "20s budget"}, nil},
		{"budget aware", "budget: 20s\ndefault: {timeout: 1s, retries: 2, budget_aware: true}",
			"", "", "", nil, []string{CodeNotBudgetAware}},
		{"backoff past the budget", "budget: 5s\nhops:\n  a: {timeout: 1s, retries: 3, backoff: {base: 1s, max: 8s}, budget_aware: true}\n  b: {timeout: 1s}\n  c: {timeout: 1s}",
			CodeBackoffExceeds, "a", SevError, []string{"before retry 3 is up to 4s", "the 4s left of the 5s budget"}, nil},
		{"backoff within", "budget: 30s\nhops:\n  a: {timeout: 1s, retries: 3, backoff: {base: 1s, max: 8s}, budget_aware: true}\n  b: {timeout: 1s}\n  c: {timeout: 1s}",
			"", "", "", nil, []string{CodeBackoffExceeds}},
		{"unknown hop with a hint", "budget: 30s\ndefault: {timeout: 1s}\nhops:\n  a: {timeout: 1s}\n  b: {timeout: 1s}\n  cc: {timeout: 1s}",
			CodeUnknownHop, "cc", SevWarning, []string{"test.yaml:6: hop \"cc\" is in the policy but not in the logs (3 hops seen); did you mean \"c\"?"}, nil},
		{"unconfigured hop", "budget: 30s\ndefault: {timeout: 1s}\nhops:\n  a: {timeout: 1s}\n  b: {timeout: 1s}",
			CodeUnconfiguredHop, "c", SevWarning, []string{"hop \"c\" is in the logs (3 calls) but not in the policy: it falls back to default (timeout 1s, 0 retries)"}, nil},
		{"default only", "budget: 30s\ndefault: {timeout: 1s}",
			CodeUnconfiguredHop, "", SevInfo, []string{"all 3 hops seen use default"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := Lint(l.rep, l.reqs, parsePolicy(t, tc.policy))
			if tc.code != "" {
				contains(t, one(t, fs, tc.code, tc.hop, tc.sev), tc.msg...)
			}
			for _, c := range tc.absent {
				none(t, fs, c)
			}
		})
	}
}

func TestLintOrderAndShape(t *testing.T) {
	l := analyse(plain(3), nil)
	fs := Lint(l.rep, l.reqs, parsePolicy(t, "budget: 2s\ndefault: {timeout: 1s, retries: 2}\nhops:\n  zz: {timeout: 5s, retries: 1}"))
	if len(fs) < 3 {
		t.Fatalf("want several findings, got:\n%s", dump(fs))
	}
	known := map[string]bool{CodeDeadRetries: true, CodeRetryOnPersistent: true, CodeBelowTail: true, CodeFarAboveTail: true,
		CodePerTryNotBelow: true, CodeNotBudgetAware: true, CodeBackoffExceeds: true, CodeUnknownHop: true, CodeUnconfiguredHop: true}
	for i, f := range fs {
		if !known[f.Code] || sevRank(f.Severity) > 2 || f.Message == "" {
			t.Errorf("bad finding %+v", f)
		}
		if i > 0 {
			a, b := fs[i-1], f
			if sevRank(a.Severity) > sevRank(b.Severity) || sevRank(a.Severity) == sevRank(b.Severity) && a.Hop > b.Hop {
				t.Errorf("out of order: %+v before %+v", a, b)
			}
		}
	}
	// Deterministic.
	again := Lint(l.rep, l.reqs, parsePolicy(t, "budget: 2s\ndefault: {timeout: 1s, retries: 2}\nhops:\n  zz: {timeout: 5s, retries: 1}"))
	if dump(fs) != dump(again) {
		t.Errorf("not deterministic:\n%s\nvs\n%s", dump(fs), dump(again))
	}
}

// nested builds n requests of a root, a call to "outer" and, inside it, a
// call to "inner" (all client spans, so the policy governs both).
func nested(n int) *logs {
	var spans []span.Span
	for i := range n {
		tid := fmt.Sprintf("t%d", i)
		t0 := int64(1_700_000_000+i) * 1e9
		spans = append(spans,
			span.Span{TraceID: tid, SpanID: "r", Service: "fe", Name: "GET", Kind: "server", Hop: "root", Start: t0, Duration: 100e6, Weight: 1},
			span.Span{TraceID: tid, SpanID: "o", ParentID: "r", Service: "fe", Kind: "client", Hop: "outer", Start: t0 + 1e6, Duration: 60e6, Weight: 1},
			span.Span{TraceID: tid, SpanID: "i", ParentID: "o", Service: "mid", Kind: "client", Hop: "inner", Start: t0 + 2e6, Duration: 40e6, Weight: 1})
	}
	return analyse(spans, nil)
}

// Retries at two layers of one path multiply; a callee allowed longer than
// its caller on every call works on for nothing.
func TestLayeredRules(t *testing.T) {
	l := nested(20)
	fs := Lint(l.rep, l.reqs, parsePolicy(t, "budget: 30s\nhops:\n  outer: {timeout: 1s, retries: 2, budget_aware: true}\n  inner: {timeout: 2s, retries: 2, budget_aware: true}"))
	contains(t, one(t, fs, CodeAmplification, "inner", SevWarning), "retries at 2 layers", "outer (3 attempts) → inner (3 attempts)", "up to 9 attempts of inner", "20 paths")
	contains(t, one(t, fs, CodeCalleeOutlives, "inner", SevWarning), "timeout 2s is longer than its caller outer's 1s", "on all 20 calls")
	fs = Lint(l.rep, l.reqs, parsePolicy(t, "budget: 30s\nhops:\n  outer: {timeout: 1s, retries: 0}\n  inner: {timeout: 500ms, retries: 2, budget_aware: true}"))
	none(t, fs, CodeAmplification)
	none(t, fs, CodeCalleeOutlives)
	// 3 attempts of 500ms need 1.5s: the 1s caller cuts the last retry.
	contains(t, one(t, fs, CodeRetriesOutlast, "inner", SevWarning), "3 attempts of 500ms", "need up to 1.5s", "outer's 1s timeout", "20 calls")
	fs = Lint(l.rep, l.reqs, parsePolicy(t, "budget: 30s\nhops:\n  outer: {timeout: 2s, retries: 0}\n  inner: {timeout: 500ms, retries: 2, budget_aware: true}"))
	none(t, fs, CodeRetriesOutlast)
}

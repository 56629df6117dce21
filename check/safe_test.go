package check

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/internal/realdata"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/recommend"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
)

// realFile is a real export and how to read it.
type realFile struct {
	path string
	opt  ingest.Options
}

// nezhaMap names the columns of the Nezha TrainTicket CSV exports.
var nezhaMap = map[string]string{"trace_id": "TraceID", "span_id": "SpanID", "parent_id": "ParentID",
	"service": "PodName", "name": "OperationName", "start": "StartTimeUnixNano", "end": "EndTimeUnixNano"}

// realFiles lists every span file of the repository's samples, real
// exports (testdata/real), broken-input fixtures (testdata/bad: what is left
// of them after the bad records) and reader fixtures, and of
// ../shared/data with TAILSCOPE_REALDATA=full.
func realFiles(t *testing.T) []realFile {
	t.Helper()
	var out []realFile
	dirs := append(append([]string{"../samples/seed-chain"}, realdata.Roots(t)...), "../testdata/bad", "../ingest/testdata")
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				if d.Name() == "fuzz" || d.Name() == "policy" {
					return filepath.SkipDir
				}
				return nil
			}
			name := d.Name()
			switch {
			case name == "LICENSE" || strings.HasSuffix(name, "fault_list.json") || strings.HasSuffix(name, ".md") || strings.HasSuffix(name, ".yaml"):
				return nil
			case strings.HasSuffix(name, ".csv"):
				out = append(out, realFile{path, ingest.Options{Map: nezhaMap}})
			case strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".gz") || strings.HasSuffix(name, ".parquet"):
				out = append(out, realFile{path, ingest.Options{}})
			}
			return nil
		})
	}
	if len(out) == 0 {
		t.Fatal("no span files found")
	}
	return out
}

// readAny reads what a file holds that can be read: nil when nothing can
// (a fixture that is broken as a whole).
func readAny(f realFile) []span.Span {
	var out []span.Span
	if _, err := ingest.Read([]string{f.path}, f.opt, ingest.SinkFunc(func(s *span.Span) { out = append(out, *s) })); err != nil {
		return nil
	}
	return out
}

// The tool's own recommendation, checked on the logs it came from, passes:
// no lint error or warning about it, and replayed it fails at most the
// false-timeout target of the requests that succeeded as logged.
func TestRecommendThenCheckPassesOnRealFiles(t *testing.T) {
	for _, f := range realFiles(t) {
		t.Run(f.path, func(t *testing.T) {
			spans := readAny(f)
			if len(spans) == 0 {
				t.Skip("no span can be read")
			}
			l := analyse(spans, nil)
			// What recommend writes, read back as check reads it.
			p, err := policy.Parse("recommended.yaml", l.rec.Marshal())
			if err != nil {
				t.Fatalf("the recommended policy does not read back: %v", err)
			}
			cr := Run(l.rep, l.reqs, []*policy.Policy{p}, Options{})
			res := cr.Results[0]
			for _, x := range res.Lint {
				if x.Code == CodeOutOfSample {
					// What the logs cannot certify is said of every policy,
					// the tool's own too; it must be the bound recommend
					// reported.
					if got, want := res.Predicted.Upper, l.rep.RecommendedPolicy.Safety.Predicted.Upper; got != want {
						t.Errorf("check predicts %g out of sample, recommend said %g", got, want)
					}
					continue
				}
				if x.Severity != SevInfo {
					t.Errorf("recommend wrote what check lints: %s %s %s: %s", x.Severity, x.Code, x.Hop, x.Message)
				}
			}
			if cr.Verdict != Pass {
				t.Errorf("verdict %s", cr.Verdict)
			}
			okLogged, lost := 0, 0
			for _, o := range replay.Run(l.reqs, p, replay.Options{}).Outcomes {
				if o.LoggedOK {
					okLogged++
					if !o.OK && !o.Undetermined {
						lost++
					}
				}
			}
			if allowed := int(math.Floor(analyze.DefaultFalseTimeouts * float64(okLogged))); lost > allowed {
				t.Errorf("replayed on its own logs the recommendation fails %d of %d logged successes (target allows %d)", lost, okLogged, allowed)
			}
			if c := l.rep.RecommendationCheck; c == nil || !c.Met || c.Failed != lost {
				t.Errorf("recommendation_check %+v, replay lost %d", c, lost)
			}
			for _, h := range l.rep.Hops {
				_, listed := p.Hops[h.Hop]
				if listed != (h.Role == analyze.RoleCall && h.Recommendation.TimeoutMs > 0) {
					t.Errorf("%s: role %s, listed in the policy %v", h.Hop, h.Role, listed)
				}
			}
		})
	}
}

// neverFiring is a policy under which no timeout can fire on these logs:
// every hop's timeout above its slowest attempt, as many retries as any
// call logged, a budget above every request. Requests with a failed call
// that made fewer attempts than the policy allows are not as logged under
// it (the policy would retry them): asLogged tells them apart.
func neverFiring(reqs []*span.Request) *policy.Policy {
	p := &policy.Policy{Name: "never", Hops: map[string]policy.Hop{}}
	slowest := map[string]int64{}
	tries := map[string]int{}
	var walk func(cs []*span.Call)
	walk = func(cs []*span.Call) {
		for _, c := range cs {
			tries[c.Hop] = max(tries[c.Hop], len(c.Attempts))
			for _, a := range c.Attempts {
				slowest[c.Hop] = max(slowest[c.Hop], a.Span.Duration)
				walk(a.Calls)
			}
		}
	}
	var longest int64
	for _, r := range reqs {
		walk(r.Calls)
		longest = max(longest, r.Latency())
	}
	for h, d := range slowest {
		p.Hops[h] = policy.Hop{Timeout: time.Duration(2*d) + time.Millisecond, Retries: tries[h] - 1}
	}
	p.Budget = time.Duration(2*longest) + time.Second
	return p
}

// asLogged reports whether every failed call of r made every attempt p
// allows, and no attempt was cut by a timeout when logged (given more
// time, its true latency is unknown): r then ran under p exactly as it
// ran.
func asLogged(r *span.Request, p *policy.Policy) bool {
	ok := r.Root == nil || !r.Root.Timeout
	var walk func(cs []*span.Call)
	walk = func(cs []*span.Call) {
		for _, c := range cs {
			if c.Failed() && len(c.Attempts) < p.ForCall(c.Hop, c.Role == span.RoleCall).Retries+1 {
				ok = false
			}
			for _, a := range c.Attempts {
				if a.Span.Timeout {
					ok = false
				}
				walk(a.Calls)
			}
		}
	}
	walk(r.Calls)
	return ok
}

// Under a policy whose timeouts never fire, every request ends when and how
// it ended as logged: replay invents nothing (asynchronous children do not
// stretch their parent; a request that failed fails when it failed).
func TestNeverFiringPolicyReplaysAsLogged(t *testing.T) {
	for _, f := range realFiles(t) {
		t.Run(f.path, func(t *testing.T) {
			spans := readAny(f)
			if len(spans) == 0 {
				t.Skip("no span can be read")
			}
			reqs, _ := span.Assemble(spans)
			p := neverFiring(reqs)
			res := replay.Run(reqs, p, replay.Options{})
			for i, o := range res.Outcomes {
				r := reqs[i]
				if o.Undetermined || !asLogged(r, p) {
					continue // a censored attempt given more time: unknown by definition
				}
				if o.OK == r.Failed || o.End != r.Latency() {
					t.Errorf("trace %s: replayed ok=%v at %s, logged ok=%v at %s (failed hop %q)",
						r.TraceID, o.OK, time.Duration(o.End), !r.Failed, time.Duration(r.Latency()), o.FailedHop)
				}
			}
		})
	}
}

// fanOut generates n requests whose root makes calls calls spread over
// hops hops, each lognormal around its own median: the shape of a real
// microservice request (~45 calls), where per-hop p99 timeouts compound.
func fanOut(seed uint64, n, calls, hops int) []span.Span {
	rng := rand.New(rand.NewPCG(seed, 7))
	median := make([]float64, hops)
	for h := range median {
		median[h] = float64(5+rng.IntN(200)) * 1e6
	}
	var out []span.Span
	t0 := int64(1_700_000_000) * 1e9
	for r := range n {
		tid := fmt.Sprintf("t%05d", r)
		start := t0 + int64(r)*1e9
		at := start + 1e5
		var kids []span.Span
		for c := range calls {
			h := c % hops
			d := int64(median[h] * math.Exp(0.6*rng.NormFloat64()))
			kids = append(kids, span.Span{TraceID: tid, SpanID: fmt.Sprintf("%s-%d", tid, c), ParentID: tid + "-root",
				Service: "frontend", Name: fmt.Sprintf("call-%02d", h), Kind: "client", Hop: fmt.Sprintf("frontend call-%02d", h),
				Start: at, Duration: d, Weight: 1})
			if c%3 != 2 {
				at += d // two in three calls are sequential, the rest overlap the next
			}
		}
		out = append(out, span.Span{TraceID: tid, SpanID: tid + "-root", Service: "frontend", Name: "GET /", Kind: "server",
			Hop: "frontend GET /", Start: start, Duration: at - start + 2e5, Weight: 1})
		out = append(out, kids...)
	}
	return out
}

// With 45 calls per request, p99 per hop would fail a large share of the
// requests; the recommendation meets the 0.1% request-level target, says
// which percentile the target implied and why, and check fails the
// per-hop p99 policy with fails-logged-successes.
func TestRecommendMeetsRequestTargetOnFanOut(t *testing.T) {
	spans := fanOut(1, 3000, 45, 15)
	l := analyse(spans, nil)
	chk := l.rep.RecommendationCheck
	if chk == nil || !chk.Met || chk.LoggedOK != 3000 || chk.Failed > 3 {
		t.Fatalf("recommendation_check %+v", chk)
	}
	if chk.CallsPerRequest != 45 || chk.Percentile < 99.99 {
		t.Errorf("calls per request %g, percentile %g: want 45 and ≥ p99.99", chk.CallsPerRequest, chk.Percentile)
	}
	p := l.rec
	for _, h := range l.rep.Hops {
		if h.Role != analyze.RoleCall {
			continue
		}
		if !strings.Contains(h.Recommendation.Basis, "~45 calls per request share the 0.1% request target") {
			t.Errorf("%s: basis %q does not say the request's calls raised it", h.Hop, h.Recommendation.Basis)
		}
	}
	cr := Run(l.rep, l.reqs, []*policy.Policy{p}, Options{})
	if cr.Verdict != Pass {
		t.Errorf("check of the recommendation: %s %+v", cr.Verdict, cr.Results[0].Lint)
	}

	// Per-hop p99 × 1.1, the old rule: compounds over 45 calls.
	naive := &policy.Policy{Name: "p99", Hops: map[string]policy.Hop{}, Budget: p.Budget}
	for _, h := range l.rep.Hops {
		if h.Role == analyze.RoleCall {
			naive.Hops[h.Hop] = policy.Hop{Timeout: recommend.RoundUpNice(time.Duration(*h.SuccessLatencyMs.P99 * 1.1 * 1e6))}
		}
	}
	cr = Run(l.rep, l.reqs, []*policy.Policy{naive}, Options{})
	res := cr.Results[0]
	if cr.Verdict != Fail || len(res.Lint) == 0 || res.Lint[0].Code != "fails-logged-successes" || res.Lint[0].Severity != SevError {
		t.Fatalf("per-hop p99 policy: verdict %s, lint %+v", cr.Verdict, res.Lint)
	}
	if !strings.Contains(res.Lint[0].Message, "requests that succeeded as logged fail") || !strings.Contains(res.Lint[0].Message, "e.g. trace t") {
		t.Errorf("message %q", res.Lint[0].Message)
	}
	if res.Replay.SuccessRate.Low > 0.95 {
		t.Errorf("per-hop p99 over 45 calls replayed at %.3f success: the compounding this test is about did not happen", res.Replay.SuccessRate.Low)
	}
}

// check with no gates fails a policy that leaves no request succeeding.
func TestCheckFailsPolicyThatBreaksEverything(t *testing.T) {
	l := analyse(fanOut(2, 200, 10, 5), nil)
	tiny := &policy.Policy{Name: "tiny", Hops: map[string]policy.Hop{}, Default: policy.Hop{Timeout: time.Microsecond}}
	cr := Run(l.rep, l.reqs, []*policy.Policy{tiny}, Options{})
	if cr.Verdict != Fail || cr.Results[0].Lint[0].Code != "fails-logged-successes" {
		t.Fatalf("verdict %s, lint %+v", cr.Verdict, cr.Results[0].Lint)
	}
	// A looser --max-false-timeouts lets a policy through that fails few.
	if f := LoggedSuccesses(replay.Run(l.reqs, tiny, replay.Options{}), 1); f == nil || f.Severity != SevWarning {
		t.Errorf("with max 100%%: %+v", f)
	}
}

// boutique generates requests shaped like a microservice demo's traces: a
// frontend server root; client spans to several services, each with the
// callee's server span under it, whose clock is skewed by up to ±skew;
// nested calls inside some callees; in-process spans; a fire-and-forget
// producer whose consumer runs after the response; fast 503s retried
// (attempts numbered from 0); and a slow tail on one service.
func boutique(seed uint64, n int, skew time.Duration) []span.Span {
	rng := rand.New(rand.NewPCG(seed, 11))
	var out []span.Span
	id := 0
	next := func() string { id++; return fmt.Sprintf("%016x", id) }
	lat := func(ms float64) int64 { return int64(ms * 1e6 * math.Exp(0.5*rng.NormFloat64())) }
	type svc struct {
		name string
		ms   float64
		kids []string
	}
	svcs := map[string]svc{
		"cart": {"cart", 3, nil}, "product": {"product", 2, nil}, "currency": {"currency", 1, nil},
		"shipping": {"shipping", 4, nil}, "payment": {"payment", 6, nil}, "email": {"email", 8, nil},
		"checkout":  {"checkout", 5, []string{"cart", "product", "currency", "shipping", "payment"}},
		"recommend": {"recommend", 7, []string{"product"}},
	}
	// call appends a client span (and the callee's spans) under parent at
	// time at; it returns the client span's end.
	var call func(tid, parent, from, to string, at int64, attempt int) int64
	call = func(tid, parent, from, to string, at int64, attempt int) int64 {
		s := svcs[to]
		cid, sid := next(), next()
		sk := int64(0)
		if skew > 0 {
			sk = rng.Int64N(2*int64(skew)) - int64(skew)
		}
		sStart := at + 200_000 + sk
		t := sStart + lat(s.ms*0.3)
		for _, k := range s.kids {
			t = call(tid, sid, to, k, t, -1) + 100_000
		}
		if to == "payment" && rng.IntN(50) == 0 {
			t += int64(400+rng.IntN(600)) * 1e6 // the slow tail
		}
		// in-process work inside the callee
		out = append(out, span.Span{TraceID: tid, SpanID: next(), ParentID: sid, Service: to, Name: "db.query", Hop: to + " db.query",
			Start: sStart + 50_000, Duration: (t - sStart) / 3, Weight: 1})
		failed := to == "cart" && rng.IntN(40) == 0
		end := t + lat(0.5)
		srv := span.Span{TraceID: tid, SpanID: sid, ParentID: cid, Service: to, Name: "/" + to + ".Serve", Kind: "server",
			Hop: to + " /" + to + ".Serve", Start: sStart, Duration: end - sStart, Weight: 1}
		cl := span.Span{TraceID: tid, SpanID: cid, ParentID: parent, Service: from, Name: "/" + to + ".Serve", Kind: "client",
			Hop: from + " /" + to + ".Serve (client)", Start: at, Duration: end - sk + 200_000 - at, Weight: 1}
		if attempt >= 0 {
			cl.Attempt, cl.AttemptSet = attempt, true
		}
		if failed {
			srv.Status, srv.Code = span.Error, 503
			cl.Status, cl.Code = span.Error, 503
			srv.Duration = 300_000
			cl.Duration = 700_000
			out = append(out, srv, cl)
			// retried at once, and the retry succeeds
			return call(tid, parent, from, to, cl.End()+100_000, max(attempt, 0)+1)
		}
		out = append(out, srv, cl)
		return cl.End()
	}
	t0 := int64(1_750_000_000) * 1e9
	for r := range n {
		tid := fmt.Sprintf("%032x", r+1)
		rootID := next()
		start := t0 + int64(r)*50e6
		t := start + 300_000
		for _, to := range []string{"currency", "product", "cart", "recommend", "checkout", "currency", "shipping"} {
			attempt := -1
			if to == "cart" {
				attempt = 0
			}
			t = call(tid, rootID, "frontend", to, t, attempt) + 50_000
		}
		// fire and forget: a producer whose consumer runs after the response
		pid := next()
		out = append(out, span.Span{TraceID: tid, SpanID: pid, ParentID: rootID, Service: "frontend", Name: "orders publish", Kind: "producer",
			Hop: "frontend orders publish (producer)", Start: t, Duration: 200_000, Weight: 1})
		end := t + 400_000
		out = append(out, span.Span{TraceID: tid, SpanID: next(), ParentID: pid, Service: "email", Name: "orders process", Kind: "consumer",
			Hop: "email orders process (consumer)", Start: end + 5e6, Duration: lat(20), Weight: 1})
		out = append(out, span.Span{TraceID: tid, SpanID: rootID, Service: "frontend", Name: "GET /cart/checkout", Kind: "server",
			Hop: "frontend GET /cart/checkout", Start: start, Duration: end - start, Weight: 1})
	}
	return out
}

// On generated microservice traces with skewed clocks, async consumers,
// retried 503s and a slow tail: the recommendation passes its own check and
// keeps the logged successes, and a never-firing policy replays exactly.
func TestBoutiqueShapes(t *testing.T) {
	for _, c := range []struct {
		seed uint64
		n    int
		skew time.Duration
	}{{1, 400, 0}, {2, 1500, 2 * time.Millisecond}, {3, 3000, 200 * time.Microsecond}, {4, 700, 30 * time.Millisecond}, {8, 1100, 0}} {
		t.Run(fmt.Sprintf("seed%d-n%d-skew%s", c.seed, c.n, c.skew), func(t *testing.T) {
			spans := boutique(c.seed, c.n, c.skew)
			l := analyse(spans, nil)
			p := l.rec
			cr := Run(l.rep, l.reqs, []*policy.Policy{p}, Options{})
			for _, x := range cr.Results[0].Lint {
				if x.Code == CodeOutOfSample {
					continue // what the logs cannot certify: said of every policy
				}
				if x.Severity != SevInfo {
					t.Errorf("recommend wrote what check lints: %s %s %s: %s", x.Severity, x.Code, x.Hop, x.Message)
				}
			}
			if chk := l.rep.RecommendationCheck; !chk.Met || chk.LoggedOK != c.n {
				t.Errorf("recommendation_check %+v", chk)
			}
			roles := map[string]string{}
			for _, h := range l.rep.Hops {
				roles[h.Hop] = h.Role
			}
			for hop, want := range map[string]string{"frontend /cart.Serve (client)": "call", "cart /cart.Serve": "callee",
				"cart db.query": "in-process", "frontend GET /cart/checkout": "root", "frontend orders publish (producer)": "call"} {
				if roles[hop] != want {
					t.Errorf("%s: role %q, want %q", hop, roles[hop], want)
				}
			}
			nf := neverFiring(l.reqs)
			res := replay.Run(l.reqs, nf, replay.Options{})
			exact := 0
			for i, o := range res.Outcomes {
				r := l.reqs[i]
				if o.Undetermined || !asLogged(r, nf) {
					continue
				}
				exact++
				if o.OK == r.Failed || o.End != r.Latency() {
					t.Fatalf("never-firing replay of %s: ok=%v at %d, logged ok=%v at %d", r.TraceID, o.OK, o.End, !r.Failed, r.Latency())
				}
			}
			if exact < c.n*9/10 {
				t.Errorf("only %d of %d requests replayed under the never-firing policy as logged", exact, c.n)
			}
			// The retried 503s are one call each, numbered from 0.
			for _, h := range l.rep.Hops {
				if h.Hop == "frontend /cart.Serve (client)" && (h.RetryYield == nil || h.RetryYield.Recovered != h.RetryYield.RetriedCalls || h.RetryYield.RetriedCalls == 0) {
					t.Errorf("cart client retry yield %+v, want every retried call recovered", h.RetryYield)
				}
			}
		})
	}
}

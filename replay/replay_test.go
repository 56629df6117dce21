package replay

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/samples/matrix"
	"github.com/tailscope/tailscope/span"
)

const ms = int64(time.Millisecond)

// att describes a logged attempt for the table tests.
type att struct {
	hop     string
	start   int64 // ms from the request start
	dur     int64 // ms
	err     bool
	timeout bool // cut by a timeout when logged (censored)
	attempt int
}

func build(atts ...att) *span.Request {
	var spans []span.Span
	for i, a := range atts {
		st := span.OK
		if a.err || a.timeout {
			st = span.Error
		}
		spans = append(spans, span.Span{TraceID: "t", SpanID: fmt.Sprint(i), Hop: a.hop, Start: 1e12 + a.start*ms,
			Duration: a.dur * ms, Status: st, Timeout: a.timeout, Attempt: a.attempt})
	}
	reqs, _ := span.Assemble(spans)
	return reqs[0]
}

func pol(budget time.Duration, h policy.Hop) *policy.Policy {
	return &policy.Policy{Name: "p", Budget: budget, Default: h, Hops: map[string]policy.Hop{}}
}

func TestReplayRules(t *testing.T) {
	s := time.Second
	tests := []struct {
		name     string
		req      *span.Request
		p        *policy.Policy
		ok       bool
		undet    bool
		endMs    int64
		hop      string
		retryMs  int64
		wastedMs int64
	}{
		{"fits the timeout: succeeds at its latency",
			build(att{hop: "a", dur: 400}, att{hop: "b", start: 400, dur: 600}),
			pol(0, policy.Hop{Timeout: s}), true, false, 1000, "", 0, 0},
		{"over the timeout: fails at the timeout",
			build(att{hop: "a", dur: 400}, att{hop: "b", start: 400, dur: 9000}),
			pol(0, policy.Hop{Timeout: 3 * s}), false, false, 3400, "b", 0, 0},
		{"retries reuse the last attempt (same wall), after backoff",
			build(att{hop: "a", dur: 9000}),
			pol(0, policy.Hop{Timeout: 3 * s, Retries: 2, Backoff: policy.Backoff{Base: 100 * time.Millisecond, Max: 100 * time.Millisecond}}),
			false, false, 9200, "a", 6200, 6200},
		{"logged attempts are used in order: a retry that succeeded",
			build(att{hop: "a", dur: 100, err: true, attempt: 1}, att{hop: "a", start: 100, dur: 300, attempt: 2}),
			pol(0, policy.Hop{Timeout: s, Retries: 1}), true, false, 400, "", 300, 0},
		{"no retries: a logged fast error fails at its time",
			build(att{hop: "a", dur: 100, err: true, attempt: 1}, att{hop: "a", start: 100, dur: 300, attempt: 2}),
			pol(0, policy.Hop{Timeout: s}), false, false, 100, "a", 0, 0},
		{"the budget ends a request at exactly the budget",
			build(att{hop: "a", dur: 500}, att{hop: "b", start: 500, dur: 9000}),
			pol(9*s, policy.Hop{Timeout: 3 * s, Retries: 2}), false, false, 9000, "b", 5500, 5500},
		{"budget-aware: no retry unless backoff + timeout fit the budget left",
			build(att{hop: "a", dur: 500}, att{hop: "b", start: 500, dur: 9000}),
			pol(9*s, policy.Hop{Timeout: 3 * s, Retries: 2, BudgetAware: true}), false, false, 6500, "b", 3000, 3000},
		{"budget-aware retry that fits runs",
			build(att{hop: "a", dur: 500}, att{hop: "b", start: 500, dur: 9000}),
			pol(30*s, policy.Hop{Timeout: 3 * s, Retries: 2, BudgetAware: true}), false, false, 9500, "b", 6000, 6000},
		{"censored attempt, longer timeout: undetermined",
			build(att{hop: "a", dur: 3000, timeout: true}),
			pol(0, policy.Hop{Timeout: 12 * s}), false, true, 12000, "a", 0, 0},
		{"censored attempt, same or shorter timeout: determined failure",
			build(att{hop: "a", dur: 3000, timeout: true}),
			pol(0, policy.Hop{Timeout: 2 * s}), false, false, 2000, "a", 0, 0},
		{"no timeout and no budget: waits for the latency",
			build(att{hop: "a", dur: 20000}),
			pol(0, policy.Hop{}), true, false, 20000, "", 0, 0},
		{"gaps between calls are kept",
			build(att{hop: "a", dur: 100}, att{hop: "b", start: 300, dur: 100}),
			pol(0, policy.Hop{Timeout: s}), true, false, 400, "", 0, 0},
		{"parallel calls are not summed",
			build(att{hop: "a", dur: 500}, att{hop: "b", start: 0, dur: 700}, att{hop: "c", start: 700, dur: 100}),
			pol(0, policy.Hop{Timeout: s}), true, false, 800, "", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := One(tc.req, tc.p, nil)
			if o.OK != tc.ok || o.Undetermined != tc.undet || o.End != tc.endMs*ms || o.FailedHop != tc.hop {
				t.Errorf("got ok=%v undetermined=%v end=%dms hop=%q; want ok=%v undetermined=%v end=%dms hop=%q",
					o.OK, o.Undetermined, o.End/ms, o.FailedHop, tc.ok, tc.undet, tc.endMs, tc.hop)
			}
			if o.RetryNs != tc.retryMs*ms || o.WastedNs != tc.wastedMs*ms {
				t.Errorf("retry time %dms wasted %dms; want %dms and %dms", o.RetryNs/ms, o.WastedNs/ms, tc.retryMs, tc.wastedMs)
			}
		})
	}
}

// A child whose duration changes shifts its parent, and the siblings that
// waited for it, by the change.
func TestReplayTreeShift(t *testing.T) {
	mk := func(id, parent, hop string, start, dur int64, err bool, attempt int) span.Span {
		st := span.OK
		if err {
			st = span.Error
		}
		return span.Span{TraceID: "t", SpanID: id, ParentID: parent, Hop: hop, Start: 1e12 + start*ms, Duration: dur * ms, Status: st, Attempt: attempt}
	}
	spans := []span.Span{
		mk("root", "", "gateway", 0, 1000, false, 0),
		// db fails fast, is retried at once and succeeds: 300 ms in the log.
		mk("d1", "root", "db", 0, 100, true, 1),
		mk("d2", "root", "db", 100, 200, false, 2),
		// cache runs after db.
		mk("c1", "root", "cache", 300, 200, false, 0),
		// log runs in parallel with everything and ends early.
		mk("l1", "root", "log", 0, 100, false, 0),
	}
	reqs, _ := span.Assemble(spans)
	if reqs[0].Root == nil {
		t.Fatal("no root assembled")
	}
	// A 500 ms backoff before db's retry delays db by 500 ms, cache after
	// it, and the root: 1000 + 500.
	p := &policy.Policy{Hops: map[string]policy.Hop{}, Default: policy.Hop{Timeout: 5 * time.Second, Retries: 1,
		Backoff: policy.Backoff{Base: 500 * time.Millisecond, Max: 500 * time.Millisecond}}}
	o := One(reqs[0], p, nil)
	if !o.OK || o.End != 1500*ms {
		t.Errorf("got ok=%v end=%dms, want ok and 1500ms", o.OK, o.End/ms)
	}
	// Without retries db fails, and the root fails with it at 100 ms.
	p.Default.Retries = 0
	o = One(reqs[0], p, nil)
	if o.OK || o.End != 100*ms || o.FailedHop != "db" {
		t.Errorf("got ok=%v end=%dms hop=%q, want failure at 100ms in db", o.OK, o.End/ms, o.FailedHop)
	}
}

// reference is an independent, direct implementation of docs/DESIGN.md §7 for
// chains whose hops run one after another with no gaps and a single
// logged attempt each (the article's matrix).
func reference(lat []time.Duration, p *policy.Policy) (ok bool, end int64) {
	budget := int64(p.Budget)
	if budget == 0 {
		budget = 1 << 62
	}
	var t int64
	for h, l := range lat {
		hp := p.Hops[fmt.Sprint(h)]
		T := int64(hp.Timeout)
		if T == 0 {
			T = 1 << 62
		}
		L := int64(l)
		done := false
		for k := 0; k <= hp.Retries; k++ {
			if k > 0 {
				b := int64(hp.Backoff.Base)
				if hp.BudgetAware && budget-t < b+int64(hp.Timeout) {
					return false, t
				}
				t += b
				if t >= budget {
					return false, budget
				}
			}
			if L <= T && t+L <= budget {
				t += L
				done = true
				break
			}
			if t+T >= budget || t+L > budget && L <= T {
				return false, budget
			}
			t += T
		}
		if !done {
			return false, t
		}
	}
	return true, t
}

func TestReplayAgainstReference(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		nh := 2 + rng.IntN(4)
		c := matrix.Article()
		c.Seed = seed
		c.Hops = nil
		for h := 0; h < nh; h++ {
			c.Hops = append(c.Hops, fmt.Sprintf("hop-%c%d", 'a'+rune(h), seed))
		}
		c.Normal, c.Tail, c.Slow = 20+rng.IntN(150), rng.IntN(30), rng.IntN(20)
		c.TailFirstHop = rng.IntN(c.Tail + 1)
		rows := matrix.Generate(c)
		reqs := matrixRequests(t, c, rows)
		for trial := 0; trial < 5; trial++ {
			p := &policy.Policy{Hops: map[string]policy.Hop{}}
			ref := &policy.Policy{Hops: map[string]policy.Hop{}}
			if rng.IntN(3) > 0 {
				p.Budget = time.Duration(2+rng.IntN(30)) * time.Second
			}
			ref.Budget = p.Budget
			aware := rng.IntN(2) == 0
			for h, name := range c.Hops {
				b := time.Duration(rng.IntN(4)) * 100 * time.Millisecond
				hp := policy.Hop{Timeout: time.Duration(300+rng.IntN(12000)) * time.Millisecond, Retries: rng.IntN(4),
					Backoff: policy.Backoff{Base: b, Max: b}, BudgetAware: aware}
				p.Hops[name] = hp
				ref.Hops[fmt.Sprint(h)] = hp
			}
			res := Run(reqs, p, Options{})
			byID := map[string]Outcome{}
			for _, o := range res.Outcomes {
				byID[o.TraceID] = o
			}
			succ := 0
			for _, row := range rows {
				wantOK, wantEnd := reference(row.Latency, ref)
				if wantOK {
					succ++
				}
				got := byID[row.ID]
				if got.OK != wantOK || got.End != wantEnd || got.Undetermined {
					for _, r := range reqs {
						if r.TraceID == row.ID {
							for _, c := range r.Calls {
								t.Logf("call %s start %d attempts %d dur %d", c.Hop, c.Start()-r.Start, len(c.Attempts), c.Attempts[0].Span.Duration)
							}
						}
					}
					t.Fatalf("seed %d trial %d %s %v %+v: replay ok=%v end=%d, reference ok=%v end=%d",
						seed, trial, row.ID, row.Latency, ref, got.OK, got.End, wantOK, wantEnd)
				}
			}
			if res.Succeeded != succ {
				t.Fatalf("seed %d: %d succeeded, reference %d", seed, res.Succeeded, succ)
			}
		}
	}
}

// The default policy governs the caller's record of a call; the callee's
// own SERVER span under it is bounded by that call, not timed out again.
func TestReplayCalleeSide(t *testing.T) {
	spans := []span.Span{
		{TraceID: "t", SpanID: "g", Hop: "gateway", Kind: "server", Start: 1e12, Duration: 2100 * ms, Status: span.OK},
		{TraceID: "t", SpanID: "c", ParentID: "g", Hop: "api (client)", Kind: "client", Start: 1e12, Duration: 2100 * ms, Status: span.OK},
		{TraceID: "t", SpanID: "s", ParentID: "c", Hop: "api", Kind: "server", Start: 1e12 + 50*ms, Duration: 2000 * ms, Status: span.OK},
	}
	reqs, _ := span.Assemble(spans)
	p := &policy.Policy{Hops: map[string]policy.Hop{}, Default: policy.Hop{Timeout: 3 * time.Second}}
	if o := One(reqs[0], p, nil); !o.OK || o.End != 2100*ms {
		t.Errorf("3s default: ok=%v end=%dms, want success at 2100ms", o.OK, o.End/ms)
	}
	// A 1s default cuts the client call at 1s; the server span's own
	// duration is not what fails it.
	p.Default.Timeout = time.Second
	if o := One(reqs[0], p, nil); o.OK || o.End != 1000*ms || o.FailedHop != "api (client)" {
		t.Errorf("1s default: ok=%v end=%dms hop=%q, want the client call to fail at 1s", o.OK, o.End/ms, o.FailedHop)
	}
	// Listing the server hop applies its entry.
	p.Default.Timeout = 3 * time.Second
	p.Hops["api"] = policy.Hop{Timeout: 500 * time.Millisecond}
	if o := One(reqs[0], p, nil); o.OK || o.End != 550*ms || o.FailedHop != "api" {
		t.Errorf("listed server hop: ok=%v end=%dms hop=%q, want failure at 550ms in api", o.OK, o.End/ms, o.FailedHop)
	}
}

// Attempts per request count every attempt the policy makes, retries
// included, by hop; as logged they count the logged attempts.
func TestAttemptsPerRequest(t *testing.T) {
	fast := build(att{hop: "a", dur: 100}, att{hop: "b", start: 100, dur: 100})
	// b fails fast every time it is tried (the same wall): a policy with 2
	// retries makes 3 attempts of b.
	failing := build(att{hop: "a", dur: 100}, att{hop: "b", start: 100, dur: 10, err: true})
	reqs := []*span.Request{fast, failing}
	p := pol(time.Minute, policy.Hop{Timeout: time.Second, Retries: 2})
	got := Run(reqs, p, Options{}).Summary().AttemptsPerRequest
	if got.Max != 4 || got.Mean != 3 || got.ByHop["a"] != 1 || got.ByHop["b"] != 2 {
		t.Errorf("replayed: %+v, want max 4, mean 3, a 1, b 2 per request", got)
	}
	if got.P99 < 3.9 || got.P99 > 4 {
		t.Errorf("p99 %g, want between the two requests' 2 and 4, near 4", got.P99)
	}
	logged := Observed(reqs).Summary().AttemptsPerRequest
	if logged.Max != 2 || logged.Mean != 2 || logged.ByHop["b"] != 1 {
		t.Errorf("as logged: %+v, want 2 attempts per request", logged)
	}
}

// A probe runs a request to its end as if no timeout fired and lists every
// attempt a timeout would have cut; a replay stops at the first.
func TestProbeFindsEveryCut(t *testing.T) {
	r := build(att{hop: "a", dur: 300}, att{hop: "b", start: 300, dur: 500}, att{hop: "c", start: 800, dur: 50})
	p := pol(time.Minute, policy.Hop{Timeout: 200 * time.Millisecond})
	if cuts := Run([]*span.Request{r}, p, Options{}).Outcomes[0].Cuts; len(cuts) != 1 || cuts[0].Hop != "a" {
		t.Errorf("replay cuts %+v, want a's only (the request stops there)", cuts)
	}
	o := Run([]*span.Request{r}, p, Options{Probe: true}).Outcomes[0]
	if len(o.Cuts) != 2 || o.Cuts[0] != (Cut{Hop: "a", Need: 300 * ms}) || o.Cuts[1] != (Cut{Hop: "b", Need: 500 * ms}) {
		t.Errorf("probe cuts %+v, want a 300ms and b 500ms", o.Cuts)
	}
	if !o.OK || o.End != 850*ms {
		t.Errorf("probe ran to %v ok=%v, want the logged 850ms", time.Duration(o.End), o.OK)
	}
}

// TestRunSplitMatchesOneWorker: Run splits the requests over the cores;
// the outcomes, their order, the summary and the tallies must be those of
// one worker, for every option that takes that path.
func TestRunSplitMatchesOneWorker(t *testing.T) {
	c := matrix.Article()
	c.Normal, c.Tail, c.Slow, c.TailFirstHop = 900, 200, 100, 50
	reqs := matrixRequests(t, c, matrix.Generate(c))
	if len(reqs) < 4*minPerWorker {
		t.Fatalf("%d requests: too few to split over 4 workers", len(reqs))
	}
	p := &policy.Policy{Budget: 20 * time.Second, Hops: map[string]policy.Hop{}}
	for i, name := range c.Hops {
		p.Hops[name] = policy.Hop{Timeout: time.Duration(400+300*i) * time.Millisecond, Retries: 2,
			Backoff: policy.Backoff{Base: 50 * time.Millisecond, Max: 50 * time.Millisecond},
			Hedge:   policy.Hedge{Delay: time.Duration(200+100*i) * time.Millisecond, Max: 1}}
	}
	for _, opt := range []Options{{}, {Probe: true}, {RetryModel: ModelIndependent}} {
		prev := runtime.GOMAXPROCS(1)
		want := Run(reqs, p, opt)
		runtime.GOMAXPROCS(4)
		got := Run(reqs, p, opt)
		runtime.GOMAXPROCS(prev)
		if math.IsNaN(want.FailMean) && math.IsNaN(got.FailMean) {
			want.FailMean, got.FailMean = 0, 0 // nothing failed; NaN is never DeepEqual
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("options %+v: the split replay differs from one worker's", opt)
		}
		if want.Hedges == 0 && !opt.Probe {
			t.Errorf("options %+v: no hedges sent: the test does not cover the hedge tally", opt)
		}
	}
}

// matrixRequests writes the matrix's rows for c as the true run logs
// them, and reads them back into requests.
func matrixRequests(t *testing.T, c matrix.Config, rows []matrix.Request) []*span.Request {
	t.Helper()
	var buf bytes.Buffer
	if err := matrix.WriteTrue(&buf, c, rows); err != nil {
		t.Fatal(err)
	}
	var spans []span.Span
	if _, err := ingest.ReadStream("m.jsonl", &buf, ingest.Options{}, ingest.SinkFunc(func(s *span.Span) { spans = append(spans, *s) })); err != nil {
		t.Fatal(err)
	}
	reqs, _ := span.Assemble(spans)
	return reqs
}

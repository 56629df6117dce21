package enforce_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tailscope/tailscope/enforce"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
)

// The differential tests run logged requests through enforce under virtual
// time (testing/synctest): every hop is a fake that, for its k-th attempt,
// replays the call's k-th logged attempt (the last one beyond those, as
// the replay's same-wall model does): makes its child calls, sleeps the
// time it took of its own, and fails if that attempt failed. The replay's
// predictions for the same policy must come out request by request: the
// outcome, the time it ended to the nanosecond, the hop it blames, the
// attempts and the hedges.

// traceKey carries the request's trace id to the jitter draw.
type traceKey struct{}

// replayJitter hands enforce the replay's own jitter draws.
func replayJitter(ctx context.Context, hop string, k int) float64 {
	trace, _ := ctx.Value(traceKey{}).(string)
	return replay.Jitter(trace, hop, k)
}

var errLogged = errors.New("the attempt failed as logged")

// outcome is what a driven request did, in the replay's terms.
type outcome struct {
	ok        bool
	end       int64
	failedHop string
	attempts  int
	hedges    int
}

func (o outcome) String() string {
	return fmt.Sprintf("ok=%v end=%v failed=%q attempts=%d hedges=%d", o.ok, time.Duration(o.end), o.failedHop, o.attempts, o.hedges)
}

func fromReplay(o replay.Outcome) outcome {
	return outcome{ok: o.OK, end: o.End, failedHop: o.FailedHop, attempts: o.Attempts, hedges: o.Hedges}
}

// drive runs the logged request r through pol, inside a synctest bubble,
// as the application that logged it would: its top-level calls one after
// another (see calls), each attempt of a call a fake (see attempt).
// counts must be pol's Observe hook.
//
// The driver takes requests without a root span whose attempts are not
// logged as cut by a timeout (censored), in which a call that failed as
// logged is the last of its siblings, and only the first top-level call
// has child calls: the shapes of the seed sample and of randomMatrix.
func drive(t *testing.T, pol *enforce.Policy, counts *enforce.Counts, r *span.Request) outcome {
	t.Helper()
	counts.Reset()
	ctx, done := pol.Request(context.WithValue(context.Background(), traceKey{}, r.TraceID))
	defer done()
	d := &driver{t: t, pol: pol, trace: r.TraceID}
	d.budget, d.bounded = ctx.Deadline()
	start := time.Now()
	k := d.calls(ctx, r.Calls, r.Start, start, true)
	var o outcome
	switch {
	case k.failed:
		o.end, o.failedHop = int64(k.failAt.Sub(start)), k.blame
	case k.still:
		o.end, o.failedHop = int64(k.end.Sub(start)), k.stillBlame
	default:
		o.ok, o.end = true, int64(k.end.Sub(start))
	}
	s := counts.Snapshot()
	o.attempts, o.hedges = s.Attempts, s.Hedges
	return o
}

// driver holds what the fakes of one request share.
type driver struct {
	t       *testing.T
	pol     *enforce.Policy
	trace   string
	budget  time.Time // the request's deadline, when bounded
	bounded bool
}

// kids is how sibling calls went, in the replay's terms: when the last
// one waited for ended and its logged end; a call that succeeded as
// logged failing (failed, at failAt, blaming blame: the rest are not
// made); one that failed as logged (loggedFailed) still failing (still).
type kids struct {
	end                 time.Time
	origEnd             int64
	failed              bool
	failAt              time.Time
	blame               string
	loggedFailed, still bool
	stillBlame          string
}

// calls makes the sibling calls cs, whose logged origin (their parent's
// logged start) is now t0, one after another: each started where the
// replay places it, at its logged offset moved by the largest change among
// the siblings that had ended (as logged) before it started. The wait
// before a call ends with ctx: a call due after the deadline starts, and
// fails, at it.
func (d *driver) calls(ctx context.Context, cs []*span.Call, origin int64, t0 time.Time, top bool) kids {
	k := kids{end: t0}
	type finished struct{ origEnd, delta int64 }
	var ended []finished
	for _, c := range cs {
		var shift int64
		waited := false
		for _, f := range ended {
			if f.origEnd <= c.Start() && (!waited || f.delta > shift) {
				shift, waited = f.delta, true
			}
		}
		k.origEnd = max(k.origEnd, c.End()-origin)
		pause := time.NewTimer(time.Until(t0.Add(time.Duration(c.Start() - origin + shift))))
		select {
		case <-pause.C:
		case <-ctx.Done():
		}
		pause.Stop()
		blame, err := d.call(ctx, c, top)
		now := time.Now()
		logged := c.Failed()
		k.loggedFailed = k.loggedFailed || logged
		if err != nil && !logged {
			k.failed, k.failAt, k.blame = true, now, blame
			return k
		}
		if err != nil && !k.still {
			k.still, k.stillBlame = true, blame
		}
		ended = append(ended, finished{c.End() - origin, int64(now.Sub(t0)) - (c.End() - origin)})
		if now.After(k.end) {
			k.end = now
		}
	}
	return k
}

// call makes the logged call c through the policy; its k-th attempt
// replays the k-th logged attempt (the last one beyond them). On failure
// it returns the hop the replay blames: that of the attempt that failed
// last (the later sent when two end together). top says that it runs in
// the bubble's own goroutine.
func (d *driver) call(ctx context.Context, c *span.Call, top bool) (string, error) {
	var next atomic.Int64
	var mu sync.Mutex
	type record struct {
		at    time.Time
		k     int
		blame string
	}
	var failures []record
	err := d.pol.Call(ctx, c.Hop, func(actx context.Context) error {
		k := int(next.Add(1)) - 1
		blame, err := d.attempt(actx, c.Hop, c.Attempts[min(k, len(c.Attempts)-1)])
		if err != nil {
			mu.Lock()
			failures = append(failures, record{time.Now(), k, blame})
			mu.Unlock()
		}
		return err
	})
	if err == nil {
		return "", nil
	}
	var g *enforce.Degraded
	if !errors.As(err, &g) || g.Hop != c.Hop {
		d.t.Fatalf("%s: %s gave up with %T %v, not its own *Degraded", d.trace, c.Hop, err, err)
	}
	if !plainWords.MatchString(g.Missing) || strings.Contains(g.Missing, errLogged.Error()) || strings.Contains(g.Error(), errLogged.Error()) {
		d.t.Errorf("%s: Missing %q is not plain words, or carries the error", d.trace, g.Missing)
	}
	if top {
		// An attempt cut at its deadline may still be returning (Call
		// does not wait for it): let every fake of the bubble settle
		// before reading what they recorded. (The calls below the top
		// ones are leaves, which blame their own hop.)
		synctest.Wait()
	}
	mu.Lock()
	defer mu.Unlock()
	blame := c.Hop // no attempt ran: the deadline had passed
	var last record
	for i, f := range failures {
		if i == 0 || f.at.After(last.at) || f.at.Equal(last.at) && f.k > last.k {
			last, blame = f, f.blame
		}
	}
	return blame, err
}

// attempt is the fake of one attempt replaying the logged attempt a of a
// call to hop: its child calls made as calls makes them, the time it took
// of its own before, between and after them slept, and its logged outcome
// returned — a logged error that a failed child explains clears when the
// children now succeed. It returns the hop to blame with a failure: a
// child that failed, unless the attempt's own timeout (a deadline sooner
// than the request's) cut it.
func (d *driver) attempt(ctx context.Context, hop string, a *span.Attempt) (string, error) {
	t := time.Now()
	cut := func() bool {
		dl, ok := ctx.Deadline()
		own := ok && (!d.bounded || dl.Before(d.budget))
		return own && !time.Now().Before(dl)
	}
	k := d.calls(ctx, a.Calls, a.Span.Start, t, false)
	if k.failed {
		if cut() {
			return hop, ctx.Err()
		}
		return k.blame, errLogged
	}
	lat := max(0, a.Span.Duration+int64(k.end.Sub(t))-k.origEnd)
	tm := time.NewTimer(time.Until(t.Add(time.Duration(lat))))
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
		return hop, ctx.Err()
	}
	switch {
	case a.Span.Status != span.Error:
		return "", nil
	case k.loggedFailed && !k.still:
		return "", nil
	case k.still:
		return k.stillBlame, errLogged
	}
	return hop, errLogged
}

// runAll drives every request in order through one Policy (so that retry
// throttling carries from one to the next, as in the replay) in one
// bubble. It returns each request's outcome, and the attempts and hedges
// by hop over them all.
func runAll(t *testing.T, p *policy.Policy, throttle map[string]policy.RetryBudget, reqs []*span.Request) (out []outcome, attempts, hedges map[string]int) {
	t.Helper()
	out = make([]outcome, len(reqs))
	attempts, hedges = map[string]int{}, map[string]int{}
	synctest.Test(t, func(t *testing.T) {
		var counts enforce.Counts
		// Random policies list some hops only: the others run under the
		// default, as the replay runs them, without a warning.
		pol := enforce.New(p, enforce.Options{Jitter: replayJitter, Observe: counts.Observe, Throttle: throttle, Warn: func(string) {}})
		for i, r := range reqs {
			out[i] = drive(t, pol, &counts, r)
			s := counts.Snapshot()
			for h, n := range s.AttemptsByHop {
				attempts[h] += n
			}
			for h, n := range s.HedgesByHop {
				hedges[h] += n
			}
		}
	})
	return out, attempts, hedges
}

// TestSeedTable runs the seed sample through enforce under the five seed
// configurations: the source article's table, and the replay's outcome
// for every request.
func TestSeedTable(t *testing.T) {
	l, err := pipeline.Seed("spans.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	pols, err := pipeline.SeedPolicies()
	if err != nil {
		t.Fatal(err)
	}
	reqs := l.Requests
	slices.SortStableFunc(reqs, func(a, b *span.Request) int { return cmp.Compare(a.Start, b.Start) })
	want := map[string]int{"A": 181, "B": 181, "C": 200, "D": 181, "E": 170}
	for _, p := range pols {
		t.Run(p.Name, func(t *testing.T) {
			got, attempts, hedges := runAll(t, p, nil, reqs)
			succeeded := 0
			for _, o := range got {
				if o.ok {
					succeeded++
				}
			}
			if len(reqs) != 200 || succeeded != want[p.Name] {
				t.Errorf("%d/%d succeeded through enforce, want %d/200", succeeded, len(reqs), want[p.Name])
			}
			compare(t, reqs, got, attempts, hedges, replay.Run(reqs, p, replay.Options{}))
		})
	}
}

// compare fails t for every request whose outcome through enforce is not
// the replay's, and when the attempts or hedges by hop differ.
func compare(t *testing.T, reqs []*span.Request, got []outcome, attempts, hedges map[string]int, res *replay.Result) {
	t.Helper()
	if !maps.Equal(attempts, res.AttemptsByHop) || !maps.Equal(hedges, res.HedgesByHop) {
		t.Errorf("by hop: enforce attempts %v hedges %v\n\treplay  attempts %v hedges %v", attempts, hedges, res.AttemptsByHop, res.HedgesByHop)
	}
	bad := 0
	for i, o := range res.Outcomes {
		if o.Undetermined {
			t.Fatalf("%s: undetermined in the replay; the driver takes no censored attempts", o.TraceID)
		}
		if want := fromReplay(o); got[i] != want {
			if bad++; bad <= 5 {
				t.Errorf("%s: enforce %v\n\treplay  %v", reqs[i].TraceID, got[i], want)
			}
		}
	}
	if bad > 5 {
		t.Errorf("… %d requests differ in all", bad)
	}
}

// TestRandomAgainstReplay: random policies (budgets, timeouts, retries,
// backoff with each jitter, budget_aware, hedges, retry throttling) over
// random latency matrices, flat chains and chains whose first call makes
// calls of its own, agree with the replay request by request.
func TestRandomAgainstReplay(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 15
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range rounds {
		nested := round%2 == 1
		reqs := randomMatrix(rng, 30, nested)
		p, throttle := randomPolicy(rng)
		if nested {
			// A hedge of an attempt with child calls differs in what
			// counts: the replay counts the children a cancelled hedge
			// would have called after the winner answered.
			h := p.For("front")
			h.Hedge = policy.Hedge{}
			p.Hops["front"] = h
		}
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			got, attempts, hedges := runAll(t, p, throttle, reqs)
			res := replay.Run(reqs, p, replay.Options{Throttle: throttle})
			compare(t, reqs, got, attempts, hedges, res)
			if t.Failed() {
				t.Logf("policy:\n%sthrottle %+v", p.Marshal(), throttle)
			}
		})
	}
}

var (
	matrixHops = []string{"front", "retrieve", "rank", "generate"}
	childHops  = []string{"index", "cache"}
)

// randomMatrix is n logged requests in a row, each a chain of one to four
// calls (see chain). With nested, half the attempts of each request's
// first call make a chain of one or two child calls of their own, after
// some time of their own and before some more.
func randomMatrix(rng *rand.Rand, n int, nested bool) []*span.Request {
	reqs := make([]*span.Request, 0, n)
	for i := range n {
		trace := fmt.Sprintf("r%03d", i)
		t0 := int64(i) * int64(time.Hour)
		r := &span.Request{TraceID: trace, Start: t0}
		r.Calls, r.End, r.Failed = chain(rng, trace, matrixHops[:1+rng.IntN(len(matrixHops))], t0, nested)
		reqs = append(reqs, r)
	}
	return reqs
}

// chain is calls to hops one after another from at (sometimes with a
// pause between them), each call one to three attempts back to back:
// every attempt but the last failed, and the last one failed too in a
// fifth of the calls, which then end the chain. Latencies are drawn to
// the nanosecond from a fast body and a slow tail, so that no two events
// of a run fall on the same instant by chance. With nested, the first
// call's attempts may have child calls (a chain of childHops); an attempt
// whose children failed failed.
func chain(rng *rand.Rand, trace string, hops []string, at int64, nested bool) (calls []*span.Call, end int64, failed bool) {
	for j, hop := range hops {
		if j > 0 && rng.IntN(3) == 0 {
			at += rng.Int64N(int64(50 * time.Millisecond))
		}
		c := &span.Call{Hop: hop, Role: span.RoleCall}
		tries := 1 + rng.IntN(3)
		lastOK := rng.IntN(5) != 0
		for a := range tries {
			sp := &span.Span{TraceID: trace, SpanID: fmt.Sprintf("%s-%s-%d", trace, hop, a), Hop: hop, Start: at, Status: span.OK}
			att := &span.Attempt{Span: sp}
			if a < tries-1 || !lastOK {
				sp.Status = span.Error
			}
			if nested && j == 0 && rng.IntN(2) == 0 {
				inner := at + rng.Int64N(int64(30*time.Millisecond))
				var childFailed bool
				att.Calls, inner, childFailed = chain(rng, sp.SpanID, childHops[:1+rng.IntN(len(childHops))], inner, false)
				sp.Duration = inner + between(rng, time.Millisecond, 200*time.Millisecond) - at
				if childFailed {
					sp.Status = span.Error
				}
			} else {
				sp.Duration = latency(rng)
			}
			at += sp.Duration
			c.Attempts = append(c.Attempts, att)
		}
		calls = append(calls, c)
		if c.Failed() {
			return calls, at, true
		}
	}
	return calls, at, false
}

func latency(rng *rand.Rand) int64 {
	switch x := rng.IntN(20); {
	case x < 14:
		return between(rng, 5*time.Millisecond, 500*time.Millisecond)
	case x < 19:
		return between(rng, 500*time.Millisecond, 3*time.Second)
	default:
		return between(rng, 3*time.Second, 9*time.Second)
	}
}

func between(rng *rand.Rand, lo, hi time.Duration) int64 {
	return int64(lo) + rng.Int64N(int64(hi-lo))
}

// randomPolicy is a policy with a random budget (or none), a random
// default and random entries for some hops; and, for a third of the
// policies without hedges, retry throttling on some hops. (With hedges the
// two count differently: the replay counts a hedge cancelled by a winner
// at the end it would have had, a running process never sees that end.)
func randomPolicy(rng *rand.Rand) (*policy.Policy, map[string]policy.RetryBudget) {
	p := &policy.Policy{Name: "random", Hops: map[string]policy.Hop{}}
	if rng.IntN(4) != 0 {
		p.Budget = time.Duration(between(rng, time.Second, 12*time.Second))
	}
	p.Default = randomHop(rng)
	hedged := p.Default.Hedge.Delay > 0
	for _, h := range append(matrixHops, childHops...) {
		if rng.IntN(2) == 0 {
			p.Hops[h] = randomHop(rng)
			hedged = hedged || p.Hops[h].Hedge.Delay > 0
		}
	}
	if hedged || rng.IntN(3) != 0 {
		return p, nil
	}
	th := map[string]policy.RetryBudget{}
	for _, h := range append(matrixHops, childHops...) {
		if rng.IntN(2) == 0 {
			th[h] = policy.RetryBudget{MaxTokens: 2 + rng.IntN(6), TokenRatio: rng.Float64()}
		}
	}
	return p, th
}

func randomHop(rng *rand.Rand) policy.Hop {
	h := policy.Hop{Retries: rng.IntN(4), BudgetAware: rng.IntN(2) == 0}
	if rng.IntN(5) != 0 {
		h.Timeout = time.Duration(between(rng, 50*time.Millisecond, 3*time.Second))
	}
	switch rng.IntN(4) {
	case 0:
	case 1:
		b := time.Duration(between(rng, time.Millisecond, 500*time.Millisecond))
		h.Backoff = policy.Backoff{Base: b, Max: b}
	default:
		b := time.Duration(between(rng, time.Millisecond, 300*time.Millisecond))
		h.Backoff = policy.Backoff{Base: b, Max: b * time.Duration(1+rng.IntN(8)),
			Jitter: []string{policy.JitterNone, policy.JitterFull, policy.JitterEqual}[rng.IntN(3)]}
	}
	if rng.IntN(3) == 0 {
		h.Hedge = policy.Hedge{Delay: time.Duration(between(rng, 20*time.Millisecond, time.Second)), Max: 1 + rng.IntN(3)}
	}
	return h
}

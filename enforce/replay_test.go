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
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tailscope/tailscope/enforce"
	"github.com/tailscope/tailscope/logs"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
)

// The differential tests run logged requests through enforce under virtual
// time (testing/synctest): every hop is a fake that, for its k-th attempt,
// sleeps the latency the log gives that call's k-th attempt (the last one
// beyond those, as the replay's same-wall model does) and fails if that
// attempt failed. The replay's predictions for the same policy must come
// out request by request: the outcome, the time it ended to the
// nanosecond, the hop that failed, the attempts and the hedges.

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

// drive runs the logged request r through pol, inside a synctest bubble.
// Its top-level calls are made one after another, as the application
// that logged them did, each started where the replay places it: at its
// logged offset, moved by the largest change among the calls that had
// ended (as logged) before it started. counts must be pol's Observe hook.
//
// The driver takes requests without a root span, whose calls have no
// child calls and are not logged as cut by a timeout (censored): the
// shape of the seed sample and of randomMatrix.
func drive(t *testing.T, pol *enforce.Policy, counts *enforce.Counts, r *span.Request) outcome {
	t.Helper()
	counts.Reset()
	ctx, done := pol.Request(context.WithValue(context.Background(), traceKey{}, r.TraceID))
	defer done()
	start := time.Now()
	type finished struct{ origEnd, delta int64 }
	var ended []finished
	var o outcome
	for _, c := range r.Calls {
		var shift int64
		waited := false
		for _, f := range ended {
			if f.origEnd <= c.Start() && (!waited || f.delta > shift) {
				shift, waited = f.delta, true
			}
		}
		// The application's own work between calls stops when the
		// request's budget runs out: a call due after it starts (and
		// fails) at the deadline.
		pause := time.NewTimer(time.Until(start.Add(time.Duration(c.Start() - r.Start + shift))))
		select {
		case <-pause.C:
		case <-ctx.Done():
		}
		pause.Stop()
		var next atomic.Int64
		err := pol.Call(ctx, c.Hop, func(ctx context.Context) error {
			k := int(next.Add(1)) - 1
			a := c.Attempts[min(k, len(c.Attempts)-1)].Span
			tm := time.NewTimer(time.Duration(a.Duration))
			defer tm.Stop()
			select {
			case <-tm.C:
				if a.Failed() {
					return errLogged
				}
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		now := int64(time.Since(start))
		if err != nil {
			var d *enforce.Degraded
			if !errors.As(err, &d) {
				t.Fatalf("%s: %s gave up with %T %v, not a *Degraded", r.TraceID, c.Hop, err, err)
			}
			if !plainWords.MatchString(d.Missing) || strings.Contains(d.Missing, errLogged.Error()) || strings.Contains(d.Error(), errLogged.Error()) {
				t.Errorf("%s: Missing %q is not plain words, or carries the error", r.TraceID, d.Missing)
			}
			o.end, o.failedHop = now, d.Hop
			break
		}
		ended = append(ended, finished{c.End() - r.Start, now - (c.End() - r.Start)})
		o.end = max(o.end, now)
	}
	o.ok = o.failedHop == ""
	s := counts.Snapshot()
	o.attempts, o.hedges = s.Attempts, s.Hedges
	return o
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
		pol := enforce.New(p, enforce.Options{Jitter: replayJitter, Observe: counts.Observe, Throttle: throttle})
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
	l, err := logs.Seed("spans.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	pols, err := logs.SeedPolicies()
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
// random latency matrices agree with the replay request by request.
func TestRandomAgainstReplay(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 15
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range rounds {
		reqs := randomMatrix(rng, 30)
		p, throttle := randomPolicy(rng)
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

var matrixHops = []string{"front", "retrieve", "rank", "generate"}

// randomMatrix is n logged requests in a row, each a chain of one to four
// calls (sometimes with a pause between them), each call one to three
// attempts back to back: every attempt but the last failed, and the last
// one failed too in a fifth of the calls, which then end their request.
// Latencies are drawn to the nanosecond from a fast body and a slow tail,
// so that no two events of a run fall on the same instant by chance.
func randomMatrix(rng *rand.Rand, n int) []*span.Request {
	reqs := make([]*span.Request, 0, n)
	for i := range n {
		trace := fmt.Sprintf("r%03d", i)
		t0 := int64(i) * int64(time.Hour)
		at := t0
		r := &span.Request{TraceID: trace, Start: t0}
		for j := range 1 + rng.IntN(len(matrixHops)) {
			if j > 0 && rng.IntN(3) == 0 {
				at += rng.Int64N(int64(50 * time.Millisecond))
			}
			c := &span.Call{Hop: matrixHops[j], Role: span.RoleCall}
			tries := 1 + rng.IntN(3)
			lastOK := rng.IntN(5) != 0
			for a := range tries {
				sp := &span.Span{TraceID: trace, SpanID: fmt.Sprintf("%s-%d-%d", trace, j, a), Hop: c.Hop,
					Start: at, Duration: latency(rng), Status: span.OK}
				if a < tries-1 || !lastOK {
					sp.Status = span.Error
				}
				at += sp.Duration
				c.Attempts = append(c.Attempts, &span.Attempt{Span: sp})
			}
			r.Calls = append(r.Calls, c)
			if !lastOK {
				r.Failed = true
				break
			}
		}
		r.End = at
		reqs = append(reqs, r)
	}
	return reqs
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
	for _, h := range matrixHops {
		if rng.IntN(2) == 0 {
			p.Hops[h] = randomHop(rng)
			hedged = hedged || p.Hops[h].Hedge.Delay > 0
		}
	}
	if hedged || rng.IntN(3) != 0 {
		return p, nil
	}
	th := map[string]policy.RetryBudget{}
	for _, h := range matrixHops {
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

package analyze

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

// scenario generates the spans of one hop with a known truth: every call
// draws the true latency of each attempt, the caller cuts an attempt at
// the timeout (its span then ends at timeout + a little timer noise) and
// retries after a failure while retries remain.
type scenario struct {
	hop     string
	calls   int
	timeout time.Duration
	retries int
	backoff time.Duration
	// attempt returns the true latency of attempt k (1-based) of call i,
	// and a status code when the attempt fails fast with it (0: it
	// succeeds if it beats the timeout).
	attempt func(r *rand.Rand, i, k int) (time.Duration, int)
	// mark sets the Timeout flag on cut attempts; attr sets TimeoutInForce.
	mark, attr bool
	// noise is the largest timer overshoot of a cut attempt, as a share of
	// the timeout (0.003 when zero).
	noise float64
}

// build writes the scenarios' spans: one trace per call, attempts as
// top-level spans numbered from 1.
func build(seed uint64, scs ...scenario) []span.Span {
	r := rand.New(rand.NewPCG(seed, seed*7+1))
	var out []span.Span
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	for _, sc := range scs {
		noise := sc.noise
		if noise == 0 {
			noise = 0.003
		}
		for i := 0; i < sc.calls; i++ {
			trace := fmt.Sprintf("%s-%05d", sc.hop, i)
			t := start + int64(i)*int64(20*time.Second)
			for k := 1; k <= sc.retries+1; k++ {
				lat, code := sc.attempt(r, i, k)
				s := span.Span{TraceID: trace, SpanID: fmt.Sprintf("%s-%d", trace, k), Service: "svc", Name: sc.hop, Hop: sc.hop,
					Start: t, Attempt: k, Code: code, Weight: 1}
				switch {
				case sc.timeout > 0 && lat > sc.timeout:
					s.Duration = int64(sc.timeout) + int64(r.Float64()*noise*float64(sc.timeout))
					s.Status = span.Error
					s.Timeout = sc.mark
					s.Code = 0
				case code != 0:
					s.Duration = int64(lat)
					s.Status = span.Error
				default:
					s.Duration = int64(lat)
					s.Status = span.OK
				}
				if sc.attr {
					s.TimeoutInForce = int64(sc.timeout)
				}
				out = append(out, s)
				t += s.Duration
				if !s.Failed() {
					break
				}
				t += int64(sc.backoff)
			}
		}
	}
	return out
}

func uniform(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

func lognormal(r *rand.Rand, median time.Duration, sigma float64) time.Duration {
	return time.Duration(float64(median) * math.Exp(sigma*r.NormFloat64()))
}

// persistent: share of calls are slow on every attempt (lo–hi), the rest
// normal (200–700 ms).
func persistent(share float64, lo, hi time.Duration) func(r *rand.Rand, i, k int) (time.Duration, int) {
	slow := map[int]time.Duration{}
	return func(r *rand.Rand, i, k int) (time.Duration, int) {
		if k == 1 && r.Float64() < share {
			slow[i] = uniform(r, lo, hi)
		}
		if d, ok := slow[i]; ok {
			return d + uniform(r, 0, 50*time.Millisecond), 0
		}
		return uniform(r, 200*time.Millisecond, 700*time.Millisecond), 0
	}
}

// fastErrors: each attempt independently fails fast with code at rate p.
func fastErrors(p float64, code int) func(r *rand.Rand, i, k int) (time.Duration, int) {
	return func(r *rand.Rand, i, k int) (time.Duration, int) {
		if r.Float64() < p {
			return uniform(r, 2*time.Millisecond, 40*time.Millisecond), code
		}
		return uniform(r, 100*time.Millisecond, 400*time.Millisecond), 0
	}
}

// spreadErrors: each attempt independently fails at rate p after a
// duration spread uniformly over lo–hi, with code (0: none).
func spreadErrors(p float64, lo, hi time.Duration, code int) func(r *rand.Rand, i, k int) (time.Duration, int) {
	return func(r *rand.Rand, i, k int) (time.Duration, int) {
		if r.Float64() < p {
			if code == 0 {
				code = 500
			}
			return uniform(r, lo, hi), code
		}
		return uniform(r, 100*time.Millisecond, 400*time.Millisecond), 0
	}
}

// jitter: independent lognormal latency on every attempt.
func jitter(median time.Duration, sigma float64) func(r *rand.Rand, i, k int) (time.Duration, int) {
	return func(r *rand.Rand, i, k int) (time.Duration, int) {
		return lognormal(r, median, sigma), 0
	}
}

func healthy(r *rand.Rand, i, k int) (time.Duration, int) {
	return uniform(r, 50*time.Millisecond, 300*time.Millisecond), 0
}

// failFirst: the first n calls fail fast once with code 500; the rest are
// healthy.
func failFirst(n int) func(r *rand.Rand, i, k int) (time.Duration, int) {
	return func(r *rand.Rand, i, k int) (time.Duration, int) {
		if i < n && k == 1 {
			return 30 * time.Millisecond, 500
		}
		return healthy(r, i, k)
	}
}

// both mixes two generators: call i uses a when pick(i).
func both(a, b func(r *rand.Rand, i, k int) (time.Duration, int), pickA func(i int) bool) func(r *rand.Rand, i, k int) (time.Duration, int) {
	return func(r *rand.Rand, i, k int) (time.Duration, int) {
		if pickA(i) {
			return a(r, i, k)
		}
		return b(r, i, k)
	}
}

// analyse runs the analysis the way the command does, without the
// recommendation (package recommend).
func analyse(spans []span.Span, opt Options) *Report {
	reqs, probs := span.Assemble(spans)
	return analysed(spans, reqs, probs, opt)
}

// analysed is everything the analysis adds to a report, in the order
// package recommend runs it with the recommendation left out: Measure,
// then where the tail comes from and the endpoints.
func analysed(spans []span.Span, reqs []*span.Request, probs span.Problems, opt Options) *Report {
	rep := Measure(spans, reqs, probs, opt)
	WhereTailComesFrom(rep, reqs)
	MapEndpoints(rep, reqs)
	return rep
}

func hopOf(rep *Report, name string) *Hop {
	for i := range rep.Hops {
		if rep.Hops[i].Hop == name {
			return &rep.Hops[i]
		}
	}
	return nil
}

// measured is an Accum's analysis without the recommendation, as package
// recommend runs it: Measure, where the tail comes from, the endpoints,
// then Complete.
func measured(a *Accum, opt Options) *Report {
	reqs, probs := span.Assemble(a.Spans())
	rep := a.Measure(reqs, probs, opt)
	WhereTailComesFrom(rep, reqs)
	MapEndpoints(rep, reqs)
	a.Complete(rep, reqs)
	return rep
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

// chain writes requests over hops with given latency generators.
func chain(seed uint64, n int, hops []string, draw func(rng *rand.Rand, hop int) (time.Duration, bool)) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		t := int64(1e18) + int64(i)*int64(time.Second)
		for h, name := range hops {
			d, failed := draw(rng, h)
			st := "ok"
			if failed {
				st = "error"
			}
			fmt.Fprintf(&b, `{"trace_id":"r%d","span_id":"r%d-%d","hop":%q,"start":%d,"duration_ns":%d,"status":%q}`+"\n", i, i, h, name, t, d, st)
			t += int64(d)
		}
	}
	return b.Bytes()
}

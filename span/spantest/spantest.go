// Package spantest generates spans with a known truth for tests: hops
// whose attempts draw their latency and failures from given generators,
// cut at a timeout and retried as a caller would (Build), and chains of
// hops as JSON lines (Chain), a fleet of pods one of which may be slow
// (Fleet), a gateway fanning out to services (TraceGen), hop names that
// carry ids (IDSpans). The analysis and the recommendation are tested on
// the same logs.
//
// It is for tests only; nothing else may import it.
package spantest

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/tailscope/tailscope/span"
)

// Scenario generates the spans of one hop with a known truth: every call
// draws the true latency of each attempt, the caller cuts an attempt at
// the timeout (its span then ends at timeout + a little timer noise) and
// retries after a failure while retries remain.
type Scenario struct {
	Hop     string
	Calls   int
	Timeout time.Duration
	Retries int
	Backoff time.Duration
	// attempt returns the true latency of attempt k (1-based) of call i,
	// and a status code when the attempt fails fast with it (0: it
	// succeeds if it beats the timeout).
	Attempt func(r *rand.Rand, i, k int) (time.Duration, int)
	// mark sets the Timeout flag on cut attempts; attr sets TimeoutInForce.
	Mark, Attr bool
	// noise is the largest timer overshoot of a cut attempt, as a share of
	// the timeout (0.003 when zero).
	Noise float64
}

// Build writes the scenarios' spans: one trace per call, attempts as
// top-level spans numbered from 1.
func Build(seed uint64, scs ...Scenario) []span.Span {
	r := rand.New(rand.NewPCG(seed, seed*7+1))
	var out []span.Span
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	for _, sc := range scs {
		noise := sc.Noise
		if noise == 0 {
			noise = 0.003
		}
		for i := 0; i < sc.Calls; i++ {
			trace := fmt.Sprintf("%s-%05d", sc.Hop, i)
			t := start + int64(i)*int64(20*time.Second)
			for k := 1; k <= sc.Retries+1; k++ {
				lat, code := sc.Attempt(r, i, k)
				s := span.Span{TraceID: trace, SpanID: fmt.Sprintf("%s-%d", trace, k), Service: "svc", Name: sc.Hop, Hop: sc.Hop,
					Start: t, Attempt: k, Code: code, Weight: 1}
				switch {
				case sc.Timeout > 0 && lat > sc.Timeout:
					s.Duration = int64(sc.Timeout) + int64(r.Float64()*noise*float64(sc.Timeout))
					s.Status = span.Error
					s.Timeout = sc.Mark
					s.Code = 0
				case code != 0:
					s.Duration = int64(lat)
					s.Status = span.Error
				default:
					s.Duration = int64(lat)
					s.Status = span.OK
				}
				if sc.Attr {
					s.TimeoutInForce = int64(sc.Timeout)
				}
				out = append(out, s)
				t += s.Duration
				if !s.Failed() {
					break
				}
				t += int64(sc.Backoff)
			}
		}
	}
	return out
}

// Uniform draws a duration uniformly from lo–hi.
func Uniform(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// Lognormal draws a lognormal duration around median with log spread sigma.
func Lognormal(r *rand.Rand, median time.Duration, sigma float64) time.Duration {
	return time.Duration(float64(median) * math.Exp(sigma*r.NormFloat64()))
}

// Persistent: share of calls are slow on every attempt (lo–hi), the rest
// normal (200–700 ms).
func Persistent(share float64, lo, hi time.Duration) func(r *rand.Rand, i, k int) (time.Duration, int) {
	slow := map[int]time.Duration{}
	return func(r *rand.Rand, i, k int) (time.Duration, int) {
		if k == 1 && r.Float64() < share {
			slow[i] = Uniform(r, lo, hi)
		}
		if d, ok := slow[i]; ok {
			return d + Uniform(r, 0, 50*time.Millisecond), 0
		}
		return Uniform(r, 200*time.Millisecond, 700*time.Millisecond), 0
	}
}

// FastErrors: each attempt independently fails fast with code at rate p.
func FastErrors(p float64, code int) func(r *rand.Rand, i, k int) (time.Duration, int) {
	return func(r *rand.Rand, i, k int) (time.Duration, int) {
		if r.Float64() < p {
			return Uniform(r, 2*time.Millisecond, 40*time.Millisecond), code
		}
		return Uniform(r, 100*time.Millisecond, 400*time.Millisecond), 0
	}
}

// SpreadErrors: each attempt independently fails at rate p after a
// duration spread uniformly over lo–hi, with code (0: none).
func SpreadErrors(p float64, lo, hi time.Duration, code int) func(r *rand.Rand, i, k int) (time.Duration, int) {
	return func(r *rand.Rand, i, k int) (time.Duration, int) {
		if r.Float64() < p {
			if code == 0 {
				code = 500
			}
			return Uniform(r, lo, hi), code
		}
		return Uniform(r, 100*time.Millisecond, 400*time.Millisecond), 0
	}
}

// Jitter: independent Lognormal latency on every attempt.
func Jitter(median time.Duration, sigma float64) func(r *rand.Rand, i, k int) (time.Duration, int) {
	return func(r *rand.Rand, i, k int) (time.Duration, int) {
		return Lognormal(r, median, sigma), 0
	}
}

// Healthy: every attempt succeeds in 50–300 ms.
func Healthy(r *rand.Rand, i, k int) (time.Duration, int) {
	return Uniform(r, 50*time.Millisecond, 300*time.Millisecond), 0
}

// FailFirst: the first n calls fail fast once with code 500; the rest are
// Healthy.
func FailFirst(n int) func(r *rand.Rand, i, k int) (time.Duration, int) {
	return func(r *rand.Rand, i, k int) (time.Duration, int) {
		if i < n && k == 1 {
			return 30 * time.Millisecond, 500
		}
		return Healthy(r, i, k)
	}
}

// Both mixes two generators: call i uses a when pick(i).
func Both(a, b func(r *rand.Rand, i, k int) (time.Duration, int), pickA func(i int) bool) func(r *rand.Rand, i, k int) (time.Duration, int) {
	return func(r *rand.Rand, i, k int) (time.Duration, int) {
		if pickA(i) {
			return a(r, i, k)
		}
		return b(r, i, k)
	}
}

// Chain writes requests over hops with given latency generators.
func Chain(seed uint64, n int, hops []string, draw func(rng *rand.Rand, hop int) (time.Duration, bool)) []byte {
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

// Fleet generates calls to one hop served by five pods in two zones: every
// attempt is Lognormal around 120 ms, slowed by slow(pod, r) and failing
// fast (503) when fail(pod, r); each span carries its pod, its zone, the
// version (the same everywhere), a request id (one value per span: high
// cardinality) and a 300-byte value (too long to count). A second hop,
// "auth", is healthy and carries the same attributes.
func Fleet(seed uint64, calls int, slow func(pod int, r *rand.Rand) time.Duration, fail func(pod int, r *rand.Rand) bool) []span.Span {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	long := strings.Repeat("x", 300)
	var out []span.Span
	for i := range calls {
		trace := fmt.Sprintf("%016x", seed*1_000_003+uint64(i))
		for _, hop := range []string{"cart", "auth"} {
			pod := r.IntN(5)
			d := Lognormal(r, 120*time.Millisecond, 0.3)
			failed := false
			if hop == "cart" {
				d += slow(pod, r)
				failed = fail(pod, r)
			}
			s := span.Span{TraceID: trace, SpanID: trace + hop, Service: "gw", Name: hop, Hop: hop, Kind: "client",
				Start: t0 + int64(i)*int64(time.Second), Duration: int64(d), Status: span.OK, Weight: 1,
				Attrs: []span.Attr{
					{Key: "k8s.pod.name", Value: fmt.Sprintf("%s-%d", hop, pod)},
					{Key: "cloud.availability_zone", Value: fmt.Sprintf("z%d", pod%2)},
					{Key: "service.version", Value: "1.4.2"},
					{Key: "request.id", Value: fmt.Sprintf("req-%d", i)},
					{Key: "blob", Value: long},
				}}
			if failed {
				s.Status, s.Code, s.Duration = span.Error, 503, int64(Uniform(r, 2*time.Millisecond, 20*time.Millisecond))
				s.Attrs = append(s.Attrs, span.Attr{Key: "http.response.status_code", Value: "503"})
			}
			out = append(out, s)
		}
	}
	return out
}

// Never: no attempt fails.
func Never(int, *rand.Rand) bool { return false }

// BadPod: pod 3 is slow (+400–900 ms) on 20% of its attempts.
func BadPod(pod int, r *rand.Rand) time.Duration {
	if pod == 3 && r.Float64() < 0.2 {
		return Uniform(r, 400*time.Millisecond, 900*time.Millisecond)
	}
	return 0
}

// TraceGen writes traces of a gateway fanning out to services: a server
// root "gw GET /", and under it, per Callee, a client span "gw → NAME" in
// the gateway with the Callee's server span "NAME handle" inside it. The
// client span lasts the server's time plus the gap between them.
type TraceGen struct {
	Spans []span.Span
	T0    int64
}

// Callee is one call a request makes: the server's time, the gap, and
// whether it fails.
type Callee struct {
	Name        string
	Server, Gap time.Duration
	Failed      bool
}

// Add writes one request. parallel: the calls run side by side (fan-out);
// otherwise one after the other.
func (g *TraceGen) Add(trace string, parallel bool, calls []Callee) {
	root := span.Span{TraceID: trace, SpanID: trace + "-r", Service: "gw", Name: "GET /", Kind: "server", Hop: "gw GET /", Start: g.T0, Weight: 1}
	at := g.T0 + int64(time.Millisecond)
	end := at
	failed := false
	for i, c := range calls {
		id := fmt.Sprintf("%s-%d", trace, i)
		cd := int64(c.Server + c.Gap)
		cl := span.Span{TraceID: trace, SpanID: id + "c", ParentID: root.SpanID, Service: "gw", Name: "→ " + c.Name, Kind: "client",
			Hop: "gw → " + c.Name, Start: at, Duration: cd, Weight: 1}
		sv := span.Span{TraceID: trace, SpanID: id + "s", ParentID: cl.SpanID, Service: c.Name, Name: "handle", Kind: "server",
			Hop: c.Name + " handle", Start: at + int64(c.Gap)/2, Duration: int64(c.Server), Weight: 1}
		if c.Failed {
			cl.Status, sv.Status, failed = span.Error, span.Error, true
		}
		g.Spans = append(g.Spans, cl, sv)
		end = max(end, at+cd)
		if !parallel {
			at += cd
		}
	}
	root.Duration = end - g.T0 + int64(time.Millisecond)
	if failed {
		root.Status = span.Error
	}
	g.Spans = append(g.Spans, root)
	g.T0 += int64(2 * time.Second)
}

// RMS draws a whole number of ms from lo–hi.
func RMS(r *rand.Rand, lo, hi int) time.Duration {
	return time.Duration(lo+r.IntN(hi-lo+1)) * time.Millisecond
}

// IDShapes are span-name shapes that carry an id, as instrumentation that
// names spans by URL path (or by message key) writes them.
var IDShapes = []struct {
	route string
	name  func(r *rand.Rand, k int) string
}{
	{"/users/{id}", func(_ *rand.Rand, k int) string { return fmt.Sprintf("GET /users/%d", 100000+k) }},
	{"/orders/{id}", func(r *rand.Rand, k int) string {
		return fmt.Sprintf("GET /orders/%08x-%04x-4%03x-a%03x-%012x", r.Uint32(), k&0xffff, r.IntN(4096), r.IntN(4096), r.Uint64()>>16)
	}},
	{"/blobs/{id}/meta", func(r *rand.Rand, k int) string {
		return fmt.Sprintf("GET /blobs/%012x%012x/meta", r.Uint64()>>16, uint64(k))
	}},
	{"/sessions/{id}", func(r *rand.Rand, k int) string {
		// Base62: digits anywhere (two placed, so that it alternates).
		const a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
		b := make([]byte, 22)
		for i := range b {
			b[i] = a[r.IntN(len(a))]
		}
		b[3], b[4], b[9], b[10] = byte('0'+k%10), 'x', byte('0'+r.IntN(10)), 'Q'
		return "POST /sessions/" + string(b)
	}},
	{"/carts/{id}/items", func(_ *rand.Rand, k int) string { return fmt.Sprintf("PUT /carts/cart_%d/items", 7000+k) }},
}

// IDSpans generates flat traces (a root and calls under it) whose call
// hops carry ids of the given shapes: hops distinct names in all, each
// call span with its route in http.route.
func IDSpans(seed uint64, traces, hops int, shapes []int) []span.Span {
	r := rand.New(rand.NewPCG(seed, 18))
	names := make([][]string, len(shapes))
	for i, s := range shapes {
		for k := range max(1, hops/len(shapes)) {
			names[i] = append(names[i], IDShapes[s].name(r, k))
		}
	}
	var out []span.Span
	t0 := int64(1_767_225_600) * 1e9
	for tr := range traces {
		id := fmt.Sprintf("t%07d", tr)
		at := t0 + int64(tr)*1e6
		root := span.Span{TraceID: id, SpanID: id + "r", Service: "gateway", Name: "gateway", Hop: "gateway", Kind: "server", Start: at, Weight: 1}
		start := at
		for i, s := range shapes {
			n := names[i][r.IntN(len(names[i]))]
			d := int64((5 + r.ExpFloat64()*20) * 1e6)
			sp := span.Span{TraceID: id, SpanID: fmt.Sprintf("%s%d", id, i), ParentID: id + "r", Service: strings.Trim(IDShapes[s].route[:strings.Index(IDShapes[s].route[1:], "/")+1], "/"),
				Name: n, Hop: n, Kind: "client", Start: start, Duration: d, Weight: 1,
				Attrs: []span.Attr{{Key: "http.route", Value: IDShapes[s].route}}}
			if r.IntN(100) == 0 {
				sp.Status = span.Error
			}
			out = append(out, sp)
			start += d
		}
		root.Duration = start - at + 1e5
		out = append(out, root)
	}
	return out
}

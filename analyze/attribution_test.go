package analyze

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/span"
	"github.com/tailscope/tailscope/span/spantest"
)

// evenSlow: every pod is slow the same way on 4% of its attempts.
func evenSlow(pod int, r *rand.Rand) time.Duration {
	if r.Float64() < 0.04 {
		return spantest.Uniform(r, 400*time.Millisecond, 900*time.Millisecond)
	}
	return 0
}

func noSlow(int, *rand.Rand) time.Duration { return 0 }

// One slow pod among five: attribution names it (and only it: not the
// zone it shares with two healthy pods, not the version, not the request
// ids or the long values), with a lift near what the generator implies,
// counts that add up, and example traces of its slowest attempts; the
// healthy hop names nothing; its eject advice names the pod and its lift
// (recommend/eject_test.go checks the recommendation built on it).
func TestAttributionBadInstance(t *testing.T) {
	spans := spantest.Fleet(1, 4000, spantest.BadPod, spantest.Never)
	rep := analyse(spans, Options{})
	h := hopOf(rep, "cart")
	if len(h.Attribution) == 0 {
		t.Fatal("the slow pod is not named")
	}
	a := h.Attribution[0]
	if a.Key != "k8s.pod.name" || a.Value != "cart-3" || a.Of != "tail" {
		t.Fatalf("first attribution %+v, want k8s.pod.name=cart-3 of the tail", a)
	}
	// Pod 3 holds nearly all of the tail while serving a fifth of the
	// attempts: a lift near 5.
	if a.Lift < 3.5 || a.Lift > 5.5 || a.Share < 0.75 {
		t.Errorf("lift %.2f share %.2f, want a lift of 3.5–5 and most of the tail", a.Lift, a.Share)
	}
	if a.Tail > a.Total || a.Tail > a.HopCount || math.Abs(a.Share-float64(a.Tail)/float64(a.HopCount)) > 1e-4 {
		t.Errorf("counts do not add up: %+v", a)
	}
	if len(a.Examples) != AttrExamples || a.PValue > 1e-10 {
		t.Errorf("examples %v, p %g", a.Examples, a.PValue)
	}
	for _, x := range h.Attribution {
		if x.Key != "k8s.pod.name" && x.Key != "cloud.availability_zone" {
			t.Errorf("attributed to %s=%s", x.Key, x.Value)
		}
		if x.Key == "k8s.pod.name" && x.Value != "cart-3" {
			t.Errorf("a healthy pod is named: %+v", x)
		}
	}
	// The slowest attempt's trace is the first example of the pod (it is
	// the hop's slowest).
	if h.Examples == nil || h.Examples.SlowestTraceID != a.Examples[0] {
		t.Errorf("hop examples %+v, pod's %v", h.Examples, a.Examples)
	}
	if g := hopOf(rep, "auth"); len(g.Attribution) != 0 {
		t.Errorf("the healthy hop names %+v", g.Attribution)
	}
	// The eject advice the recommendation adds (package recommend): the
	// pod, its lift, and the instances compared.
	if e := h.Ejection(); e == nil || e.Key != "k8s.pod.name" || e.Value != "cart-3" || e.Lift != a.Lift || e.Instances != 5 {
		t.Fatalf("ejection = %+v", e)
	}
	if g := hopOf(rep, "auth"); g.Ejection() != nil {
		t.Errorf("the healthy hop's ejection: %+v", g.Ejection())
	}
}

// An even tail (the same slowness on all five pods) names nothing, over
// many seeds: the significance test keeps noise out. So does a hop with
// no tail to speak of.
func TestAttributionEvenTailNamesNothing(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 10
	}
	named := 0
	for seed := range uint64(seeds) {
		for _, slow := range []func(int, *rand.Rand) time.Duration{evenSlow, noSlow} {
			rep := analyse(spantest.Fleet(100+seed, 1500, slow, func(_ int, r *rand.Rand) bool { return r.Float64() < 0.03 }), Options{})
			for _, h := range rep.Hops {
				if len(h.Attribution) > 0 {
					named++
					t.Logf("seed %d %s: %+v", seed, h.Hop, h.Attribution)
				}
				if h.Recommendation.Eject != nil {
					t.Errorf("seed %d %s: eject %+v", seed, h.Hop, h.Recommendation.Eject)
				}
			}
		}
	}
	if named > 0 {
		t.Errorf("%d of %d hops name a value on an even tail", named, 4*seeds)
	}
}

// Failures concentrated on one pod (pod 1 fails 15% of its attempts, the
// others 0.5%) name it, over the failures, with the eject advice; the
// status code attribute that every failure carries is not reported.
func TestAttributionFailures(t *testing.T) {
	rep := analyse(spantest.Fleet(7, 3000, noSlow, func(pod int, r *rand.Rand) bool {
		if pod == 1 {
			return r.Float64() < 0.15
		}
		return r.Float64() < 0.005
	}), Options{})
	h := hopOf(rep, "cart")
	var got *Attribution
	for i, a := range h.Attribution {
		if strings.Contains(a.Key, "status") {
			t.Errorf("outcome key reported: %+v", a)
		}
		if a.Of == "failures" && a.Key == "k8s.pod.name" {
			got = &h.Attribution[i]
		}
	}
	if got == nil || got.Value != "cart-1" || got.Lift < 3 || got.Failed != int(math.Round(got.Share*float64(got.HopCount))) {
		t.Fatalf("failures attribution %+v in %+v", got, h.Attribution)
	}
	if len(got.Examples) == 0 {
		t.Error("no example failures")
	}
	if e := h.Ejection(); e == nil || e.Value != "cart-1" || e.Of != "failures" {
		t.Errorf("eject %+v", e)
	}
	if h.Examples == nil || h.Examples.FailedTraceID == "" {
		t.Errorf("hop examples %+v", h.Examples)
	}
}

// The streamed state gives the report Run gives on the spans in memory,
// and the same split over Parts merged in any order: attribution and
// examples are over every span, not the sample, and deterministic.
func TestAttributionStreamedAndMerged(t *testing.T) {
	spans := spantest.Fleet(3, 3000, spantest.BadPod, func(pod int, r *rand.Rand) bool { return pod == 2 && r.Float64() < 0.1 })
	want := analyse(spans, Options{})
	if len(hopOf(want, "cart").Attribution) < 2 {
		t.Fatalf("the fixture should name the slow and the failing pod: %+v", hopOf(want, "cart").Attribution)
	}
	js := func(rep *Report) string {
		var b bytes.Buffer
		for _, h := range rep.Hops {
			json.NewEncoder(&b).Encode(struct {
				A []Attribution
				E *HopExamples
				R Recommendation
			}{h.Attribution, h.Examples, h.Recommendation})
		}
		return b.String()
	}
	acc := NewAccum(0)
	for i := range spans {
		sp := spans[i]
		acc.Add(&sp)
	}
	if got := js(measured(acc, Options{})); got != js(want) {
		t.Errorf("Accum.Add differs from Run:\n%s\nvs\n%s", got, js(want))
	}
	for seed := range uint64(4) {
		for _, parts := range []int{2, 3, 5} {
			if got := js(measured(forked(spans, 0, parts, 2, seed), Options{})); got != js(want) {
				t.Errorf("%d parts, seed %d: differs from Run:\n%s\nvs\n%s", parts, seed, got, js(want))
			}
		}
	}
	// Sampled: the trees rest on a sample without attributes, the
	// attribution on every span.
	sampled := forked(spans, 1000, 3, 2, 9)
	if !sampled.Sampled() {
		t.Fatal("not sampled")
	}
	srep := measured(sampled, Options{})
	if a, w := hopOf(srep, "cart").Attribution, hopOf(want, "cart").Attribution; fmt.Sprint(a) != fmt.Sprint(w) {
		t.Errorf("sampled: %+v, want %+v", a, w)
	}
}

// A key with more values than AttrMaxValues on a hop is dropped there
// (request ids), values longer than AttrMaxValueLen are ignored, and a hop
// keeps at most AttrMaxKeys keys, instance-like ones first, then the
// smallest names, whatever the order:
// the state stays bounded over a long stream of spans with ever new keys
// and values.
func TestAttributionBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	acc := NewAccum(1000)
	p1, p2 := acc.Part(), acc.Part()
	solo := &hopAcc{name: "h"}
	for i := range 200_000 {
		s := span.Span{TraceID: fmt.Sprintf("t%d", i/4), Hop: "h", Duration: int64(spantest.Lognormal(r, 50*time.Millisecond, 2)), Status: span.OK, Weight: 1,
			Attrs: []span.Attr{
				{Key: "pod", Value: fmt.Sprintf("p%d", r.IntN(8))},
				{Key: "a.request.id", Value: fmt.Sprintf("%d", i)},
				{Key: fmt.Sprintf("aaa.%06d", r.IntN(1000)), Value: "v"},
				{Key: "url", Value: strings.Repeat("u", AttrMaxValueLen+1)},
			}}
		solo.add(&s)
		if i%2 == 0 {
			p1.Add(&s)
		} else {
			p2.Add(&s)
		}
	}
	keys, vals, bins := solo.at.size()
	if keys > AttrMaxKeys || vals > AttrMaxKeys*AttrMaxValues {
		t.Errorf("%d keys, %d values", keys, vals)
	}
	// Every key a bounded number of bins: the sketch's range.
	if bins > vals*6000 {
		t.Errorf("%d bins for %d values", bins, vals)
	}
	if k := solo.at.keys["a.request.id"]; k == nil || !k.dropped || k.list != nil || k.index != nil {
		t.Errorf("high-cardinality key kept: %+v", k)
	}
	if k := solo.at.keys["url"]; k != nil {
		t.Errorf("too-long values counted: %+v", k)
	}
	if k := solo.at.keys["pod"]; k == nil || k.dropped || len(k.list) != 8 || k.index != nil {
		t.Errorf("pod: %+v", k)
	}
	// The kept keys are the instance-like ones and the smallest names
	// seen: pod, a.request.id and aaa.000000–aaa.000061.
	var largest string
	for name := range solo.at.keys {
		if name != "pod" {
			largest = max(largest, name)
		}
	}
	if largest != "aaa.000061" || len(solo.at.keys) != AttrMaxKeys {
		t.Errorf("largest kept key %q of %d", largest, len(solo.at.keys))
	}
	acc.Merge(p2)
	acc.Merge(p1)
	m := acc.hops["h"].at
	if fmt.Sprint(m.size()) != fmt.Sprint(solo.at.size()) {
		t.Errorf("merged size %v, alone %v", fmt.Sprint(m.size()), fmt.Sprint(solo.at.size()))
	}
	for name, k := range solo.at.keys {
		mk := m.keys[name]
		if mk == nil || mk.dropped != k.dropped || len(mk.list) != len(k.list) {
			t.Errorf("key %s: merged %+v, alone %+v", name, mk, k)
			continue
		}
		for _, x := range k.list {
			if y := mk.find(x.name); y == nil || fmt.Sprint(*y) != fmt.Sprint(*x) {
				t.Errorf("%s=%s: merged %+v, alone %+v", name, x.name, y, x)
			}
		}
	}
}

// The Fisher test against direct sums, and its extremes.
func TestFisherUpper(t *testing.T) {
	// N=10, K=4, n=5: P(X ≥ 3) = (C(4,3)C(6,2) + C(4,4)C(6,1)) / C(10,5) = (60+6)/252.
	if p := fisherUpper(10, 4, 5, 3); math.Abs(p-66.0/252) > 1e-9 {
		t.Errorf("p = %g, want %g", p, 66.0/252)
	}
	if p := fisherUpper(10, 4, 5, 0); math.Abs(p-1) > 1e-9 {
		t.Errorf("P(X ≥ 0) = %g", p)
	}
	if p := fisherUpper(10, 4, 5, 5); p != 0 {
		t.Errorf("impossible count: %g", p)
	}
	if p := fisherUpper(1_000_000, 10_000, 200_000, 9_000); p > 1e-100 {
		t.Errorf("a huge effect: %g", p)
	}
}

// A callee-side hop whose slow attempts concentrate on one pod has the
// eject advice; the calls into it name no pod and have none of their own
// (the recommendation passes the callee's to them through the
// client/server pairs: recommend/eject_test.go).
func TestAttributionEjectOnCallee(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	g := &spantest.TraceGen{T0: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()}
	pods := map[string]int{}
	for i := range 2000 {
		trace := fmt.Sprintf("t%05d", i)
		pod := r.IntN(5)
		c := spantest.Callee{Name: "cart", Server: spantest.RMS(r, 20, 60), Gap: spantest.RMS(r, 1, 3)}
		if pod == 2 && r.IntN(5) == 0 {
			c.Server += spantest.RMS(r, 400, 800)
		}
		pods[trace] = pod
		g.Add(trace, false, []spantest.Callee{c})
	}
	for i := range g.Spans {
		if s := &g.Spans[i]; s.Hop == "cart handle" {
			s.Attrs = []span.Attr{{Key: "service.instance.id", Value: fmt.Sprintf("cart-%d", pods[s.TraceID])}}
		}
	}
	rep := analyse(g.Spans, Options{})
	callee, caller := hopOf(rep, "cart handle"), hopOf(rep, "gw → cart")
	if e := callee.Ejection(); e == nil || e.Value != "cart-2" || e.From != "" {
		t.Fatalf("callee eject %+v (attribution %+v)", e, callee.Attribution)
	}
	if len(caller.Attribution) != 0 || caller.Ejection() != nil {
		t.Fatalf("the caller's spans carry no attributes, yet %+v", caller.Attribution)
	}
}

// BenchmarkAccumAddAttrs is BenchmarkAccumAdd with six attributes a span:
// two instance-like, a zone, a version, a route and a request id (high
// cardinality, dropped early). Compare spans/s with BenchmarkAccumAdd for
// the cost of attribution.
func BenchmarkAccumAddAttrs(b *testing.B) {
	ss := chainSpans(3, 20_000)
	for i := range ss {
		ss[i].Attrs = []span.Attr{
			{Key: "k8s.pod.name", Value: fmt.Sprintf("pod-%d", i%5)},
			{Key: "host.name", Value: fmt.Sprintf("node-%d", i%3)},
			{Key: "cloud.availability_zone", Value: fmt.Sprintf("z%d", i%2)},
			{Key: "service.version", Value: "1.2.3"},
			{Key: "http.route", Value: "/api/v1/items/{id}"},
			{Key: "request.id", Value: fmt.Sprintf("%08x", i)},
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		acc := NewAccum(10_000)
		for i := range ss {
			acc.Add(&ss[i])
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(ss))/b.Elapsed().Seconds(), "spans/s")
}

// A key finds its values by scanning up to keyScan of them and by its
// index beyond, the same values either way; sorted orders them by name.
func TestKeyAttrIndex(t *testing.T) {
	k := &keyAttr{name: "k"}
	const n = 3 * keyScan
	for i := n - 1; i >= 0; i-- {
		if k.find(fmt.Sprint(i)) != nil {
			t.Fatalf("value %d found before it was added", i)
		}
		k.insert(&valAttr{name: fmt.Sprint(i), n: i})
		if (k.index != nil) != (len(k.list) > keyScan) {
			t.Fatalf("%d values: index %v", len(k.list), k.index != nil)
		}
		for j := i; j < n; j++ {
			if v := k.find(fmt.Sprint(j)); v == nil || v.n != j {
				t.Fatalf("%d values: value %d not found (%v)", len(k.list), j, v)
			}
		}
	}
	var names []string
	for _, v := range k.sorted() {
		names = append(names, v.name)
	}
	if !slices.IsSorted(names) || len(names) != n {
		t.Errorf("sorted: %v", names)
	}
}

// size is the number of values and bins the state holds (for tests of
// its bound).
func (a *hopAttr) size() (keys, vals, bins int) {
	a.flush()
	for _, k := range a.keys {
		keys++
		for _, v := range k.list {
			vals++
			bins += len(v.bins)
		}
	}
	return
}

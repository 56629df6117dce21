package analyze

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/tailscope/tailscope/span"
)

// traceOfRank returns a trace id (with prefix) whose hash has rank r.
func traceOfRank(prefix string, r int) string {
	for i := 0; ; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if bits.LeadingZeros64(hashID(id)) == r {
			return id
		}
	}
}

// headStartInput is n spans in traces of 1 to maxTrace spans (some
// without a trace id when loose), after `giant` spans of one trace of
// rank giantRank when giant > 0.
func headStartInput(seed uint64, n, maxTrace, giant, giantRank int, loose bool) []span.Span {
	r := rand.New(rand.NewPCG(seed, 7))
	var ss []span.Span
	if giant > 0 {
		id := traceOfRank("giant", giantRank)
		for range giant {
			ss = append(ss, span.Span{TraceID: id, Hop: "g", Duration: 1e6 + r.Int64N(1e6), Status: span.OK, Weight: 1})
		}
	}
	for t := 0; len(ss) < n; t++ {
		id := fmt.Sprintf("t%d-%d", seed, t)
		if loose && r.IntN(20) == 0 {
			id = ""
		}
		for range 1 + r.IntN(maxTrace) {
			ss = append(ss, span.Span{TraceID: id, SpanID: fmt.Sprint(len(ss)), Hop: fmt.Sprint("h", r.IntN(5)), Duration: 1e6 + r.Int64N(1e8), Status: span.OK, Weight: 1})
		}
	}
	return ss
}

// sameSample reports whether two Accums hold the same sample, level and
// limit (what a report and a summary are made of).
func sameSample(a, b *Accum) bool {
	return a.level == b.level && a.limit == b.limit && a.total == b.total && a.loose == b.loose &&
		reflect.DeepEqual(a.Spans(), b.Spans()) && reflect.DeepEqual(a.hashes, b.hashes) && reflect.DeepEqual(a.files, b.files)
}

// The head start (Expect) leaves the sample exactly as climbing level by
// level makes it whenever Held says so, through Add and through Parts
// running ahead of Ordered; it does jump on ordinary logs; and when an
// expectation is far too high, Held says the sample is wrong rather than
// let it through.
func TestExpectSameSample(t *testing.T) {
	const S = 1000
	for _, c := range []struct {
		name         string
		ss           []span.Span
		expect       float64 // expected spans, as a multiple of the real number
		exact        bool
		jumps, holds bool // what must happen (checked when set)
	}{
		{name: "ordinary, exact count", ss: headStartInput(1, 60*S, 12, 0, 0, false), expect: 1, exact: true, jumps: true, holds: true},
		{name: "ordinary, estimate", ss: headStartInput(2, 60*S, 12, 0, 0, true), expect: 1.3, jumps: true, holds: true},
		{name: "estimate far too high", ss: headStartInput(3, 60*S, 12, 0, 0, false), expect: 40, exact: true, jumps: true},
		{name: "count too low to jump", ss: headStartInput(4, 3*S, 12, 0, 0, false), expect: 1, exact: true},
		// One trace of rank 3 fills the sample first: climbing reaches
		// level 3 and doubles the limit there (halving would empty it).
		{name: "giant trace first", ss: headStartInput(5, 40*S, 12, 3*S, 3, false), expect: 1, exact: true},
		{name: "giant trace of rank 0 first", ss: headStartInput(6, 40*S, 12, 2*S, 0, false), expect: 1, exact: true},
		{name: "big traces", ss: headStartInput(7, 80*S, 400, 0, 0, true), expect: 1, exact: true},
	} {
		want := NewAccum(S)
		for i := range c.ss {
			want.Add(&c.ss[i])
		}
		n := int64(float64(len(c.ss)) * c.expect)
		got := NewAccum(S)
		got.Expect(n, c.exact)
		for i := range c.ss {
			got.Add(&c.ss[i])
		}
		if c.jumps && got.spec == 0 {
			t.Errorf("%s: no jump", c.name)
		}
		if c.holds && !got.Held() {
			t.Errorf("%s: jump to %d did not hold", c.name, got.spec)
		}
		if c.name == "estimate far too high" && got.Held() {
			t.Errorf("%s: a jump to %d past the final level %d held", c.name, got.spec, want.level)
		}
		if got.Held() && !sameSample(got, want) {
			t.Errorf("%s: held (jump %d) but level %d limit %d %d spans; want level %d limit %d %d spans", c.name, got.spec,
				got.level, got.limit, len(got.Spans()), want.level, want.limit, len(want.Spans()))
		}
		for _, shape := range [][2]int{{2, 1}, {2, 5}, {3, 2}} {
			f := NewAccum(S)
			f.Expect(n, c.exact)
			forkedInto(f, c.ss, shape[0], shape[1], uint64(shape[0]*10+shape[1]))
			if f.Held() != got.Held() {
				t.Errorf("%s, %d parts, lag %d: held %v, Add's %v", c.name, shape[0], shape[1], f.Held(), got.Held())
			}
			if f.Held() && !sameSample(f, want) {
				t.Errorf("%s, %d parts, lag %d: held (jump %d) but the sample differs", c.name, shape[0], shape[1], f.spec)
			}
		}
	}
}

// Random shapes: whatever the input and the expectation, a sample that
// Held vouches for is the one climbing gives.
func TestExpectHeldIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(99, 1))
	held, jumped := 0, 0
	for i := range 60 {
		S := 100 + r.IntN(400)
		n := S * (2 + r.IntN(60))
		giant := 0
		if r.IntN(3) == 0 {
			giant = S/2 + r.IntN(3*S)
		}
		ss := headStartInput(uint64(100+i), n, 1+r.IntN(60), giant, r.IntN(5), r.IntN(2) == 0)
		want := NewAccum(S)
		for k := range ss {
			want.Add(&ss[k])
		}
		expect, exact := int64(float64(len(ss))*[]float64{0.3, 1, 1, 2, 8}[r.IntN(5)]), r.IntN(2) == 0
		got := NewAccum(S)
		got.Expect(expect, exact)
		for k := range ss {
			got.Add(&ss[k])
		}
		f := NewAccum(S)
		f.Expect(expect, exact)
		forkedInto(f, ss, 2, 1+i%4, uint64(i))
		if f.Held() != got.Held() || (f.Held() && !sameSample(f, want)) {
			t.Errorf("case %d: through Parts held %v (jump %d), through Add %v (jump %d), or the sample differs", i, f.Held(), f.spec, got.Held(), got.spec)
		}
		if got.spec > 0 {
			jumped++
		}
		if got.Held() {
			held++
			if !sameSample(got, want) {
				t.Errorf("case %d: held (jump %d, S %d, %d spans, giant %d) but level %d limit %d; want level %d limit %d",
					i, got.spec, S, len(ss), giant, got.level, got.limit, want.level, want.limit)
			}
		}
	}
	if jumped == 0 || held == 0 {
		t.Errorf("jumped %d, held %d of 60: the cases do not exercise the head start", jumped, held)
	}
}

package analyze

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
)

// forked feeds ss the way a parallel reader does: blocks of spans go to
// Parts round-robin, each Part sees its block `lag` blocks before the
// ordered goroutine delivers it (so Parts decide on a stale sample
// level), the spans a Part forwards reach Ordered in input order, and the
// Parts merge at the end.
func forked(ss []span.Span, sampleSpans, parts, lag int, seed uint64) *Accum {
	return forkedInto(NewAccum(sampleSpans), ss, parts, lag, seed)
}

// forkedInto is forked into a given (empty) Accum.
func forkedInto(acc *Accum, ss []span.Span, parts, lag int, seed uint64) *Accum {
	r := rand.New(rand.NewPCG(seed, 1))
	ps := make([]*Part, parts)
	for i := range ps {
		ps[i] = acc.Part()
	}
	var queue [][]span.Span // blocks decoded, not yet delivered
	deliver := func() {
		for i := range queue[0] {
			acc.Ordered(&queue[0][i])
		}
		queue = queue[1:]
	}
	for b, at := 0, 0; at < len(ss); b++ {
		end := min(len(ss), at+1+r.IntN(200))
		var again []span.Span
		for i := at; i < end; i++ {
			sp := ss[i]
			if ps[b%parts].Add(&sp) {
				again = append(again, sp)
			}
		}
		queue = append(queue, again)
		if len(queue) > lag {
			deliver()
		}
		at = end
	}
	for len(queue) > 0 {
		deliver()
	}
	for _, p := range ps {
		acc.Merge(p)
	}
	return acc
}

// Accumulating in Parts gives the report Add gives, to the byte, in exact
// mode, in sampled mode (a sample level that rises while Parts run ahead)
// and past the exact range of a hop reached only by merging Parts; and
// the sample keeps the same spans in the same order.
func TestPartsSameAsAdd(t *testing.T) {
	loose := chainSpans(9, 300)
	for i := range loose {
		if i%7 == 0 {
			loose[i].TraceID = "" // no trace id: each span its own request
		}
	}
	r := rand.New(rand.NewPCG(10, 11))
	var wide []span.Span // one hop over ExactLimit, no Part over it alone
	for i := range quantile.ExactLimit + quantile.ExactLimit/2 {
		s := span.Span{TraceID: time.Duration(i / 3).String(), Hop: "wide", Duration: int64(300e6 * math.Exp(r.NormFloat64())), Status: span.OK, Weight: 1}
		if i%50 == 0 {
			s.Status, s.Timeout, s.Duration = span.Error, true, 3e9
		}
		wide = append(wide, s)
	}
	for _, c := range []struct {
		name        string
		ss          []span.Span
		sampleSpans int
	}{
		{"exact", chainSpans(5, 2000), 0},
		{"sampled", chainSpans(6, 6000), 1500},
		{"loose ids", loose, 200},
		{"past the exact range", wide, 3000},
	} {
		want := NewAccum(c.sampleSpans)
		for i := range c.ss {
			want.Add(&c.ss[i])
		}
		wantJSON := reportJSON(t, measured(want, Options{}))
		for _, shape := range [][2]int{{1, 0}, {2, 1}, {2, 6}, {3, 3}} {
			got := forked(c.ss, c.sampleSpans, shape[0], shape[1], uint64(shape[0]*10+shape[1]))
			if got.Total() != want.Total() || got.Sampled() != want.Sampled() || !reflect.DeepEqual(got.Spans(), want.Spans()) {
				t.Errorf("%s, %d parts, lag %d: total %d sampled %v %d spans; want %d %v %d", c.name, shape[0], shape[1],
					got.Total(), got.Sampled(), len(got.Spans()), want.Total(), want.Sampled(), len(want.Spans()))
				continue
			}
			if !bytes.Equal(reportJSON(t, measured(got, Options{})), wantJSON) {
				t.Errorf("%s, %d parts, lag %d: report differs from Add's", c.name, shape[0], shape[1])
			}
		}
		if c.name == "sampled" && !want.Sampled() {
			t.Error("the sampled case did not sample")
		}
		if c.name == "past the exact range" && want.hops["wide"].succ.Exact() {
			t.Error("the wide hop stayed exact")
		}
	}
}

// Parts on their own goroutines, publishing their counts as they go (run
// with -race), still give Add's report; the hop over the exact range is
// sketched in the Parts before they merge.
func TestPartsConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	var ss []span.Span
	for i := range 3 * quantile.ExactLimit / 2 {
		hop := "wide"
		if i%10 == 0 {
			hop = "narrow"
		}
		ss = append(ss, span.Span{TraceID: time.Duration(i / 4).String(), Hop: hop, Duration: int64(1e6 * math.Exp(r.NormFloat64())), Status: span.OK, Weight: 1})
	}
	want := NewAccum(1000)
	for i := range ss {
		want.Add(&ss[i])
	}
	acc := NewAccum(1000)
	const parts = 2
	ps := [parts]*Part{acc.Part(), acc.Part()}
	again := make([][]span.Span, parts)
	done := make(chan int)
	for k := range parts {
		go func() {
			for i := k; i < len(ss); i += parts {
				if ps[k].Add(&ss[i]) {
					again[k] = append(again[k], ss[i])
				}
			}
			done <- k
		}()
	}
	<-done
	<-done
	// Whichever Part published last saw the wide hop past the exact range
	// (even if the other had finished first): it sketched there.
	if ps[0].hops["wide"].succ.Exact() && ps[1].hops["wide"].succ.Exact() || !ps[0].hops["narrow"].succ.Exact() {
		t.Error("publish: the wide hop should be sketched in a Part, the narrow one exact")
	}
	// Nothing rose the level while the Parts ran: every span came back;
	// deliver them in input order.
	if len(again[0])+len(again[1]) != len(ss) {
		t.Fatalf("%d spans forwarded, want all %d", len(again[0])+len(again[1]), len(ss))
	}
	for i := range ss {
		acc.Ordered(&again[i%parts][i/parts])
	}
	for _, p := range ps {
		acc.Merge(p)
	}
	if !bytes.Equal(reportJSON(t, measured(acc, Options{})), reportJSON(t, measured(want, Options{}))) {
		t.Error("report differs from Add's")
	}
}

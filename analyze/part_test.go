package analyze

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
	"github.com/tailscope/tailscope/span/spantest"
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

// A reader may leave off the spans it gives a Part the attributes the Part
// says it ignores (AttrIgnored) and nothing changes: the report is the one
// of every attribute read, sampled or not, over any number of Parts — the
// spans for Ordered keep all theirs. The Part says so of the key with a
// value a span on each hop once it passes AttrMaxValues there, and of no
// other key, hop or Part.
func TestPartAttrIgnored(t *testing.T) {
	spans := spantest.Fleet(4, 3000, spantest.BadPod, func(pod int, r *rand.Rand) bool { return pod == 1 && r.Float64() < 0.1 })
	js := func(rep *Report) string {
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, sample := range []int{0, 500} {
		for _, parts := range []int{1, 3} {
			want := js(measured(forked(spans, sample, parts, 2, 7), Options{}))
			acc := NewAccum(sample)
			ps := make([]*Part, parts)
			for i := range ps {
				ps[i] = acc.Part()
			}
			var again []span.Span
			left := 0
			for i := range spans {
				p := ps[i/100%parts]
				sp := spans[i]
				sp.Attrs = slices.DeleteFunc(slices.Clone(sp.Attrs), func(a span.Attr) bool { return p.AttrIgnored(sp.Hop, a.Key) })
				left += len(spans[i].Attrs) - len(sp.Attrs)
				if p.Add(&sp) {
					again = append(again, spans[i])
				}
			}
			for i := range again {
				acc.Ordered(&again[i])
			}
			if !ps[0].AttrIgnored("cart", "request.id") || ps[0].AttrIgnored("cart", "k8s.pod.name") || ps[0].AttrIgnored("nowhere", "request.id") {
				t.Errorf("%d parts: request.id ignored %v, pod %v, unknown hop %v", parts,
					ps[0].AttrIgnored("cart", "request.id"), ps[0].AttrIgnored("cart", "k8s.pod.name"), ps[0].AttrIgnored("nowhere", "request.id"))
			}
			for _, p := range ps {
				acc.Merge(p)
			}
			if got := js(measured(acc, Options{})); got != want {
				t.Errorf("sample %d, %d parts: leaving ignored attributes off changes the report", sample, parts)
			}
			if left < len(spans)/2 {
				t.Errorf("sample %d, %d parts: %d attributes left off, want most request ids", sample, parts, left)
			}
		}
	}
}

// Hops whose names fall on neighbouring slots of Part.recent all find
// one (no hop is left to the map on every span): three names on one slot
// and a fourth on the next, placed there by their addresses.
func TestPartRecentCrowdedSlots(t *testing.T) {
	buf := make([]byte, 1<<16)
	slot := func(off int) uint64 {
		return uint64(uintptr(unsafe.Pointer(&buf[off]))) * 0x9E3779B97F4A7C15 >> (64 - minRecentBits)
	}
	at := map[uint64][]int{}
	for off := 0; off+8 <= len(buf); off += 8 {
		at[slot(off)] = append(at[slot(off)], off)
	}
	var offs []int
	for k := uint64(0); k+1 < 1<<minRecentBits; k++ {
		if len(at[k]) >= 3 && len(at[k+1]) >= 1 {
			offs = append(at[k][:3:3], at[k+1][0])
			break
		}
	}
	if offs == nil {
		t.Fatal("no crowded slots in the buffer")
	}
	names := make([]string, len(offs))
	for i, off := range offs {
		copy(buf[off:], fmt.Sprintf("hop%d", i))
		names[i] = unsafe.String(&buf[off], 4)
	}
	p := NewAccum(0).Part()
	for range 3 {
		for _, n := range names {
			p.Add(&span.Span{Hop: n, Duration: 1000})
		}
	}
	for i, n := range names {
		found := false
		for _, r := range p.recent[slot(offs[i]) : slot(offs[i])+recentWays] {
			found = found || (r != nil && r.name == n)
		}
		if !found {
			t.Errorf("%s (slot %d) is in no way of its slot", n, slot(offs[i]))
		}
	}
}

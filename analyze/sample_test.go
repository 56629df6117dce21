package analyze

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/tailscope/tailscope/secret"
	"github.com/tailscope/tailscope/span"
)

// A row of the sample must stay small: its size is what the sample costs
// the read (twice over, in the collector's goal; see sample.go).
func TestSampleRowSize(t *testing.T) {
	if n := unsafe.Sizeof(sampleRow{}); n > 104 {
		t.Fatalf("a sample row is %d bytes, want at most 104 (a span.Span is %d)", n, unsafe.Sizeof(span.Span{}))
	}
}

// sampleSpan is span i of a sample test: every field set, strings from a
// few values and some unique, a borrowed attribute buffer's routing and
// other attributes.
func sampleSpan(i int, buf []byte) span.Span {
	route := fmt.Sprintf("/r/%d", i%5)
	if i%11 == 0 {
		route = "https://u:pw@h/x?token=abcdef0123456789abcdef" // scrubbed
	}
	n := copy(buf, "http.route")
	n += copy(buf[n:], route)
	n += copy(buf[n:], "k8s.pod.name")
	copy(buf[n:], "pod-1")
	attrs := []span.Attr{
		{Key: unsafe.String(&buf[0], 10), Value: unsafe.String(&buf[10], len(route))},
		{Key: unsafe.String(&buf[10+len(route)], 12), Value: unsafe.String(&buf[22+len(route)], 5)},
	}
	if i%3 == 0 {
		attrs = attrs[1:] // no routing attribute
	}
	stable := i%7 == 0
	if stable {
		// A reader that says its texts are stable never writes them
		// again: these are not the buffer's.
		attrs = []span.Attr{{Key: "http.route", Value: route}, {Key: "k8s.pod.name", Value: "pod-1"}}
	}
	return span.Span{TraceID: fmt.Sprintf("t%d", i/3), SpanID: fmt.Sprintf("s%d", i), ParentID: fmt.Sprintf("s%d", i-1),
		Service: []string{"a", "b", ""}[i%3], Name: fmt.Sprintf("op%d", i%4), Kind: []string{"client", "server"}[i%2],
		Hop: fmt.Sprintf("a op%d", i%4), Peer: fmt.Sprintf("peer-%d", i), Start: int64(i) * 1e6, Duration: int64(i%9) * 1e5,
		Status: span.Status(i % 3), Timeout: i%5 == 0, Code: 500 + i%4, CodeText: []string{"", "ECONNRESET"}[i%2],
		Attempt: i % 3, AttemptSet: i%4 == 0, TimeoutInForce: int64(i % 2 * 1e9), Weight: 1 + float64(i%3)/2,
		Duplicate: i%6 == 0, StableAttrs: stable, Attrs: attrs}
}

// want is what the sample kept of sp before rows: every field as it was,
// the ids and attributes copied, only the routing attributes, scrubbed.
func wantSampled(sp span.Span) span.Span {
	var as []span.Attr
	for _, a := range sp.Attrs {
		if routingKeys[a.Key] {
			as = append(as, span.Attr{Key: strings.Clone(a.Key), Value: strings.Clone(secret.Scrub(a.Value))})
		}
	}
	sp.TraceID, sp.SpanID, sp.ParentID = string([]byte(sp.TraceID)), string([]byte(sp.SpanID)), string([]byte(sp.ParentID))
	sp.Attrs = as
	return sp
}

// The sample's rows give back each span as the sample kept it before
// (every field; ids and attributes owned, though the reader's buffer is
// overwritten after each span), through Spans, after spans are added
// again to a built sample (thaw), and after the tables were rebuilt for
// holding many strings no row names any more (compact).
func TestSampleRowsRoundTrip(t *testing.T) {
	a := NewAccum(1 << 20)
	buf := make([]byte, 256)
	var want []span.Span
	add := func(from, to int) {
		for i := from; i < to; i++ {
			sp := sampleSpan(i, buf)
			want = append(want, wantSampled(sp))
			a.Add(&sp)
			for j := range buf {
				buf[j] = 'x'
			}
		}
	}
	check := func(when string) {
		t.Helper()
		got := a.Spans()
		if len(got) != len(want) {
			t.Fatalf("%s: %d spans, want %d", when, len(got), len(want))
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("%s: span %d\n got %+v\nwant %+v", when, i, got[i], want[i])
			}
		}
	}
	add(0, 3000)
	check("read")
	add(3000, 6000) // thaws the built spans
	check("added after Spans")

	// Compaction: a sample that dropped most of its rows rebuilds its
	// tables (Peer is unique a span) and still gives the same spans.
	a.thaw()
	before := len(a.kept.strs)
	a.keepSample(func(i int) bool { return i%10 == 0 })
	if a.frozen || len(a.kept.strs) >= before/2 {
		t.Fatalf("tables of %d strings after dropping 9 rows in 10, %d before: not rebuilt", len(a.kept.strs), before)
	}
	var kept []span.Span
	for i := range want {
		if i%10 == 0 {
			kept = append(kept, want[i])
		}
	}
	want = kept
	check("compacted")
}

// The sample keeps exactly the attributes whose key OrderedReads accepts:
// a reader that leaves the others off the spans Ordered gets changes
// nothing the Accum holds (ingest.OrderedKeys).
func TestOrderedReadsIsWhatTheSampleKeeps(t *testing.T) {
	keys := []string{"http.route", "url.path", "rpc.method", "http.request.method", "server.address",
		"k8s.pod.name", "start_unix_nano", "cloud.region", "net.peer.port", "service.instance.id"}
	a := NewAccum(1 << 20)
	var attrs []span.Attr
	for _, k := range keys {
		attrs = append(attrs, span.Attr{Key: k, Value: "v"})
	}
	a.Ordered(&span.Span{TraceID: "t1", SpanID: "s1", Hop: "h", Duration: 5, Attrs: attrs})
	got := a.Spans()
	if len(got) != 1 {
		t.Fatalf("%d spans sampled", len(got))
	}
	kept := map[string]bool{}
	for _, at := range got[0].Attrs {
		kept[at.Key] = true
	}
	for _, k := range keys {
		if kept[k] != a.OrderedReads(k) {
			t.Errorf("%s: kept %v, OrderedReads %v", k, kept[k], a.OrderedReads(k))
		}
	}
}

// The sample built in pieces (Kept: what a read's report runs on, see
// build) is the sample built in one array (Spans): the same spans in the
// same order, laid out in pieces of sampleChunk; the same requests
// assembled from them and the same report; the same sample after traces
// are dropped from it, and after spans are added to it again (thaw).
func TestSampleInPieces(t *testing.T) {
	for _, c := range []struct{ sample, n int }{
		{1 << 20, 3*sampleChunk + 100}, // all kept
		{2000, 20000},                  // sampled: a level above 0
		{1 << 20, sampleChunk},         // one piece, full
		{1 << 20, 1},
		{1 << 20, 0},
	} {
		name := fmt.Sprintf("%d of %d", c.sample, c.n)
		pieces, whole := NewAccum(c.sample), NewAccum(c.sample)
		buf := make([]byte, 256)
		add := func(from, to int) {
			for i := from; i < to; i++ {
				for _, a := range []*Accum{pieces, whole} {
					sp := sampleSpan(i, buf)
					a.Add(&sp)
				}
			}
		}
		same := func(when string) {
			t.Helper()
			got, want := pieces.Kept(), whole.Spans()
			if len(got) != len(want) || pieces.held() != len(want) {
				t.Fatalf("%s, %s: %d spans (held %d), want %d", name, when, len(got), pieces.held(), len(want))
			}
			for i := range got {
				if !reflect.DeepEqual(*got[i], want[i]) {
					t.Fatalf("%s, %s: span %d\n got %+v\nwant %+v", name, when, i, *got[i], want[i])
				}
			}
		}
		add(0, c.n)
		got := pieces.Kept()
		same("read")
		if pieces.spans != nil {
			t.Fatalf("%s: Kept built one array", name)
		}
		size := unsafe.Sizeof(span.Span{})
		for i := 1; i < len(got); i++ {
			next := uintptr(unsafe.Pointer(got[i-1]))+size == uintptr(unsafe.Pointer(got[i]))
			if i%sampleChunk != 0 && !next {
				t.Fatalf("%s: span %d is not next to span %d: pieces are not of %d spans", name, i, i-1, sampleChunk)
			}
		}

		// The report on the pieces is the report on one array.
		reqs, probs := span.AssemblePointers(got)
		rep := pieces.Measure(reqs, probs, Options{})
		WhereTailComesFrom(rep, reqs)
		MapEndpoints(rep, reqs)
		pieces.Complete(rep, reqs)
		a, err1 := json.Marshal(rep)
		b, err2 := json.Marshal(measured(whole, Options{}))
		if err1 != nil || err2 != nil || string(a) != string(b) {
			t.Fatalf("%s: the report on the pieces differs from the report on one array (%v %v)\n%s\n%s", name, err1, err2, a, b)
		}

		// Dropping traces, then adding spans again.
		keep := func(i int) bool { return i%4 != 1 }
		pieces.keepSample(keep)
		whole.keepSample(keep)
		same("dropped")
		add(c.n, c.n+500)
		same("added after")
	}
}

// Spans asked for after Sample are its spans, copied into one array.
func TestSpansAfterSample(t *testing.T) {
	a := NewAccum(1 << 20)
	buf := make([]byte, 256)
	for i := range 2*sampleChunk + 3 {
		sp := sampleSpan(i, buf)
		a.Add(&sp)
	}
	ptrs := a.Kept()
	want := make([]span.Span, len(ptrs))
	for i, p := range ptrs {
		want[i] = *p
	}
	if got := a.Spans(); !reflect.DeepEqual(got, want) {
		t.Fatal("Spans after Kept are not its spans")
	}
	if got := a.Kept(); len(got) != len(want) || got[0] != &a.Spans()[0] {
		t.Fatal("Kept after Spans does not point into Spans")
	}
}

package ingest

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// A time window and a hop filter leave spans out: they are filtered, not
// skipped (no positioned error each, read = used + skipped + filtered), in
// every reader, and the kept spans whose parent a filter left out are told
// from orphans of bad data.
func TestFilteredNotSkipped(t *testing.T) {
	var b strings.Builder
	t0 := int64(1_772_445_600_000_000_000)
	for i := range 100 {
		s := t0 + int64(i)*1e9
		// A root that starts before the window cut, its child after it.
		fmt.Fprintf(&b, `{"trace_id":"t%d","span_id":"r","hop":"gateway","start":%d,"duration_ms":900,"status":"ok"}`+"\n", i, s)
		fmt.Fprintf(&b, `{"trace_id":"t%d","span_id":"c","parent_id":"r","hop":"db","start":%d,"duration_ms":20,"status":"ok"}`+"\n", i, s+500_000_000)
		if i%10 == 0 { // an orphan of bad data
			fmt.Fprintf(&b, `{"trace_id":"t%d","span_id":"x","parent_id":"gone","hop":"db","start":%d,"duration_ms":20,"status":"ok"}`+"\n", i, s+600_000_000)
		}
		if i%25 == 0 { // a bad record, skipped
			b.WriteString(`{"hop":"db","duration_ms":"long"}` + "\n")
		}
	}
	in := b.String()
	cases := []struct {
		name          string
		opt           record.Options
		used, filter  int64
		reason        string
		filteredPar   int
		orphansBadOne int
	}{
		{"hops", record.Options{Hops: regexp.MustCompile("^db$")}, 110, 100, record.ReasonHopFiltered, 100, 10},
		{"exclude-hops", record.Options{ExcludeHops: regexp.MustCompile("gateway")}, 110, 100, record.ReasonHopFiltered, 100, 10},
		// The window starts inside every request, after its root.
		{"since", record.Options{Since: t0 + 400_000_000}, 209, 1, record.ReasonOutsideWindow, 1, 10},
		{"until", record.Options{Until: t0 + 50_300_000_000}, 106, 104, record.ReasonOutsideWindow, 0, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, fork := range []bool{false, true} {
				var spans []span.Span
				var sink record.Sink = SinkFunc(func(s *span.Span) { spans = append(spans, *s) })
				rf := &recFork{}
				if fork {
					sink = forkSink(rf, sink.Span)
				}
				st, err := ReadStream("w.jsonl", strings.NewReader(in), c.opt, sink)
				if err != nil {
					t.Fatal(err)
				}
				if fork {
					spans = rf.ordered
				}
				if st.Used != c.used || st.Filtered != c.filter || st.FilteredByReason[c.reason] != c.filter || len(st.FilteredByReason) != 1 ||
					st.Skipped != 4 || st.SkippedByReason["bad value"] != 4 || len(st.Errors) != 4 || st.Read != st.Used+st.Skipped+st.Filtered {
					t.Fatalf("fork %v: read %d used %d filtered %d %v skipped %d %v", fork, st.Read, st.Used, st.Filtered, st.FilteredByReason, st.Skipped, st.SkippedByReason)
				}
				if fork {
					continue // the recording fork keeps no spans to assemble
				}
				_, pr := span.Assemble(spans)
				n, known := st.FilteredParents(pointers(spans))
				if !known || n != c.filteredPar || pr.Orphans-n != c.orphansBadOne {
					t.Errorf("filtered parents %d (known %v), orphans %d: want %d and %d of bad data", n, known, pr.Orphans, c.filteredPar, c.orphansBadOne)
				}
			}
		})
	}
}

// The Parquet batch reader counts filtered spans the same way, with and
// without a Fork.
func TestFilteredParquet(t *testing.T) {
	type row struct {
		TraceID  string  `parquet:"trace_id"`
		SpanID   string  `parquet:"span_id"`
		ParentID *string `parquet:"parent_id,optional"`
		Hop      string  `parquet:"hop,dict"`
		Start    int64   `parquet:"start"`
		Ns       int64   `parquet:"duration_ns"`
	}
	root := "r"
	var rows []row
	for i := range 3000 {
		tid := fmt.Sprintf("t%d", i)
		rows = append(rows, row{tid, "r", nil, "gateway", 1e18 + int64(i), 9e8},
			row{tid, "c", &root, "db", 1e18 + int64(i) + 1, 2e7})
		if i%100 == 0 {
			rows = append(rows, row{tid, "z", &root, "db", 1e18, -1}) // skipped
		}
	}
	data := writeParquet(t, rows)
	for _, fork := range []bool{false, true} {
		opt := record.Options{Hops: regexp.MustCompile("^db$")}
		spans, st := readBytes(t, "f.parquet", data, opt)
		if fork {
			rf := &recFork{all: true}
			var err error
			st, err = ReadStream("f.parquet", bytes.NewReader(data), opt, forkSink(rf, func(*span.Span) { t.Fatal("Span called with a Fork") }))
			if err != nil {
				t.Fatal(err)
			}
			spans = rf.ordered
		}
		if st.Used != 3000 || st.Filtered != 3000 || st.FilteredByReason[record.ReasonHopFiltered] != 3000 || st.Skipped != 30 || len(st.Errors) != 20 {
			t.Fatalf("fork %v: used %d filtered %d %v skipped %d", fork, st.Used, st.Filtered, st.FilteredByReason, st.Skipped)
		}
		if n, known := st.FilteredParents(pointers(spans)); n != 3000 || !known {
			t.Errorf("fork %v: %d filtered parents", fork, n)
		}
	}
}

// pointers points at each of spans, in order.
func pointers(spans []span.Span) []*span.Span {
	out := make([]*span.Span, len(spans))
	for i := range spans {
		out[i] = &spans[i]
	}
	return out
}

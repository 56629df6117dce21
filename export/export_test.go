package export_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/export"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

func readPaths(t *testing.T, paths ...string) []span.Span {
	t.Helper()
	var out []span.Span
	st, err := ingest.Read(paths, ingest.Options{}, ingest.SinkFunc(func(s *span.Span) { out = append(out, *s) }))
	if err != nil {
		t.Fatal(err)
	}
	if st.Skipped != 0 {
		t.Fatalf("%v: %d skipped: %v", paths, st.Skipped, st.Errors)
	}
	return out
}

func write(t *testing.T, format string, spans []span.Span) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := export.New(format, &buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range spans {
		if err := w.Write(&spans[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readBack(t *testing.T, format string, data []byte) []span.Span {
	t.Helper()
	var out []span.Span
	st, err := ingest.ReadStream("out."+format, bytes.NewReader(data), ingest.Options{}, ingest.SinkFunc(func(s *span.Span) { out = append(out, *s) }))
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Formats["out."+format]; got != format {
		t.Fatalf("output sniffed as %q, want %q", got, format)
	}
	if st.Skipped != 0 {
		t.Fatalf("%d skipped reading back: %v", st.Skipped, st.Errors)
	}
	return out
}

// hopStats is what a user computes per hop: count, failures, and the
// sorted durations (so every percentile), to the nanosecond.
type hopStats struct {
	n, failed int
	durations []int64
}

func stats(spans []span.Span) map[string]*hopStats {
	m := map[string]*hopStats{}
	for _, s := range spans {
		h := m[s.Hop]
		if h == nil {
			h = &hopStats{}
			m[s.Hop] = h
		}
		h.n++
		if s.Failed() {
			h.failed++
		}
		h.durations = append(h.durations, s.Duration)
	}
	for _, h := range m {
		slices.Sort(h.durations)
	}
	return m
}

func TestRoundTrip(t *testing.T) {
	inputs := []string{
		filepath.Join("..", "samples", "seed-chain", "spans.jsonl"),
		filepath.Join("..", "samples", "seed-chain", "recorded-under-A.jsonl"),
		filepath.Join("..", "ingest", "testdata", "tempo-vparquet4.parquet"),
	}
	for _, in := range inputs {
		orig := readPaths(t, in)
		if len(orig) == 0 {
			t.Fatalf("%s: no spans", in)
		}
		for _, format := range export.Formats {
			t.Run(filepath.Base(in)+"→"+format, func(t *testing.T) {
				back := readBack(t, format, write(t, format, orig))
				if len(back) != len(orig) {
					t.Fatalf("%d spans back, want %d", len(back), len(orig))
				}
				for i := range orig {
					want := orig[i]
					if !carriesAttrs(format) {
						want.Attrs = nil
					}
					// How the reader holds its texts (interned, for
					// Tempo), not what the span says: no file carries it.
					want.StableAttrs = back[i].StableAttrs
					if !reflect.DeepEqual(back[i], want) {
						t.Fatalf("span %d:\n got %+v\nwant %+v", i, back[i], want)
					}
				}
				a, b := stats(orig), stats(back)
				if len(a) != len(b) {
					t.Fatalf("%d hops vs %d", len(b), len(a))
				}
				for hop, x := range a {
					y := b[hop]
					if y == nil || x.n != y.n || x.failed != y.failed || !slices.Equal(x.durations, y.durations) {
						t.Errorf("hop %q differs", hop)
					}
				}
			})
		}
	}
}

// Every field of the schema survives each format, including the ones the
// seed sample does not use.
func TestAllFields(t *testing.T) {
	spans := []span.Span{
		{TraceID: "t", SpanID: "s1", ParentID: "p", Service: "svc", Name: "op", Kind: "client", Hop: "svc op (client)",
			Start: 1_772_445_600_123_456_789, Duration: 1, Status: span.Error, Timeout: true, Code: 504, Attempt: 3, AttemptSet: true,
			TimeoutInForce: 1_234_567_891, Weight: 2.5, Peer: "db.internal", CodeText: "ECONNRESET"},
		{Hop: "bare", Duration: 0, Status: span.Unset, Code: 404, Weight: 1,
			// Attributes in order, duplicates kept, names of fields
			// among them (they do not override the span's own fields).
			Attrs: []span.Attr{{Key: "k8s.pod.name", Value: "api-7"}, {Key: "zone", Value: "eu"}, {Key: "zone", Value: "us"},
				{Key: "code", Value: "500"}, {Key: "duration_ms", Value: "x"}, {Key: "hop", Value: "other"}, {Key: "q\"\n", Value: "ü\t"}}},
		{Hop: "h", Duration: 9, Status: span.OK, TimeoutInForce: 1, Weight: 1},
		// An explicit attempt 0 (0-based numbering) stays 0, not absent.
		{Hop: "z", Duration: 7, Status: span.Error, Code: 503, Attempt: 0, AttemptSet: true, Weight: 1},
		{Hop: "z", Duration: 8, Status: span.OK, Code: 200, Attempt: 1, AttemptSet: true, Weight: 1},
	}
	for _, format := range export.Formats {
		back := readBack(t, format, write(t, format, spans))
		if len(back) != len(spans) {
			t.Fatalf("%s: %d spans", format, len(back))
		}
		for i := range spans {
			want := spans[i]
			if !carriesAttrs(format) {
				want.Attrs = nil
			}
			if !reflect.DeepEqual(back[i], want) {
				t.Errorf("%s span %d:\n got %+v\nwant %+v", format, i, back[i], want)
			}
		}
	}
}

// carriesAttrs reports whether a format writes span.Span.Attrs (Parquet
// does not yet: the flat Parquet reader would have to read them back).
func carriesAttrs(format string) bool { return format != "parquet" }

func TestJSONLKeysAndEscapes(t *testing.T) {
	spans := []span.Span{
		{Hop: "a\"b\\c\nd\te\x01f — ü", Duration: 5, Status: span.OK, Weight: 1},
		{Hop: "bad\xffutf8", Duration: 5, Weight: 1},
	}
	out := write(t, "jsonl", spans)
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%q", out)
	}
	if lines[0] != `{"hop":"a\"b\\c\nd\te\u0001f — ü","duration_ns":5,"status":"ok"}` {
		t.Errorf("line 1: %s", lines[0])
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("invalid JSON: %s", l)
		}
	}
	back := readBack(t, "jsonl", out)
	if back[0].Hop != spans[0].Hop || back[1].Hop != "bad\ufffdutf8" {
		t.Errorf("read back %q, %q", back[0].Hop, back[1].Hop)
	}
	// Keys are the canonical ones, in the documented order.
	full := write(t, "jsonl", []span.Span{{TraceID: "t", SpanID: "s", ParentID: "p", Service: "v", Name: "n", Kind: "server", Hop: "h",
		Start: 1, Duration: 2, Status: span.Error, Timeout: true, Code: 3, Attempt: 4, TimeoutInForce: 5e6, Weight: 6, Peer: "db", CodeText: "EPIPE"}})
	var keys []string
	dec := json.NewDecoder(bytes.NewReader(full))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var v any
		dec.Decode(&v)
	}
	if !slices.Equal(keys, export.Columns) {
		t.Errorf("keys %v, want %v", keys, export.Columns)
	}
}

func TestFormatOf(t *testing.T) {
	for in, want := range map[string]string{"a.jsonl": "jsonl", "b.PARQUET": "parquet", "c.feather": "arrow", "d.arrow": "arrow", "e.csv": "", "f": ""} {
		if got := export.FormatOf(in); got != want {
			t.Errorf("FormatOf(%q) = %q, want %q", in, got, want)
		}
	}
	if _, err := export.New("csv", nil); err == nil {
		t.Error("New(csv) accepted")
	}
}

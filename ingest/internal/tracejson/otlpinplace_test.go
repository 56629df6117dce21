package tracejson

import (
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// TestOTLPSpanInPlace checks that a plain span of a big document is read in
// place (the differential tests alone would pass with a fast path that
// always declines), as nextOTLPSpan would read it, and that an unusual
// one is left whole to the general path.
func TestOTLPSpanInPlace(t *testing.T) {
	sp := "{\n  \"traceId\": \"0102030405060708090a0b0c0d0e0f10\",\n  \"spanId\": \"1112131415161718\",\n  \"name\": \"GET\",\n" +
		"  \"startTimeUnixNano\": \"1000\",\n  \"endTimeUnixNano\": \"3000\"\n}"
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"  " + sp + ",\n" + sp + "]", true},
		{"  " + sp[:len(sp)-1] + ",\"name\":\"x\"}]", false}, // a repeated member
		{`  {"traceId":"a\u0062"}]`, false},
	} {
		src := record.NewSource("in", bufioReader(tc.in), nil, &record.Options{MaxRecord: record.DefaultMaxRecord, MaxErrors: 20}, record.NewStats(nil), record.SinkFunc(func(*span.Span) {}))
		w := newWalker(src)
		var rec record.TraceRecord
		raw, at, ok := w.otlpSpanInPlace(&rec)
		if ok != tc.want {
			t.Fatalf("%q: in place %v, want %v", tc.in, ok, tc.want)
		}
		if !ok {
			if w.s.off != 2 || w.index != 0 {
				t.Errorf("%q: declined at byte %d index %d: want nothing consumed past the whitespace", tc.in, w.s.off, w.index)
			}
			continue
		}
		if string(raw) != sp || at != (pos{2, 1}) || w.s.off != int64(2+len(sp)) || w.s.line != 7 || w.index != 1 ||
			rec.Span.Duration != 2000 || rec.Span.Name != "GET" {
			t.Errorf("raw %q at %v, walker at byte %d line %d index %d, span %+v", raw, at, w.s.off, w.s.line, w.index, rec.Span)
		}
	}
}

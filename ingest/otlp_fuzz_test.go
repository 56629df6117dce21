package ingest_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

// tjFuzzProperty is what every trace decoder owes any input: no panic, no
// error from an in-memory reader (bad input is skipped, not fatal), counts
// that reconcile, and only valid spans handed on.
func tjFuzzProperty(t *testing.T, format string, data []byte) {
	var n int64
	st, err := ingest.ReadStream("fuzz", bytes.NewReader(data), ingest.Options{Format: format, MaxRecord: 1 << 20}, ingest.SinkFunc(func(sp *span.Span) {
		n++
		if sp.Duration < 0 || sp.Start < 0 || sp.Hop == "" || sp.Weight <= 0 {
			t.Fatalf("invalid span emitted: %+v", *sp)
		}
		for _, a := range sp.Attrs {
			if a.Key == "" {
				t.Fatalf("attribute without a key: %+v", *sp)
			}
		}
	}))
	if err != nil {
		// A compressed stream that does not decompress is the one input
		// that is an error as a whole (it names the file and the codec).
		if (bytes.HasPrefix(data, []byte{0x1f, 0x8b}) && strings.Contains(err.Error(), "gzip")) ||
			(bytes.HasPrefix(data, []byte{0x28, 0xb5, 0x2f, 0xfd}) && strings.Contains(err.Error(), "zstd")) {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("decompression error does not name the input: %v", err)
			}
			return
		}
		t.Fatalf("error on in-memory input: %v", err)
	}
	var sum int64
	for _, c := range st.SkippedByReason {
		sum += c
	}
	if st.Read != st.Used+st.Skipped+st.Filtered || st.Skipped != sum || st.Used != n {
		t.Fatalf("not reconciled: read %d used %d skipped %d (Σ %d) emitted %d", st.Read, st.Used, st.Skipped, sum, n)
	}
	for _, e := range st.Errors {
		if e.Index == 0 {
			t.Fatalf("unpositioned error: %v", e)
		}
	}
}

func FuzzOTLP(f *testing.F) {
	f.Add([]byte(otlpDoc("svc", otlpSpan(`"kind":2,"status":{"code":2,"message":"deadline"}`), otlpSpan(`"attributes":[`+attr("http.status_code", "intValue", `"504"`)+`]`))))
	f.Add([]byte(`{"resource_spans":[{"scope_spans":[{"spans":[{"trace_id":"AQIDBAUGBwgJCgsMDQ4PEA==","start_time_unix_nano":1,"end_time_unix_nano":2}]}]}]}`))
	f.Add([]byte(`{"result":{"batches":[{"instrumentationLibrarySpans":[{"spans":[{"traceState":"ot=th:8"}]}]}]}}` + "\n{\n"))
	// The streaming tokenizer's paths: a byte order mark, padding between
	// tokens, a document that is no OTLP, a span over --max-record, a
	// string cut by a newline, mismatched brackets in a skipped value.
	f.Add([]byte("\xef\xbb\xbf \n\t" + otlpDoc("svc", otlpSpan(`"attributes":[`+attr("rpc.grpc.status_code", "stringValue", `"UNAVAILABLE"`)+`]`)) + "\n \n"))
	f.Add([]byte(`{"hop":"db","duration_ms":3}` + "\n" + `{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"` + strings.Repeat("x", 1<<20+10) + `"},` + otlpSpan("") + `]}]}]}`))
	f.Add([]byte(`{"resourceSpans":[{"x":[}]}` + "\n" + `{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a` + "\n" + otlpDoc("s", otlpSpan(""))))
	f.Fuzz(func(t *testing.T, data []byte) { tjFuzzProperty(t, "otlp", data) })
}

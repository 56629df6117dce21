package ingest

import (
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// Bare OTLP spans, one per line, are sniffed and read with the OTLP rules;
// a flat log that shares some OTLP key names stays a flat log.
func TestOTLPSpanLines(t *testing.T) {
	in := strings.Join([]string{
		`{"traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"EEE19B7EC3C1B174","parentSpanId":"","name":"GET /api","kind":"SPAN_KIND_SERVER","startTimeUnixNano":"1544712660000000000","endTimeUnixNano":"1544712661000000000","attributes":[{"key":"service.name","value":{"stringValue":"api"}},{"key":"http.response.status_code","value":{"intValue":"504"}}],"status":{"code":2}}`,
		`{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","parentSpanId":"eee19b7ec3c1b174","name":"SELECT","kind":3,"startTimeUnixNano":1544712660100000000,"endTimeUnixNano":1544712660300000000,"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"db"}}]}}`,
		`{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"x","name":"bad","startTimeUnixNano":"2","endTimeUnixNano":"1"}`,
	}, "\n") + "\n"
	var got []span.Span
	st, err := ReadStream("spans.json", strings.NewReader(in), record.Options{}, SinkFunc(func(s *span.Span) { got = append(got, *s) }))
	if err != nil {
		t.Fatal(err)
	}
	if st.Formats["spans.json"] != "otlp-spans" {
		t.Fatalf("sniffed %q", st.Formats["spans.json"])
	}
	if len(got) != 2 || st.Skipped != 1 {
		t.Fatalf("used %d, skipped %v", len(got), st.SkippedByReason)
	}
	a, b := got[0], got[1]
	if a.Service != "api" || a.Hop != "api GET /api" || a.Duration != 1e9 || !a.Timeout || a.Status != span.Error || a.Code != 504 {
		t.Errorf("first span: %+v", a)
	}
	if b.Service != "db" || b.Kind != "client" || b.ParentID != a.SpanID || b.Duration != 2e8 {
		t.Errorf("second span: %+v", b)
	}
	// Flat logs keep their reader even with OTLP-style key names.
	flat := `{"traceId":"t","spanId":"s","startTimeUnixNano":1,"endTimeUnixNano":5,"hop":"db","duration_ms":4}` + "\n"
	st, err = ReadStream("flat.jsonl", strings.NewReader(flat), record.Options{}, SinkFunc(func(*span.Span) {}))
	if err != nil || st.Formats["flat.jsonl"] != "jsonl" || st.Used != 1 {
		t.Errorf("flat log read as %q, used %d, err %v", st.Formats["flat.jsonl"], st.Used, err)
	}
}

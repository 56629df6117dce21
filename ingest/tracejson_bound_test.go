package ingest

import (
	"runtime"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// A span far over --max-record is skipped without being held in memory,
// and the spans after it are read.
func TestTraceJSONRecordBound(t *testing.T) {
	big := `{"traceId":"1","id":"2","name":"x","timestamp":1,"duration":5,"localEndpoint":{"serviceName":"s"},"tags":{"pad":"` + strings.Repeat("x", 64<<20) + `"}}`
	in := "[" + `{"traceId":"1","id":"1","name":"a","timestamp":1,"duration":5,"localEndpoint":{"serviceName":"s"}},` + "\n" + big + ",\n" +
		`{"traceId":"1","id":"3","name":"b","timestamp":1,"duration":5,"localEndpoint":{"serviceName":"s"}}]`
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var n int
	st, err := ReadStream("z.json", strings.NewReader(in), record.Options{MaxRecord: 1 << 20}, SinkFunc(func(*span.Span) { n++ }))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if st.SkippedByReason[record.ReasonTooLong] != 1 {
		t.Errorf("skipped %v, want one record too long", st.SkippedByReason)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("allocated %d MB reading a 64 MB span with --max-record 1MB", grew>>20)
	}
	if n != 2 {
		t.Errorf("%d spans read, want the 2 around the long one", n)
	}
}

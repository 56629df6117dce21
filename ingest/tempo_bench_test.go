package ingest

import (
	"bytes"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// BenchmarkTempoBlock reads a vParquet4 block of the model traces (spans
// with span and resource attributes, events, some skipped, some with a
// value ignored) on one decoding goroutine: the row reader alone, as a
// guard for its per-span work.
func BenchmarkTempoBlock(b *testing.B) {
	data := writeParquet(b, manyTempoTraces(2000), parquet.MaxRowsPerRowGroup(5000))
	var n int64
	for b.Loop() {
		n = 0
		if _, err := ReadStream("data.parquet", bytes.NewReader(data), record.Options{Borrowed: true, MaxErrors: 1 << 30, Paths: record.Paths{Workers: 1}}, SinkFunc(func(*span.Span) { n++ })); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*n), "ns/span")
}

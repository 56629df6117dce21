package ingest_test

import (
	"os"
	"testing"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

// BenchmarkOTLPFile reads $TAILSCOPE_OTLP_BENCH (an OTLP JSON file, e.g.
// the bench's collector file-exporter lines) as pipeline.Read does: borrowed
// spans, every attribute. ns/span and allocs/span are the numbers.
func BenchmarkOTLPFile(b *testing.B) {
	path := os.Getenv("TAILSCOPE_OTLP_BENCH")
	if path == "" {
		b.Skip("set TAILSCOPE_OTLP_BENCH to an OTLP JSON file")
	}
	var n int64
	var attrs int
	for b.Loop() {
		n = 0
		_, err := ingest.Read([]string{path}, ingest.Options{Format: "otlp", Borrowed: true}, ingest.SinkFunc(func(sp *span.Span) { n++; attrs += len(sp.Attrs) }))
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*n), "ns/span")
	b.ReportMetric(float64(n), "spans")
}

package ingest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// BenchmarkParquet reads a flat Parquet table of 200k spans (the regression
// guard of the Parquet hot path; BenchmarkJSONL is the JSON-lines one, and
// bench/ compares both with DuckDB at 10M spans).
func BenchmarkParquet(b *testing.B) {
	const n = 200_000
	r := rand.New(rand.NewPCG(9, 9))
	rows := make([]flatRow, n)
	hops := []string{"auth", "search", "retrieve", "rank", "generate", "render"}
	for i := range rows {
		rows[i] = flatRow{TraceID: fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64()), SpanID: []byte(fmt.Sprintf("%016x", r.Uint64())),
			ParentID: fmt.Sprintf("%016x", r.Uint64()), Hop: hops[i%len(hops)], Start: 1767225600000000000 + int64(i)*1000,
			DurationNs: r.Int64N(1e9), Status: "ok", Code: 200, TimeoutMs: 3000, Weight: 1}
	}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		got := 0
		if _, err := ReadStream("b.parquet", bytes.NewReader(data), record.Options{}, SinkFunc(func(*span.Span) { got++ })); err != nil || got != n {
			b.Fatal(got, err)
		}
	}
	b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "spans/s")
}

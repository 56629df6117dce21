package main

import (
	"os"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/recommend"
	"github.com/tailscope/tailscope/span"
)

// BenchmarkLoad runs what `tailscope analyze` does on the file named by
// $TAILSCOPE_BENCH_FILE (read, accumulate, report), for go test -cpuprofile
// on real sizes:
//
//	go run ./bench -cases flat -sizes 1000000 -dir /tmp/b -keep -runs 1
//	TAILSCOPE_BENCH_FILE=/tmp/b/spans-1000000.jsonl go test ./bench -run X -bench Load -cpuprofile cpu.out
func BenchmarkLoad(b *testing.B) {
	path := os.Getenv("TAILSCOPE_BENCH_FILE")
	if path == "" {
		b.Skip("set TAILSCOPE_BENCH_FILE to a span log")
	}
	for b.Loop() {
		acc := analyze.NewAccum(0)
		st, err := ingest.Read([]string{path}, ingest.Options{Borrowed: true}, ingest.SinkFunc(func(s *span.Span) { acc.Add(s) }))
		if err != nil {
			b.Fatal(err)
		}
		recommend.FromAccum(acc, analyze.Options{})
		b.ReportMetric(float64(st.Used), "spans")
	}
}

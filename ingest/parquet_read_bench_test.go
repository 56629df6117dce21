package ingest

import (
	"hash/maphash"
	"os"
	"sync/atomic"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// sampleFork is a Fork whose Branches hand back the spans of about one
// trace in every 1<<shift, chosen by a hash of the trace id, as the
// analysis's trace sample does: the reader's side of an analysis without
// the analysis.
type sampleFork struct {
	shift   uint
	seed    maphash.Seed
	taken   atomic.Int64
	ordered atomic.Int64
}

type sampleBranch struct {
	f     *sampleFork
	n     int64
	last  string
	again bool
}

func (f *sampleFork) Branch() record.Branch { return &sampleBranch{f: f} }
func (f *sampleFork) Ordered(sp *span.Span) { f.ordered.Add(1) }

func (b *sampleBranch) Take(sp *span.Span) bool {
	b.n++
	if sp.TraceID == "" {
		return true
	}
	if sp.TraceID != b.last {
		b.last = string(sp.TraceID)
		b.again = maphash.String(b.f.seed, sp.TraceID)>>(64-b.f.shift) == 0
	}
	return b.again
}

func (b *sampleBranch) Close() { b.f.taken.Add(b.n) }

// BenchmarkParquetBenchFiles reads the bench's Parquet files (go run
// ./bench -keep -dir /tmp/bench; skipped when absent) through a sampling
// Fork: the reader alone, as analyze drives it.
func BenchmarkParquetBenchFiles(b *testing.B) {
	dir := os.Getenv("TAILSCOPE_BENCH_DIR")
	if dir == "" {
		dir = "/tmp/bench"
	}
	// The analysis keeps about 100,000 spans: an eighth of 1M, a
	// sixty-fourth of 10M.
	for _, f := range []struct {
		name  string
		shift uint
	}{{"spans-1000000.parquet", 3}, {"spans-1000000-wide.parquet", 3}, {"spans-10000000.parquet", 6}, {"spans-10000000-wide.parquet", 6}} {
		name, shift := f.name, f.shift
		path := dir + "/" + name
		if _, err := os.Stat(path); err != nil {
			continue
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				f := &sampleFork{shift: shift, seed: maphash.MakeSeed()}
				_, err := Read([]string{path}, record.Options{Borrowed: true}, forkSink(f, func(*span.Span) { b.Fatal("emit called with a Fork") }))
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

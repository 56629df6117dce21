package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/summary"
)

// Partial summaries: summarize a share of the logs, and merge
// 100 summaries, on the generator's logs cut into 100 files of equal
// size. $TAILSCOPE_BENCH_SPANS sets the total (default 1,000,000):
//
//	go test ./bench -run X -bench 'Summarize|Merge100' -benchmem
var partsOnce struct {
	sync.Once
	dir   string
	logs  []string
	parts []string
	err   error
}

const benchParts = 100

func benchSummaries(b *testing.B) ([]string, []string) {
	partsOnce.Do(func() {
		n := 1_000_000
		if v := os.Getenv("TAILSCOPE_BENCH_SPANS"); v != "" {
			fmt.Sscan(v, &n)
		}
		dir, err := os.MkdirTemp("", "tailscope-bench-parts")
		if err != nil {
			partsOnce.err = err
			return
		}
		partsOnce.dir = dir
		all := filepath.Join(dir, "all.jsonl")
		if _, err := writeJSONL(all, n); err != nil {
			partsOnce.err = err
			return
		}
		partsOnce.logs, partsOnce.err = cut(all, benchParts)
		os.Remove(all)
		for i, p := range partsOnce.logs {
			if partsOnce.err != nil {
				return
			}
			s, err := pipeline.Summarize([]string{p}, pipeline.Options{})
			if err != nil {
				partsOnce.err = err
				return
			}
			out := filepath.Join(dir, fmt.Sprintf("part-%03d.tss", i))
			partsOnce.err = os.WriteFile(out, summary.Encode(s), 0o644)
			partsOnce.parts = append(partsOnce.parts, out)
		}
	})
	if partsOnce.err != nil {
		b.Fatal(partsOnce.err)
	}
	return partsOnce.logs, partsOnce.parts
}

// cut splits a JSON-lines file into n files of about equal line counts.
func cut(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	var out []string
	for i := range n {
		p := fmt.Sprintf("%s.%03d", path, i)
		w, err := os.Create(p)
		if err != nil {
			return nil, err
		}
		bw := bufio.NewWriter(w)
		for _, l := range lines[i*len(lines)/n : (i+1)*len(lines)/n] {
			bw.Write(l)
			bw.WriteByte('\n')
		}
		if err := bw.Flush(); err != nil {
			return nil, err
		}
		w.Close()
		out = append(out, p)
	}
	return out, sc.Err()
}

// BenchmarkSummarize summarises one hundredth of the logs and encodes it.
func BenchmarkSummarize(b *testing.B) {
	ls, _ := benchSummaries(b)
	b.ReportAllocs()
	var spans int64
	for b.Loop() {
		s, err := pipeline.Summarize(ls[:1], pipeline.Options{})
		if err != nil {
			b.Fatal(err)
		}
		spans = s.Stats.Used
		summary.Encode(s)
	}
	b.ReportMetric(float64(spans)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkMerge100 reads and merges the 100 summaries and encodes the
// result, as `tailscope merge part-*.tss -o all.tss` does.
func BenchmarkMerge100(b *testing.B) {
	_, parts := benchSummaries(b)
	var size int64
	for _, p := range parts {
		fi, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		size += fi.Size()
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := summary.MergeFiles(parts)
		if err != nil {
			b.Fatal(err)
		}
		summary.Encode(s)
	}
	b.ReportMetric(float64(size)/1e6, "MB-in")
	b.ReportMetric(float64(size)*float64(b.N)/b.Elapsed().Seconds()/1e6, "MB/s")
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/recommend"
	"github.com/tailscope/tailscope/span"
)

// analyzeFile reads one file as tailscope analyze does and returns its
// hops by name, with the read's stats.
func analyzeFile(t *testing.T, path string) (map[string]analyze.Hop, *ingest.Stats) {
	t.Helper()
	acc := analyze.NewAccum(0)
	st, err := ingest.Read([]string{path}, ingest.Options{Borrowed: true}, ingest.SinkFunc(func(s *span.Span) { acc.Add(s) }))
	if err != nil {
		t.Fatal(err)
	}
	hops := map[string]analyze.Hop{}
	rep, _ := recommend.FromAccum(acc, analyze.Options{})
	for _, h := range rep.Hops {
		hops[h.Hop] = h
	}
	return hops, st
}

// The Tempo block holds the flat file's spans: tailscope reads it as a
// Tempo block, with every span used, and finds the same hops (named
// service and span name, the trace formats' default), with the same
// attempt counts and the same percentiles, as on the flat Parquet file of
// the same spans. Several row groups, so that the cut between them is
// read too.
func TestTempoBlockSameHops(t *testing.T) {
	const n = 30_000
	dir := t.TempDir()
	flat, block := filepath.Join(dir, "spans.parquet"), filepath.Join(dir, "data.parquet")
	nf, err := writeParquet(flat, n)
	if err != nil {
		t.Fatal(err)
	}
	nt, err := writeTempoRowGroups(block, n, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if nf != nt {
		t.Fatalf("%d flat spans, %d in the block", nf, nt)
	}
	f, err := os.Open(block)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	if len(pf.RowGroups()) < 2 {
		t.Errorf("%d row groups, want several", len(pf.RowGroups()))
	}
	// The flat file's hop is the generator's hop name; the block's is
	// "service name", with " (client)" on the calls.
	tempoHop := map[string]string{}
	traces := int64(0)
	generate(n, func(s *genSpan) error {
		if s.parent == 0 {
			traces++
		}
		h := s.service + " " + s.hop
		if s.kind == "client" {
			h += " (client)"
		}
		tempoHop[s.hop] = h
		return nil
	})
	if rows := pf.NumRows(); rows != traces {
		t.Errorf("%d rows for %d traces, want one per trace", rows, traces)
	}
	fh, fst := analyzeFile(t, flat)
	th, tst := analyzeFile(t, block)
	if fst.Used != int64(nf) || tst.Used != int64(nt) {
		t.Fatalf("used %d of %d flat spans, %d of %d block spans (skipped %d, %d)", fst.Used, nf, tst.Used, nt, fst.Skipped, tst.Skipped)
	}
	if len(fh) != len(chain)+1 || len(th) != len(fh) {
		t.Fatalf("%d flat hops, %d block hops, want %d", len(fh), len(th), len(chain)+1)
	}
	for name, f := range fh {
		b, ok := th[tempoHop[name]]
		if !ok {
			t.Errorf("flat hop %q has no block hop %q", name, tempoHop[name])
			continue
		}
		if b.Attempts != f.Attempts {
			t.Errorf("%s: %d attempts in the block, %d in the flat file", name, b.Attempts, f.Attempts)
		}
		if !reflect.DeepEqual(b.LatencyMs, f.LatencyMs) {
			t.Errorf("%s: latency %s in the block, %s in the flat file", name, latencyString(b.LatencyMs), latencyString(f.LatencyMs))
		}
	}
}

func latencyString(l analyze.Latency) string {
	var out []any
	for _, p := range []*float64{l.P50, l.P90, l.P95, l.P99, l.P999, l.Max} {
		if p == nil {
			out = append(out, nil)
		} else {
			out = append(out, *p)
		}
	}
	return fmt.Sprint(out...)
}

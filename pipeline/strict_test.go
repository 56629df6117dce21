package pipeline

import (
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/option"
)

// Strict fails on skipped records first, then on files that may hold
// spans and were not read; bookkeeping files passed over are fine.
func TestStrict(t *testing.T) {
	for _, c := range []struct {
		name string
		st   ingest.Stats
		want string
	}{
		{"all read", ingest.Stats{Read: 3}, ""},
		{"bookkeeping passed over", ingest.Stats{Read: 3, Passed: []ingest.PassedFile{{File: "meta.json", Reason: "not spans"}}}, ""},
		{"skipped", ingest.Stats{Read: 3, Skipped: 1, Passed: []ingest.PassedFile{{File: "x", Reason: "r", Strict: true}}},
			"--strict: 1 of 3 records skipped"},
		{"one file not read", ingest.Stats{Read: 3, Passed: []ingest.PassedFile{{File: "data.parquet", Reason: "cannot open", Strict: true}}},
			"--strict: 1 file not read\n  data.parquet: cannot open"},
		{"files not read", ingest.Stats{Passed: []ingest.PassedFile{{File: "a", Reason: "r", Strict: true}, {File: "b", Reason: "s"}, {File: "c", Reason: "t", Strict: true}}},
			"--strict: 2 files not read\n  a: r\n  c: t"},
	} {
		err := Strict(&c.st, func(o option.Option) string { return "--" + strings.ToLower(o.String()) })
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s: Strict = %q, want %q", c.name, got, c.want)
		}
	}
}

// The seed sample reads as demo reads it, and its policies come named in
// table order.
func TestSeed(t *testing.T) {
	l, err := Seed("spans.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Requests) != 200 || l.Stats.Used != 600 {
		t.Errorf("seed: %d requests, %d spans; want the article's 200 requests of 3 spans", len(l.Requests), l.Stats.Used)
	}
	pols, err := SeedPolicies()
	if err != nil {
		t.Fatal(err)
	}
	var names string
	for _, p := range pols {
		names += p.Name
	}
	if names != "ABCDE" {
		t.Errorf("seed policies %q, want ABCDE", names)
	}
	if _, err := Seed("missing.jsonl"); err == nil {
		t.Error("a file the sample does not hold read without error")
	}
}

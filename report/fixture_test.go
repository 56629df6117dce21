package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/check"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/samples"
	"github.com/tailscope/tailscope/span"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// logs is a read input, as cmd/tailscope holds it.
type logs struct {
	spans []span.Span
	stats *ingest.Stats
	reqs  []*span.Request
	probs span.Problems
}

// readLogs decodes one input the way cmd/tailscope's demo does.
func readLogs(t *testing.T, name string, data []byte) *logs {
	t.Helper()
	l := &logs{}
	st, err := ingest.ReadStream(name, bytes.NewReader(data), ingest.Options{}, func(s *span.Span) { l.spans = append(l.spans, *s) })
	if err != nil {
		t.Fatal(err)
	}
	l.stats = st
	l.reqs, l.probs = span.Assemble(l.spans)
	return l
}

// fill copies read statistics into a report, as cmd/tailscope does.
func (l *logs) fill(rep *analyze.Report) {
	for _, f := range l.stats.Files {
		rep.Inputs = append(rep.Inputs, analyze.Input{File: f, Format: l.stats.Formats[f]})
	}
	rep.Read, rep.Spans, rep.Skipped = l.stats.Read, l.stats.Used, l.stats.Skipped
	rep.SkippedByReason = l.stats.SkippedByReason
	for _, x := range l.stats.Errors[:min(len(l.stats.Errors), 5)] {
		rep.SkipExamples = append(rep.SkipExamples, x.Error())
	}
}

func seedFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := samples.SeedChain.ReadFile("seed-chain/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func seedPolicy(t *testing.T, name string) *policy.Policy {
	t.Helper()
	path := "seed-chain/" + name + ".yaml"
	p, err := policy.Parse(path, seedFile(t, name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p.Name = name
	return p
}

// analysisOf analyses an embedded seed file; inForce is "" or a policy
// name (A…E).
func analysisOf(t *testing.T, file, inForce string) (*analyze.Report, *logs) {
	t.Helper()
	l := readLogs(t, "seed-chain/"+file, seedFile(t, file))
	var opt analyze.Options
	if inForce != "" {
		opt.PolicyInForce = seedPolicy(t, inForce)
	}
	rep := analyze.Run(l.spans, l.reqs, l.probs, opt)
	l.fill(rep)
	return rep, l
}

// demoCheck builds the report `tailscope demo` prints: the true seed spans
// replayed under A–E with the default retry model and no gates.
func demoCheck(t *testing.T) *check.Report {
	t.Helper()
	rep, l := analysisOf(t, "spans.jsonl", "")
	var pols []*policy.Policy
	for _, n := range samples.Policies {
		pols = append(pols, seedPolicy(t, n))
	}
	return check.Run(rep, l.reqs, pols, check.Options{Replay: replay.Options{RetryModel: replay.ModelSame}})
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./report -update rewrites it); got:\n%s", path, got)
	}
}

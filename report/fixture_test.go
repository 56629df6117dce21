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
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// readLogs decodes one generated input into Logs (package logs: the same
// path from spans to a report as the commands take).
func readLogs(t *testing.T, name string, data []byte) *pipeline.Logs {
	t.Helper()
	var spans []span.Span
	st, err := ingest.ReadStream(name, bytes.NewReader(data), ingest.Options{}, ingest.SinkFunc(func(s *span.Span) { spans = append(spans, *s) }))
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.FromSpans(spans, st)
}

// analysisOf analyses an embedded seed file as demo reads it; inForce is
// "" or a policy name (A…E).
func analysisOf(t *testing.T, file, inForce string) (*analyze.Report, *pipeline.Logs) {
	t.Helper()
	l, err := pipeline.Seed(file)
	if err != nil {
		t.Fatal(err)
	}
	pols, err := pipeline.SeedPolicies()
	if err != nil {
		t.Fatal(err)
	}
	var opt analyze.Options
	for _, p := range pols {
		if p.Name == inForce {
			opt.PolicyInForce = p
		}
	}
	return l.Report(opt), l
}

// demoCheck builds the report `tailscope demo` prints: the true seed spans
// replayed under A–E with the default retry model and no gates.
func demoCheck(t *testing.T) *check.Report {
	t.Helper()
	rep, l := analysisOf(t, "spans.jsonl", "")
	pols, err := pipeline.SeedPolicies()
	if err != nil {
		t.Fatal(err)
	}
	return check.Run(rep, l.Requests, pols, check.Options{Replay: replay.Options{RetryModel: replay.ModelSame}})
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

package pipeline

import (
	"encoding/json"
	"os"
	"sync/atomic"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

type counter struct{ spans, bytes atomic.Int64 }

func (c *counter) Bytes(read, total int64) { c.bytes.Store(read) }
func (c *counter) Spans(n int64)           { c.spans.Add(n) }

// Reading a file streams it through the accumulator; reading it into
// memory first gives the same report, and progress counts every span.
func TestReadEqualsFromSpans(t *testing.T) {
	const path = "../samples/seed-chain/recorded-under-A.jsonl"
	var c counter
	l, err := Read([]string{path}, Options{SampleSpans: analyze.DefaultSampleSpans, Progress: &c})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var spans []span.Span
	st, err := ingest.ReadStream(path, f, ingest.Options{}, ingest.SinkFunc(func(s *span.Span) { spans = append(spans, *s) }))
	if err != nil {
		t.Fatal(err)
	}
	a, err := json.Marshal(l.Report(analyze.Options{}))
	if err != nil {
		t.Fatalf("streamed report: %v", err)
	}
	b, err := json.Marshal(FromSpans(spans, st).Report(analyze.Options{}))
	if err != nil {
		t.Fatalf("in-memory report: %v", err)
	}
	if string(a) != string(b) {
		t.Errorf("streamed and in-memory reports differ:\n%s\n%s", a, b)
	}
	if c.spans.Load() != l.Stats.Used || l.Stats.Used != 618 {
		t.Errorf("progress counted %d spans, read %d; want 618", c.spans.Load(), l.Stats.Used)
	}
	if len(l.Requests) != 200 || len(l.Spans) != 618 {
		t.Errorf("%d requests from %d spans", len(l.Requests), len(l.Spans))
	}
}

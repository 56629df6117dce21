package ingest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// forkSink is the Sink of a test that gives the readers a Fork, with emit
// for the readers that decode on one goroutine.
func forkSink(f record.Fork, emit func(*span.Span)) record.Sink {
	return struct {
		record.Fork
		record.SinkFunc
	}{f, emit}
}

// progressSink is a SinkFunc that is also a ProgressSink.
type progressSink struct {
	record.SinkFunc
	progress func(read, total int64)
}

func (s progressSink) Progress(read, total int64) { s.progress(read, total) }

// expectSink is a SinkFunc that is also an ExpectSink.
type expectSink struct {
	record.SinkFunc
	expect func(spans int64, exact bool)
}

func (s expectSink) Expect(spans int64, exact bool) { s.expect(spans, exact) }

// fileSink records the File notices and the spans between them.
type fileSink struct{ events []string }

func (s *fileSink) Span(sp *span.Span) { s.events = append(s.events, sp.Hop) }
func (s *fileSink) File(i int)         { s.events = append(s.events, "file "+string(rune('0'+i))) }

// TestSinkFile: a FileSink is told each file's index, in Stats.Files
// order, before the spans of that file; a plain SinkFunc reads the same
// spans without it.
func TestSinkFile(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"a.jsonl": `{"hop":"a1","duration_ms":1}` + "\n" + `{"hop":"a2","duration_ms":1}` + "\n",
		"b.jsonl": `{"hop":"b1","duration_ms":1}` + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs := &fileSink{}
	st, err := Read([]string{dir}, record.Options{}, fs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"file 0", "a1", "a2", "file 1", "b1"}; !slices.Equal(fs.events, want) || len(st.Files) != 2 {
		t.Errorf("got %q over %v, want %q", fs.events, st.Files, want)
	}
	var hops []string
	if _, err := Read([]string{dir}, record.Options{}, SinkFunc(func(sp *span.Span) { hops = append(hops, sp.Hop) })); err != nil || !slices.Equal(hops, []string{"a1", "a2", "b1"}) {
		t.Errorf("plain sink: %q, %v", hops, err)
	}
}

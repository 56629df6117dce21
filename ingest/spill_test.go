package ingest

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/ingest/internal/spill"
	"github.com/tailscope/tailscope/span"
)

// Parquet from stdin or a compressed file is spilled to a temporary file,
// within --max-spill: over it, an error names the limit and how to raise
// it, and the spill is removed.
func TestSpillBounded(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	data := writeParquet(t, flatRows())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()
	_, err := ReadStream("<stdin>", bytes.NewReader(gz.Bytes()), record.Options{MaxSpill: int64(len(data) - 1), Names: angled}, SinkFunc(func(*span.Span) {}))
	if err == nil || !strings.Contains(err.Error(), "raise with <MaxSpill>") || !strings.Contains(err.Error(), "spilling to a temporary file") {
		t.Errorf("got %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 || len(spill.TempFiles.Paths()) != 0 {
		t.Errorf("left behind: %v, registered %v", left, spill.TempFiles.Paths())
	}
	spans, st := readBytes(t, "<stdin>", gz.Bytes(), record.Options{MaxSpill: int64(len(data))})
	if len(spans) != 4 || st.Formats["<stdin>"] != "parquet" {
		t.Errorf("at the limit: %d spans", len(spans))
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Errorf("left behind after a read: %v", left)
	}
}

// While a spill is being written, it is registered, and Cleanup (what a
// signal handler calls) removes it; a spill started after Cleanup is
// refused.
func TestSpillCleanup(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	defer spill.TempFiles.Reset()
	data := writeParquet(t, flatRows())
	pr, pw := io.Pipe()
	go func() {
		pw.Write(data[:4]) // the spill starts, and waits for more
		for len(spill.TempFiles.Paths()) == 0 {
			time.Sleep(time.Millisecond)
		}
		paths := spill.TempFiles.Paths()
		spill.TempFiles.Cleanup()
		for _, p := range paths {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("%s not removed: %v", p, err)
			}
		}
		pw.Write(data[4:])
		pw.Close()
	}()
	ReadStream("<stdin>", pr, record.Options{Format: "parquet"}, SinkFunc(func(*span.Span) {}))
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	_, err := ReadStream("<stdin>", bytes.NewReader(data), record.Options{}, SinkFunc(func(*span.Span) {}))
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("a spill after Cleanup: %v", err)
	}
}

package ingest

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// TestProgress: the hook sees a non-decreasing count that ends at the
// total size of the inputs, as stored (compressed bytes for .gz).
func TestProgress(t *testing.T) {
	dir := t.TempDir()
	var lines strings.Builder
	for i := 0; i < 5000; i++ {
		lines.WriteString(`{"trace_id":"t","span_id":"s","hop":"h","start":1,"duration_ms":12.5,"status":"ok"}` + "\n")
	}
	plain := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(plain, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(lines.String()))
	zw.Close()
	packed := filepath.Join(dir, "b.jsonl.gz")
	if err := os.WriteFile(packed, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	want := int64(lines.Len() + gz.Len())

	var calls int
	var last, total int64
	_, err := Read([]string{plain, packed}, record.Options{}, progressSink{SinkFunc(func(*span.Span) {}), func(read, tot int64) {
		calls++
		if read < last {
			t.Fatalf("progress went back from %d to %d", last, read)
		}
		last, total = read, tot
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls < 3 {
		t.Errorf("progress called %d times for two files", calls)
	}
	if total != want || last != want {
		t.Errorf("progress ended at %d of %d, want %d of %d", last, total, want, want)
	}

	// Stdin has no known size: total is 0, bytes still count.
	last, total = 0, -1
	_, err = Read([]string{"-"}, record.Options{Stdin: strings.NewReader(lines.String())}, progressSink{SinkFunc(func(*span.Span) {}), func(read, tot int64) { last, total = read, tot }})
	if err != nil {
		t.Fatal(err)
	}
	if total != 0 || last != int64(lines.Len()) {
		t.Errorf("stdin: progress %d of %d, want %d of 0", last, total, lines.Len())
	}
}

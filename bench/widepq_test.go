package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

// The wide file holds the flat file's spans (every field the flat
// schema has, row for row) and the extra columns, which tailscope reads
// as the spans' attributes; the format's name says how many there are.
func TestWideParquet(t *testing.T) {
	dir := t.TempDir()
	flatPath, widePath := filepath.Join(dir, "f.parquet"), filepath.Join(dir, "w.parquet")
	nf, err := writeParquet(flatPath, 20_000)
	if err != nil {
		t.Fatal(err)
	}
	nw, err := writeWideParquet(widePath, 20_000)
	if err != nil || nw != nf {
		t.Fatalf("wide: %d spans, flat %d (%v)", nw, nf, err)
	}
	read := func(path string) (spans []string, attrs map[string]int) {
		attrs = map[string]int{}
		_, err := ingest.Read([]string{path}, ingest.Options{}, ingest.SinkFunc(func(sp *span.Span) {
			spans = append(spans, fmt.Sprintf("%s %s<%s %s %s %s %d+%d %s %v %d %d %d %g",
				sp.TraceID, sp.SpanID, sp.ParentID, sp.Service, sp.Name, sp.Hop, sp.Start, sp.Duration, sp.Status, sp.Timeout, sp.Code, sp.Attempt, sp.TimeoutInForce, sp.Weight))
			for _, a := range sp.Attrs {
				attrs[a.Key]++
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		return spans, attrs
	}
	fs, fa := read(flatPath)
	ws, wa := read(widePath)
	if len(fa) != 0 {
		t.Errorf("the flat file has attributes: %v", fa)
	}
	if strings.Join(fs, "\n") != strings.Join(ws, "\n") {
		t.Errorf("the wide file's spans differ from the flat file's")
	}
	for _, k := range []string{"start_unix_nano", "k8s.pod.name", "http.route", "http.request.method", "cloud.region", "deployment.environment", "net.peer.port"} {
		if wa[k] == 0 {
			t.Errorf("no span has attribute %s: %v", k, wa)
		}
	}
	if wa["start_unix_nano"] != nw {
		t.Errorf("start_unix_nano on %d of %d spans", wa["start_unix_nano"], nw)
	}
	f, err := parquet.OpenFile(mustOpen(t, widePath))
	if err != nil {
		t.Fatal(err)
	}
	ff, err := parquet.OpenFile(mustOpen(t, flatPath))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(f.Schema().Columns()) - len(ff.Schema().Columns()); got != wideExtra || !strings.Contains(fmtWide, fmt.Sprintf(" %d extra", wideExtra)) {
		t.Errorf("%d extra columns, wideExtra %d, the format says %q", got, wideExtra, fmtWide)
	}
}

// mustOpen opens path for parquet.OpenFile (an io.ReaderAt and its size).
func mustOpen(t *testing.T, path string) (*os.File, int64) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return f, st.Size()
}

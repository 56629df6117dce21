package ingest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// Readers announce an input's size in spans before its first span
// (an ExpectSink): a Parquet file its row count, exactly; a plain JSON
// lines file an estimate from its size; an input whose size says nothing
// (compressed) nothing; a Tempo block the values of a span column, a
// close upper bound.
func TestExpect(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var lines bytes.Buffer
	for i := range 5000 {
		fmt.Fprintf(&lines, `{"trace_id":"t%d","span_id":"s%d","hop":"h%d","duration_ms":%d.5,"status":"ok"}`+"\n", i/4, i, i%7, i%900)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(lines.Bytes())
	zw.Close()
	for _, c := range []struct {
		name     string
		path     string
		min, max int64
		exact    bool
	}{
		{"parquet", write("a.parquet", writeParquet(t, flatRows())), 6, 6, true},
		{"jsonl", write("a.jsonl", lines.Bytes()), 4500, 5500, false},
		{"gzip", write("a.jsonl.gz", gz.Bytes()), 0, 0, false},
		{"tempo", "testdata/tempo-vparquet4.parquet", -1, -1, false}, // -1: at least the spans read, at most twice that
	} {
		var calls []int64
		exact := false
		var read int64
		sink := expectSink{SinkFunc(func(*span.Span) {
			if read == 0 && c.max != 0 && len(calls) == 0 {
				t.Errorf("%s: a span came before Expect", c.name)
			}
			read++
		}), func(n int64, e bool) { calls = append(calls, n); exact = e }}
		if _, err := Read([]string{c.path}, record.Options{}, sink); err != nil {
			t.Fatal(err)
		}
		if c.max < 0 {
			c.min, c.max = read, 2*read
		}
		switch {
		case c.max == 0 && len(calls) > 0:
			t.Errorf("%s: Expect(%d) for an input of unknown size", c.name, calls[0])
		case c.max > 0 && (len(calls) != 1 || calls[0] < c.min || calls[0] > c.max || exact != c.exact):
			t.Errorf("%s: Expect calls %v (exact %v); want one in [%d, %d] (exact %v)", c.name, calls, exact, c.min, c.max, c.exact)
		}
	}
}

package ingest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// A log truncated or rotated while it is read gave a report on the part
// read, with one "bad JSON" skip at the cut, and exit 0. Whatever the
// format or compression, a file that shrank, was removed or renamed, or
// whose name came to name another file during the read ends the read with
// an error naming the file; a file appended to meanwhile is read as usual.
// The change happens from inside the read (at the first span delivered),
// so the test is not a race.
func TestFileChangedWhileRead(t *testing.T) {
	var jl, csv strings.Builder
	csv.WriteString("trace_id,span_id,hop,start,duration_ms,status\n")
	for i := range 20000 {
		fmt.Fprintf(&jl, `{"trace_id":"t%d","span_id":"s%d","hop":"api","start":%d,"duration_ms":%d,"status":"ok"}`+"\n", i/4, i, 1700000000000000000+int64(i)*1e6, 10+i%90)
		fmt.Fprintf(&csv, "t%d,s%d,api,%d,%d,ok\n", i/4, i, 1700000000000000000+int64(i)*1e6, 10+i%90)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(jl.String()))
	zw.Close()
	inputs := map[string][]byte{"spans.jsonl": []byte(jl.String()), "spans.csv": []byte(csv.String()), "spans.jsonl.gz": gz.Bytes()}
	changes := []struct {
		name   string
		change func(path string) error
		want   string // "" for no error
	}{
		{"truncated", func(p string) error { return os.Truncate(p, 100) }, "shrank"},
		{"emptied", func(p string) error { return os.Truncate(p, 0) }, "shrank"},
		{"removed", os.Remove, "removed or renamed"},
		{"renamed", func(p string) error { return os.Rename(p, p+".1") }, "removed or renamed"},
		{"rotated", func(p string) error {
			if err := os.Rename(p, p+".1"); err != nil {
				return err
			}
			return os.WriteFile(p, []byte("{}\n"), 0o644)
		}, "replaced"},
		{"replaced by a bigger file", func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			tmp := p + ".new"
			if err := os.WriteFile(tmp, append(b, b...), 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, p)
		}, "replaced"},
		{"appended to", func(p string) error {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.Write([]byte("more\n"))
			return err
		}, ""},
	}
	for file, body := range inputs {
		for _, c := range changes {
			if c.name == "appended to" && strings.HasSuffix(file, ".gz") {
				continue // gzip's trailer would make the addition garbage
			}
			t.Run(file+"/"+c.name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), file)
				if err := os.WriteFile(path, body, 0o644); err != nil {
					t.Fatal(err)
				}
				changed := false
				_, err := Read([]string{path}, record.Options{}, SinkFunc(func(*span.Span) {
					if !changed {
						changed = true
						if err := c.change(path); err != nil {
							t.Error(err)
						}
					}
				}))
				switch {
				case c.want == "" && err != nil:
					t.Fatalf("read: %v; want no error", err)
				case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path)):
					t.Fatalf("read: %v; want an error naming %s saying %q", err, path, c.want)
				}
			})
		}
	}
}

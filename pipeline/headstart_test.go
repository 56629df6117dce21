package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
)

// A file read with the sample's head start gives the report a read
// without it gives (standard input: it cannot be read twice, so it never
// has one), both when the head start holds and when a misleading size
// estimate makes it miss and the file is read again.
func TestHeadStartSameReport(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		pad    func(i int) int // padding of line i
		reread bool
	}{
		{"even lines", func(int) int { return 0 }, false},
		// Short lines first: the estimate from the first 64 KB is about
		// nine times the real count, the jump overshoots the level 4,000
		// spans end at, the file is read again.
		{"short lines first", func(i int) int {
			if i < 2000 {
				return 0
			}
			return 1500
		}, true},
	} {
		var b bytes.Buffer
		for i := range 4000 {
			fmt.Fprintf(&b, `{"trace_id":"t%d","span_id":"s%d","hop":"h%d","duration_ms":%d.25,"status":"ok","pad":"%s"}`+"\n",
				i/2, i, i%4, 1+i%700, strings.Repeat("x", c.pad(i)))
		}
		path := filepath.Join(dir, c.name+".jsonl")
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		reread := 0
		testHookReread = func() { reread++ }
		l, err := Read([]string{path}, Options{SampleSpans: 300})
		testHookReread = nil
		if err != nil {
			t.Fatal(err)
		}
		in, err := Read([]string{"-"}, Options{SampleSpans: 300, Ingest: ingest.Options{Stdin: bytes.NewReader(b.Bytes())}})
		if err != nil {
			t.Fatal(err)
		}
		if (reread > 0) != c.reread {
			t.Errorf("%s: read again %d times; want again: %v", c.name, reread, c.reread)
		}
		if !l.acc.Sampled() {
			t.Errorf("%s: not sampled", c.name)
		}
		got, _ := json.Marshal(l.Report(analyze.Options{}))
		want, _ := json.Marshal(in.Report(analyze.Options{}))
		// The file's name is in the report: compare with it as stdin's.
		name, _ := json.Marshal("<stdin>")
		got = bytes.ReplaceAll(got, []byte(`"`+path+`"`), name)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the report differs from the one read without a head start", c.name)
		}
	}
}

package tsbeam

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/summary"
)

// TestMain initialises Beam; pipelines run on prism, in-process (no
// container, no network), unless --runner says otherwise.
func TestMain(m *testing.M) { ptest.MainWithDefault(m, "prism") }

// The pipeline, run in-process by the prism runner on the repository's
// samples cut into files (traces cut across them) and its fixtures in
// other formats, writes the summary `tailscope summarize` writes on the
// same files, and the report on it is the same.
func TestPipelineEqualsSummarize(t *testing.T) {
	dir := t.TempDir()
	var files []string
	raw, err := os.ReadFile("../samples/seed-chain/recorded-under-A.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(raw)), "\n")
	for i, cut := range []int{0, 100, 101, 350, 500, len(lines)} {
		if i == 0 {
			continue
		}
		p := filepath.Join(dir, "spans-"+string(rune('a'+i))+".jsonl")
		if err := os.WriteFile(p, []byte(strings.Join(lines[[]int{0, 100, 101, 350, 500}[i-1]:cut], "")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	for _, f := range []string{"../testdata/real/zipkin/messaging-kafka.json", "../testdata/real/otel-proto/trace.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "z-"+filepath.Base(filepath.Dir(f))+".json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	slices.Sort(files)
	out := filepath.Join(t.TempDir(), "all.tss")

	p, s := beam.NewPipelineWithRoot()
	Summarize(s, filepath.Join(dir, "*"), out, Options{})
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}

	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := pipeline.Summarize(files, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, summary.Encode(want)) {
		t.Error("the pipeline's summary differs from summarize's")
	}
	report := func(paths ...string) []byte {
		l, err := pipeline.Read(paths, pipeline.Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(l.Report(analyze.Options{}))
		return b
	}
	if a, b := report(out), report(files...); !bytes.Equal(a, b) {
		t.Errorf("the report on the pipeline's summary differs from the report on the files:\n%s\n%s", a, b)
	}
}

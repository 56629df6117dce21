// Tests of convert: round trips to analyze, real exports, usage, stdout, --strict and attributes.

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/internal/realdata"
)

// convRun runs the command in-process.
func convRun(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// analyzeJSON returns the analyze report of paths without its "inputs"
// (file names and formats differ by construction).
func analyzeJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out, errs := convRun(t, "", append([]string{"analyze", "--format", "json", "-q"}, args...)...)
	if code != 0 {
		t.Fatalf("analyze %v: exit %d: %s", args, code, errs)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "inputs")
	return m
}

// The seed sample converted to each format and read back gives an
// identical analyze --format json: counts, percentiles to the ns, classes,
// recommendation.
func TestConvertRoundTripAnalyze(t *testing.T) {
	dir := t.TempDir()
	for _, in := range []string{"spans.jsonl", "recorded-under-A.jsonl"} {
		src := filepath.Join("..", "..", "samples", "seed-chain", in)
		want := analyzeJSON(t, src)
		raw, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(raw), "\n") // one span per line
		for _, ext := range []string{"jsonl", "parquet", "arrow"} {
			out := filepath.Join(dir, in+"."+ext)
			code, _, errs := convRun(t, "", "convert", src, "-o", out)
			if code != 0 {
				t.Fatalf("convert %s → %s: exit %d: %s", in, ext, code, errs)
			}
			if !strings.Contains(errs, fmt.Sprintf("tailscope: wrote %d spans to %s (%s); read %d, skipped 0", n, out, ext, n)) {
				t.Errorf("summary: %q", errs)
			}
			got := analyzeJSON(t, out)
			if !reflect.DeepEqual(got, want) {
				a, _ := json.MarshalIndent(want, "", " ")
				b, _ := json.MarshalIndent(got, "", " ")
				t.Errorf("%s via %s: analysis differs\nwant %.2000s\n got %.2000s", in, ext, a, b)
			}
		}
	}
}

func TestConvertNezha(t *testing.T) {
	// The fault minute: testdata/real keeps it whole, so its counts hold
	// whichever copy is read.
	src := realdata.Path(t, "nezha-trainticket/fault-12_06_trace.csv")
	const nezhaMap = "trace_id=TraceID,span_id=SpanID,parent_id=ParentID,service=PodName,name=OperationName,start=StartTimeUnixNano,end=EndTimeUnixNano"
	out := filepath.Join(t.TempDir(), "nezha.parquet")
	if code, _, errs := convRun(t, "", "convert", "--map", nezhaMap, src, "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := analyzeJSON(t, "--map", nezhaMap, src)
	got := analyzeJSON(t, out)
	if got["spans"] != float64(4166) || got["read"] != float64(4166) {
		t.Errorf("spans %v read %v, want 4166", got["spans"], got["read"])
	}
	if req := got["requests"].(map[string]any); req["count"] != float64(59) {
		t.Errorf("requests %v, want 59", req["count"])
	}
	if !reflect.DeepEqual(got, want) {
		t.Error("the converted Nezha file analyses differently from the CSV")
	}
}

func TestConvertUsage(t *testing.T) {
	src := filepath.Join("..", "..", "samples", "seed-chain", "spans.jsonl")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"convert", src}, 2, "say the output format"},
		{[]string{"convert", src, "-o", "x.csv"}, 2, `-o "x.csv": unknown extension`},
		{[]string{"convert", src, "--to", "xml"}, 2, `--to "xml": want jsonl, parquet, arrow`},
		{[]string{"convert", "-o", "x.jsonl"}, 2, "no input"},
		{[]string{"convert", "--help"}, 0, ""},
	} {
		code, _, errs := convRun(t, "", c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errs, c.code, c.msg)
		}
	}
}

func TestConvertStdoutAndStrict(t *testing.T) {
	in := `{"hop":"a","duration_ms":1,"status":"ok"}` + "\n" + `{"hop":"b","duration_ms":"x"}` + "\n"
	code, out, errs := convRun(t, in, "convert", "-", "--to", "jsonl")
	if code != 0 || out != `{"hop":"a","duration_ns":1000000,"status":"ok"}`+"\n" {
		t.Fatalf("exit %d, out %q, err %q", code, out, errs)
	}
	if !strings.Contains(errs, "wrote 1 spans to stdout (jsonl); read 2, skipped 1; first skipped: <stdin>:2:") {
		t.Errorf("summary %q", errs)
	}
	// --strict: exit 1 and no file, not half a file.
	dst := filepath.Join(t.TempDir(), "o.parquet")
	code, _, errs = convRun(t, in, "convert", "--strict", "-", "-o", dst)
	if code != 1 || !strings.Contains(errs, "--strict: 1 of 2 records skipped; nothing written") {
		t.Errorf("strict: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("strict run left %s", dst)
	}
	entries, _ := os.ReadDir(filepath.Dir(dst))
	if len(entries) != 0 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// Attributes are written only when asked (--attributes), and then read
// back as they were; Parquet does not carry them.
func TestConvertAttributes(t *testing.T) {
	in := `{"hop":"a","duration_ms":1,"status":"ok","pod":"a-1","attributes":{"http.route":"/x"},"resource":{"k8s.pod.name":"a-7"}}` + "\n"
	code, out, errs := convRun(t, in, "convert", "-", "--to", "jsonl")
	if code != 0 || out != `{"hop":"a","duration_ns":1000000,"status":"ok"}`+"\n" {
		t.Fatalf("default: exit %d, out %q, err %q", code, out, errs)
	}
	want := `{"hop":"a","duration_ns":1000000,"status":"ok","attributes":{"k8s.pod.name":"a-7","http.route":"/x","pod":"a-1"}}` + "\n"
	code, out, errs = convRun(t, in, "convert", "--attributes", "-", "--to", "jsonl")
	if code != 0 || out != want {
		t.Fatalf("--attributes: exit %d, out %q, err %q", code, out, errs)
	}
	dir := t.TempDir()
	for _, ext := range []string{"jsonl", "arrow"} {
		dst := filepath.Join(dir, "o."+ext)
		if code, _, errs := convRun(t, in, "convert", "--attributes", "-", "-o", dst); code != 0 {
			t.Fatalf("%s: exit %d: %s", ext, code, errs)
		}
		code, out, errs := convRun(t, "", "convert", "--attributes", "-q", dst, "--to", "jsonl")
		if code != 0 || out != want {
			t.Errorf("%s read back: exit %d, out %q, err %q", ext, code, out, errs)
		}
	}
}

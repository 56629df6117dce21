// No output of any command, in any format, on any fixture carries a fmt error verb.

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/internal/realdata"
)

// nezhaMapFlag reads the Nezha CSV exports (TraceID, PodName, … columns).
const nezhaMapFlag = "trace_id=TraceID,span_id=SpanID,parent_id=ParentID,service=PodName,name=OperationName,start=StartTimeUnixNano,end=EndTimeUnixNano"

// verbInputs lists every span input the repository holds (the seed
// sample, the real exports, the broken-input fixtures, the reader
// fixtures, a Tempo block folder) and the shared real exports when they
// are present, each with the flags that read it.
func verbInputs(t *testing.T) [][]string {
	t.Helper()
	var out [][]string
	dirs := append(append([]string{seedDir}, realdata.Roots(t)...), badDir, "../../ingest/testdata")
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			name := d.Name()
			if d.IsDir() {
				switch {
				case name == "fuzz" || name == "policy" || name == "linked":
					return filepath.SkipDir
				case name == "tempo-block":
					out = append(out, []string{path})
					return filepath.SkipDir
				}
				return nil
			}
			switch {
			case name == "LICENSE" || strings.HasSuffix(name, "fault_list.json") || strings.HasSuffix(name, ".md") ||
				strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".txt"):
			case strings.HasSuffix(name, ".csv") && strings.Contains(path, "nezha"):
				out = append(out, []string{"--map", nezhaMapFlag, path})
			default:
				out = append(out, []string{path})
			}
			return nil
		})
	}
	return out
}

// A format verb that did not match its arguments prints as "%!d(…)" or
// "%!(EXTRA …)": a message built wrong. Every command that reports, in
// every format, on every input (and the comparisons of two windows) must
// print none.
func TestNoFormatErrorInAnyOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every command on every fixture")
	}
	inputs := verbInputs(t)
	if len(inputs) < 20 {
		t.Fatalf("only %d inputs found", len(inputs))
	}
	tmp := t.TempDir()
	runs := 0
	scan := func(args []string) {
		t.Helper()
		var out, errb bytes.Buffer
		run(args, strings.NewReader(""), &out, &errb)
		runs++
		for _, s := range []string{out.String(), errb.String()} {
			if i := strings.Index(s, "%!"); i >= 0 {
				t.Errorf("tailscope %s: %q", strings.Join(args, " "), s[max(0, i-120):min(len(s), i+60)])
			}
		}
	}
	formats := []string{"text", "markdown", "json", "html"}
	for _, in := range inputs {
		pol := filepath.Join(tmp, "recommended.yaml")
		os.Remove(pol)
		scan(append([]string{"recommend", "-o", pol}, in...))
		for _, emit := range []string{"envoy", "grpc"} {
			scan(append([]string{"recommend", "--emit", emit}, in...))
		}
		policies := []string{"--policy", filepath.Join(seedDir, "A.yaml"), "--policy", filepath.Join(seedDir, "E.yaml")}
		if _, err := os.Stat(pol); err == nil {
			policies = append(policies, "--policy", pol)
		}
		for _, f := range formats {
			scan(append([]string{"analyze", "-f", f}, in...))
			scan(append(append([]string{"check", "-f", f}, policies...), in...))
		}
		scan(append([]string{"analyze", "--compare-window", "1s"}, in...))
	}
	// Two windows of one deployment, and the seed sample against itself
	// recorded under a policy.
	pairs := [][]string{{filepath.Join(seedDir, "spans.jsonl"), filepath.Join(seedDir, "recorded-under-A.jsonl")}}
	pairs = append(pairs, []string{"--map", nezhaMapFlag,
		realdata.Path(t, "nezha-trainticket/baseline-11_39_trace.csv"), realdata.Path(t, "nezha-trainticket/fault-12_06_trace.csv")})
	for _, p := range pairs {
		n := len(p)
		for _, f := range formats {
			scan(append(append([]string{"analyze", "-f", f}, p[:n-2]...), "--compare", p[n-2], p[n-1]))
		}
	}
	scan([]string{"demo"})
	t.Logf("%d runs over %d inputs", runs, len(inputs))
}

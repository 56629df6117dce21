package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Summaries and merges are held to --max-hops as the logs read directly
// are: three summaries of 40 hops each merge to 120 hops, which a limit of
// 100 refuses, with the limit named, and writes no file.
func TestMergeHeldToMaxHops(t *testing.T) {
	dir := t.TempDir()
	var sums []string
	for f := 0; f < 3; f++ {
		var b strings.Builder
		for h := 0; h < 40; h++ {
			fmt.Fprintf(&b, `{"trace_id":"t%d-%d","span_id":"s","hop":"op%d-%d","start_ms":%d,"duration_ms":5,"status":"ok"}`+"\n", f, h, f, h, 1000+h)
		}
		logs := filepath.Join(dir, fmt.Sprintf("l%d.jsonl", f))
		if err := os.WriteFile(logs, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		sum := filepath.Join(dir, fmt.Sprintf("l%d.tss", f))
		if _, stderr, code := runCode(t, "summarize", "-q", logs, "-o", sum); code != 0 {
			t.Fatalf("summarize: exit %d: %s", code, stderr)
		}
		sums = append(sums, sum)
	}
	all := filepath.Join(dir, "all.tss")
	_, stderr, code := runCode(t, append([]string{"merge", "-q", "--max-hops", "100", "-o", all}, sums...)...)
	if code == 0 || !strings.Contains(stderr, "more than 100 distinct hops") {
		t.Errorf("merge over --max-hops: exit %d, %q; want the limit named", code, stderr)
	}
	if _, err := os.Stat(all); err == nil {
		t.Error("the refused merge wrote its output")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	_, stderr, code = runCode(t, append([]string{"analyze", "-q", "--max-hops", "100"}, sums...)...)
	if code == 0 || !strings.Contains(stderr, "more than 100 distinct hops") {
		t.Errorf("analyze of the summaries over --max-hops: exit %d, %q", code, stderr)
	}
	if _, stderr, code := runCode(t, append([]string{"merge", "-q", "-o", all}, sums...)...); code != 0 {
		t.Errorf("merge within the default limit: exit %d: %s", code, stderr)
	}
}

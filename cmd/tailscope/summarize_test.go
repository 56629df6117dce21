// Tests of the summarize and merge commands end to end.

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// summarize on shares of the logs, merge, and analyze on the merge gives
// analyze on all the logs, to the byte; recommend and check take the
// summaries as analyze does; a damaged summary fails naming the file.
func TestSummarizeMergeCommands(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join("..", "..", "samples", "seed-chain", "recorded-under-A.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(raw)), "\n")
	var logs, parts []string
	for i := range 4 {
		p := filepath.Join(dir, "log-"+string(rune('a'+i))+".jsonl")
		if err := os.WriteFile(p, []byte(strings.Join(lines[i*len(lines)/4:(i+1)*len(lines)/4], "")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, p)
		part := filepath.Join(dir, "part-"+string(rune('a'+i))+".tss")
		if code, _, errs := convRun(t, "", "summarize", "-q", p, "-o", part); code != 0 {
			t.Fatalf("summarize: exit %d: %s", code, errs)
		}
		parts = append(parts, part)
	}
	all := filepath.Join(dir, "all.tss")
	if code, _, errs := convRun(t, "", "merge", parts[2], parts[0], parts[3], parts[1], "-o", all); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, errs)
	}
	run := func(args ...string) string {
		t.Helper()
		code, out, errs := convRun(t, "", args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return out
	}
	whole := run(append([]string{"analyze", "-q", "--format", "json"}, logs...)...)
	for _, in := range [][]string{{all}, parts, {parts[1], logs[0], parts[3], logs[2]}} {
		if got := run(append([]string{"analyze", "-q", "--format", "json"}, in...)...); got != whole {
			t.Errorf("analyze %v differs from analyze on the logs", in)
		}
	}
	if a, b := run(append([]string{"recommend", "-q"}, logs...)...), run("recommend", "-q", all); a != b {
		t.Errorf("recommend on the merged summary differs:\n%s\n%s", a, b)
	}
	seed := filepath.Join("..", "..", "samples", "seed-chain")
	checkArgs := []string{"check", "-q", "--format", "json", "--policy", filepath.Join(seed, "A.yaml")}
	c1, o1, _ := convRun(t, "", append(checkArgs, logs...)...)
	c2, o2, _ := convRun(t, "", append(checkArgs, all)...)
	if c1 != c2 || o1 != o2 || !strings.Contains(o1, `"results"`) {
		t.Errorf("check on the merged summary: exit %d, on the logs %d; outputs equal: %v", c2, c1, o1 == o2)
	}

	b, _ := os.ReadFile(all)
	bad := filepath.Join(dir, "cut.tss")
	os.WriteFile(bad, b[:len(b)/2], 0o644)
	for _, cmd := range []string{"analyze", "recommend", "merge"} {
		args := []string{cmd, "-q", bad}
		if cmd == "merge" {
			args = []string{cmd, bad, all, "-o", filepath.Join(dir, "x.tss")}
		}
		code, _, errs := convRun(t, "", args...)
		if code != exitError || !strings.Contains(errs, bad) || strings.Contains(errs, "panic") {
			t.Errorf("%s on a cut summary: exit %d, %q", cmd, code, errs)
		}
	}
	if code, _, errs := convRun(t, "", "merge", parts[0]); code != exitUsage || !strings.Contains(errs, "-o") {
		t.Errorf("merge without -o: exit %d: %s", code, errs)
	}
}

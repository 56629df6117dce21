package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
)

// TestPolicyWritten: what recommend prints after writing the policy (the
// header of the file, then the summary), on the seed sample as logged
// under A (some hops observe-first) and as it truly ran.
func TestPolicyWritten(t *testing.T) {
	for _, c := range []struct{ name, file, golden string }{
		{"true latencies", "spans.jsonl", "recommend-seed.txt"},
		{"recorded under A", "recorded-under-A.jsonl", "recommend-seed-under-A.txt"},
	} {
		_, l := analysisOf(t, c.file, "")
		rep, p := l.Recommend(analyze.Options{})
		var b bytes.Buffer
		b.WriteString(PolicyHeader(rep))
		if err := PolicyWritten(&b, "policy.yaml", rep, p); err != nil {
			t.Fatal(err)
		}
		golden(t, c.golden, b.Bytes())
	}
}

// TestPolicyWrittenNames: hop names are made visible, their column as
// wide as the widest name, and each hop shows its own action.
func TestPolicyWrittenNames(t *testing.T) {
	rep, p := readLogs(t, "many-hops.jsonl", manyHopsLogs(12, 40)).Recommend(analyze.Options{})
	names := p.HopNames()
	if len(names) == 0 {
		t.Fatal("the fixture's policy lists no hop")
	}
	var b bytes.Buffer
	if err := PolicyWritten(&b, "p.yaml", rep, p); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	safety, _ := safetyLinesAdvice(rep.RecommendedPolicy.Safety, true)
	if len(lines) != len(names)+1+len(safety) || !strings.HasPrefix(lines[0], "wrote p.yaml: ") {
		t.Fatalf("want a head line, %d hop lines and %d safety lines, got:\n%s", len(names), len(safety), b.String())
	}
	action := map[string]string{}
	for _, h := range rep.Hops {
		action[h.Hop] = h.Recommendation.Action
	}
	for i, n := range names {
		want := "  " + n + " " + action[n]
		if !strings.HasPrefix(lines[i+1], want) {
			t.Errorf("line %d = %q, want it to start %q", i+1, lines[i+1], want)
		}
	}
	if rep.Hops[0].Recommendation.Action != analyze.ActionObserveFirst && strings.Contains(PolicyHeader(rep), "observe-first") {
		t.Errorf("header warns of observe-first hops the report does not have")
	}
	if got := VisibleLines("a\x1b[2J\tb\nc\u202e"); got != `a\x1b[2J`+"\tb\nc"+`\u202e` {
		t.Errorf("VisibleLines = %q", got)
	}
}

// TestInputsLine: a policy's header names up to three logs whole; more as
// their count, their shared folder and the first and last, so that a day
// of one-minute exports does not make a header line kilobytes long.
func TestInputsLine(t *testing.T) {
	day := make([]string, 59)
	for i := range day {
		day[i] = "/data/ob/2022-08-23/" + string(rune('a'+i%26)) + "_trace.csv.zst"
	}
	day[58] = "/data/ob/2022-08-23/z_trace.csv.zst"
	for _, c := range []struct {
		files []string
		want  string
	}{
		{[]string{"spans.jsonl"}, "spans.jsonl"},
		{[]string{"a.jsonl", "b.jsonl", "c.jsonl"}, "a.jsonl, b.jsonl, c.jsonl"},
		{day, "59 files in /data/ob/2022-08-23/: a_trace.csv.zst … z_trace.csv.zst"},
		{[]string{"a.jsonl", "b.jsonl", "c.jsonl", "d.jsonl"}, "4 files: a.jsonl … d.jsonl"},
		{[]string{"x/a.jsonl", "x/ab.jsonl", "x/b.jsonl", "y/c.jsonl"}, "4 files: x/a.jsonl … y/c.jsonl"},
		{[]string{"x/a/1", "x/a/2", "x/b/3", "x/b/4"}, "4 files in x/: a/1 … b/4"},
	} {
		if got := inputsLine(c.files); got != c.want {
			t.Errorf("inputsLine(%d files) = %q, want %q", len(c.files), got, c.want)
		}
	}
}

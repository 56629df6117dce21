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

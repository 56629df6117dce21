package pipeline

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
)

// fakePushdown claims one path and computes its state by reading it (what
// a server would give), or declines with why.
type fakePushdown struct {
	path, why string
	calls     int
}

func (f *fakePushdown) Claims(path string) bool { return path == f.path }

func (f *fakePushdown) State(path string, o ingest.Options, sampleSpans int) (*analyze.State, *ingest.Stats, string, error) {
	f.calls++
	if f.why != "" {
		return nil, nil, f.why, nil
	}
	s, err := Summarize([]string{path}, Options{Ingest: o, SampleSpans: sampleSpans})
	if err != nil {
		return nil, nil, "", err
	}
	s.Stats.Notes = append(s.Stats.Notes, "computed elsewhere")
	return s.Accum.State(), s.Stats, "", nil
}

// TestPushdown: a path a Pushdown claims is read from the state it gives
// (the report is the readers' own, with its notes); a decline is told to
// Note at once and the path is read by the readers, to the same report;
// under PushdownOnly a decline is an error; a claimed path read with
// others is declined.
func TestPushdown(t *testing.T) {
	const path = "../samples/seed-chain/recorded-under-A.jsonl"
	report := func(l *Logs) string {
		rep := l.Report(analyze.Options{})
		rep.Notes = nil
		b, _ := json.Marshal(rep)
		return string(b)
	}
	base, err := Read([]string{path}, Options{SampleSpans: 200})
	if err != nil {
		t.Fatal(err)
	}
	want := report(base)

	p := &fakePushdown{path: path}
	var notes []string
	note := func(s string) { notes = append(notes, s) }
	l, err := Read([]string{path}, Options{SampleSpans: 200, Pushdown: p, Note: note})
	if err != nil {
		t.Fatal(err)
	}
	if p.calls != 1 || len(notes) != 0 || !strings.Contains(strings.Join(l.Stats.Notes, "\n"), "computed elsewhere") {
		t.Errorf("pushed down: %d calls, notes %q, stats' notes %q", p.calls, notes, l.Stats.Notes)
	}
	if got := report(l); got != want {
		t.Errorf("the pushed-down report differs from the readers'")
	}

	p = &fakePushdown{path: path, why: "a reason"}
	l, err = Read([]string{path}, Options{SampleSpans: 200, Pushdown: p, Note: note})
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], path+": not computed on the server (a reason)") {
		t.Errorf("declined: notes %q", notes)
	}
	if got := report(l); got != want {
		t.Errorf("the report of a declined push-down differs from the readers'")
	}

	if _, err := Read([]string{path}, Options{SampleSpans: 200, Pushdown: p, PushdownOnly: true}); err == nil || !strings.Contains(err.Error(), "cannot be computed on the server: a reason") {
		t.Errorf("declined under PushdownOnly: %v", err)
	}

	notes = nil
	p = &fakePushdown{path: path}
	if _, err := Read([]string{path, "../samples/seed-chain/spans.jsonl"}, Options{Pushdown: p, Note: note}); err != nil {
		t.Fatal(err)
	}
	if p.calls != 0 || len(notes) != 1 || !strings.Contains(notes[0], "read with other inputs") {
		t.Errorf("read with another path: %d calls, notes %q", p.calls, notes)
	}
}

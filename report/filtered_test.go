package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/check"
)

// The summary line reconciles read = used + filtered + skipped in every
// format, and says nothing of filtering when nothing was filtered.
func TestSummaryCountsFiltered(t *testing.T) {
	rep := &analyze.Report{Schema: analyze.Schema, ReadStats: analyze.ReadStats{Read: 600, Spans: 200, Filtered: 400}, Hops: []analyze.Hop{}, Warnings: []analyze.Warning{}}
	for format, want := range map[string]string{"text": "(read 600, filtered 400, skipped 0)", "markdown": "(read 600, filtered 400, skipped 0)", "html": "used 200, filtered 400, skipped 0"} {
		var b bytes.Buffer
		if err := Analysis(&b, format, rep, Options{}); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s: no %q in\n%.600s", format, want, b.String())
		}
	}
	var b bytes.Buffer
	if err := Check(&b, "text", &check.Report{Schema: check.Schema, ReadStats: analyze.ReadStats{Read: 600, Spans: 200, Filtered: 400}, Results: []check.Result{}}, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "(read 600, filtered 400, skipped 0)") {
		t.Errorf("check: %.300s", b.String())
	}
	rep.Filtered, rep.Read = 0, 200
	b.Reset()
	if err := Analysis(&b, "text", rep, Options{}); err != nil || strings.Contains(b.String(), "filtered") {
		t.Errorf("nothing filtered, yet: %.300s (%v)", b.String(), err)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// --exclude-window leaves out the spans that start in it, counted as
// filtered by their reason, and a bad window is a usage error that says
// what it wants.
func TestExcludeWindow(t *testing.T) {
	samples, err := filepath.Abs("../../samples/seed-chain/spans.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	args := []string{"analyze", "-q", "--format", "json", "--exclude-window", "2026-03-02T10:01:00Z/2026-03-02T10:02:00Z", samples}
	if code := run(args, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep struct {
		Read     int64            `json:"read"`
		Spans    int64            `json:"spans"`
		Filtered int64            `json:"filtered"`
		ByReason map[string]int64 `json:"filtered_by_reason"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Filtered == 0 || rep.ByReason["in an --exclude-window"] != rep.Filtered || rep.Read != rep.Spans+rep.Filtered {
		t.Errorf("read %d, spans %d, filtered %d %v: want the window's spans filtered and counted", rep.Read, rep.Spans, rep.Filtered, rep.ByReason)
	}
	for _, bad := range []string{"2026-03-02T10:01:00Z", "2026-03-02T10:02:00Z/2026-03-02T10:01:00Z", "x/y"} {
		errb.Reset()
		if code := run([]string{"analyze", "--exclude-window", bad, samples}, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), "--exclude-window") {
			t.Errorf("--exclude-window %q: exit %d, %q; want a usage error naming the flag", bad, code, errb.String())
		}
	}
}

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/source/sourcetest"
)

// The Unix epoch is a time like any other, not "no bound": --until
// 1970-01-01T00:00:00Z keeps no span of 2026, and a live window that ends
// at the epoch is one hour, fetched in a dozen slices (it was taken for
// unset: every span kept, a 56-year fetch).
func TestEpochIsATime(t *testing.T) {
	_, _, code := runCode(t, "analyze", "-q", "--until", "1970-01-01T00:00:00Z", "../../samples/seed-chain/spans.jsonl")
	if code == 0 {
		t.Error("--until 1970-01-01T00:00:00Z kept spans of 2026")
	}
	traces := sourcetest.Gen(3, 20, fetchT0, 10*time.Minute)
	srv := sourcetest.Jaeger(t, traces, true)
	url := "jaeger://" + strings.TrimPrefix(srv.URL, "http://")
	runCode(t, "analyze", "-q", "--since", "1969-12-31T23:00:00Z", "--until", "1970-01-01T00:00:00Z", url)
	if n := srv.Requests.Load(); n > 100 {
		t.Errorf("an hour's window ending at the epoch took %d requests", n)
	}
}

// runCode runs the command and returns its output and exit code.
func runCode(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb strings.Builder
	code = run(args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// Tests of --max-spill, the bound on a Parquet input's temporary copy.

package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest"
)

// A Parquet input from stdin is copied to a temporary file (Parquet needs
// random access); --max-spill bounds that copy, the error names the flag,
// and nothing is left behind.
func TestMaxSpill(t *testing.T) {
	data, err := os.ReadFile("../../ingest/testdata/tempo-vparquet4.parquet")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"analyze", "--max-spill", "0", "-"}, bytes.NewReader(data), &stdout, &stderr); code != exitUsage {
		t.Errorf("--max-spill 0: exit %d, want %d", code, exitUsage)
	}
	stderr.Reset()
	code := run([]string{"analyze", "-q", "--max-spill", "100", "-"}, bytes.NewReader(data), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "--max-spill") {
		t.Errorf("a spill over --max-spill: exit %d, stderr %q; want 1 and the flag named", code, stderr.String())
	}
	if left := ingest.TempFiles.Paths(); len(left) != 0 {
		t.Errorf("temporary files left registered: %v", left)
	}
	stderr.Reset()
	if code := run([]string{"analyze", "-q", "-"}, bytes.NewReader(data), &stdout, &stderr); code != 0 {
		t.Errorf("within the default limit: exit %d: %s", code, stderr.String())
	}
}

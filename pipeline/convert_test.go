package pipeline

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/option"
)

// Convert writes every span in the flat schema, which reads back to the
// same spans; with Strict a skipped record refuses the output.
func TestConvert(t *testing.T) {
	const path = "../samples/seed-chain/spans.jsonl"
	var out bytes.Buffer
	st, err := Convert([]string{path}, ingest.Options{}, &out, ConvertOptions{Format: "jsonl", Name: "stdout"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Used != 600 || strings.Count(out.String(), "\n") != 600 {
		t.Fatalf("%d spans used, %d lines written; want 600", st.Used, strings.Count(out.String(), "\n"))
	}
	back, err := Read([]string{writeFile(t, "back.jsonl", out.Bytes())}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if back.Stats.Used != 600 || len(back.Requests) != 200 {
		t.Errorf("read back %d spans, %d requests", back.Stats.Used, len(back.Requests))
	}
	bad := writeFile(t, "bad.jsonl", append(out.Bytes(), "{not json\n"...))
	var refused bytes.Buffer
	_, err = Convert([]string{bad}, ingest.Options{Names: func(o option.Option) string { return "<" + o.String() + ">" }}, &refused, ConvertOptions{Format: "jsonl", Name: "x", Strict: true})
	if err == nil || !strings.HasPrefix(err.Error(), "<Strict>: 1 of 601 records skipped; nothing written\n  ") {
		t.Errorf("strict convert of a bad record: %v", err)
	}
	if _, err := Convert([]string{bad}, ingest.Options{}, &refused, ConvertOptions{Format: "jsonl"}); err != nil {
		t.Errorf("a skipped record without Strict: %v", err)
	}
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

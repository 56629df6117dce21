package ingest

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/internal/realdata"
	"github.com/tailscope/tailscope/option"
)

// FuzzSniff checks the format sniffer and then the whole auto-detecting
// reader on arbitrary bytes. Sniff must never panic, must name a known
// format or say what it saw and how to override it, must not consume what
// it looked at, and must be deterministic. Then reading the same bytes with
// --input auto must hold the reader's promises (see checkRead), whichever
// decoder the sniffer chose: this is what a user's odd file meets first.
//
// Seeds: the start of every format, and testdata/fuzz/FuzzSniff.
func FuzzSniff(f *testing.F) {
	seeds := []string{
		"",
		"\xef\xbb\xbf{\"hop\":\"a\",\"duration_ms\":1}\n",
		`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"s"}}]},"scopeSpans":[{"spans":[{"traceId":"01","spanId":"02","name":"n","kind":2,"startTimeUnixNano":"1","endTimeUnixNano":"5","status":{"code":2}}]}]}]}`,
		`{"data":[{"traceID":"t","spans":[{"traceID":"t","spanID":"s","operationName":"op","startTime":1,"duration":2,"processID":"p1","tags":[{"key":"error","value":true}]}],"processes":{"p1":{"serviceName":"svc"}}}]}`,
		`[{"traceId":"t","id":"s","name":"get","timestamp":1,"duration":3,"localEndpoint":{"serviceName":"a"},"tags":{"error":""}}]`,
		`[[{"traceId":"t","id":"s","duration":3}]]`,
		`[{"resourceSpans":[]}]`,
		`[{"traceID":"t","spans":[]}]`,
		"trace_id,span_id,hop,duration_ms\nt,s,h,1\n",
		"PAR1\x00\x00",
		"ARROW1\x00\x00",
		"\xff\xff\xff\xff\x10\x00",
		"\x1f\x8b\x08\x00",
		"\x28\xb5\x2f\xfd\x00",
		"hello world\n",
		"{\"result\":{\"resourceSpans\":[",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	for _, p := range []string{"../samples/seed-chain/spans.jsonl", "testdata/tempo-vparquet4.parquet"} {
		if b, err := os.ReadFile(p); err == nil && len(b) < 1<<16 {
			f.Add(b)
		}
	}
	// Real trace files (testdata/real's, and ../shared/data's with
	// TAILSCOPE_REALDATA=full): only their first kilobytes, which is what the sniffer reads.
	for _, root := range realdata.Roots(f) {
		files, _ := filepath.Glob(filepath.Join(root, "*", "*.json"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b[:min(len(b), 2048)])
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(data), 1<<16)
		format, err := Sniff(br)
		if err != nil {
			msg := err.Error()
			if format != "" || !strings.Contains(msg, "with "+option.Input.String()) {
				t.Fatalf("unknown format must name the Input option: %q (format %q)", msg, format)
			}
		} else if decoders[format] == nil {
			t.Fatalf("sniffed %q, which has no decoder", format)
		}
		rest, _ := io.ReadAll(br)
		if !bytes.Equal(rest, data) {
			t.Fatalf("Sniff consumed input: %d of %d bytes left", len(rest), len(data))
		}
		again, err2 := Sniff(bufio.NewReaderSize(bytes.NewReader(data), 1<<16))
		if again != format || (err == nil) != (err2 == nil) {
			t.Fatalf("not deterministic: %q/%v then %q/%v", format, err, again, err2)
		}
		// Compressed input is sniffed after decompression, so the reader
		// runs whatever Sniff said of the raw bytes.
		checkRead(t, data, record.Options{Format: "auto", MaxRecord: 1 << 16})
	})
}

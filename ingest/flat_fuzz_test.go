package ingest

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// checkRead reads data as one input and checks what every reader owes its
// caller whatever the bytes: no panic, no hang, read = used + skipped with
// the reasons summing to skipped, and every span handed on already valid
// (duration and start ≥ 0, an end that does not overflow, a hop, text in
// valid UTF-8).
func checkRead(t *testing.T, data []byte, opt record.Options) *record.Stats {
	t.Helper()
	var used int64
	st, err := ReadStream("fuzz", bytes.NewReader(data), opt, SinkFunc(func(sp *span.Span) {
		used++
		if sp.Duration < 0 || sp.Start < 0 || sp.Start+sp.Duration < sp.Start {
			t.Fatalf("invalid span emitted: start %d duration %d", sp.Start, sp.Duration)
		}
		if sp.Hop == "" {
			t.Fatal("span emitted without a hop")
		}
		if !utf8.ValidString(sp.Hop) || !utf8.ValidString(sp.Service) || !utf8.ValidString(sp.Name) {
			t.Fatalf("invalid UTF-8 in a name: %q %q %q", sp.Hop, sp.Service, sp.Name)
		}
		if sp.Weight < 0 || sp.Weight != sp.Weight {
			t.Fatalf("bad weight %v", sp.Weight)
		}
		checkAttrs(t, sp)
	}))
	if st == nil {
		t.Fatalf("nil stats (err %v)", err)
	}
	if st.Used != used {
		t.Fatalf("stats say %d used, %d emitted", st.Used, used)
	}
	if st.Read != st.Used+st.Skipped+st.Filtered {
		t.Fatalf("read %d != used %d + skipped %d", st.Read, st.Used, st.Skipped)
	}
	var sum int64
	for r, n := range st.SkippedByReason {
		if r == "" || n <= 0 {
			t.Fatalf("bad reason entry %q: %d", r, n)
		}
		sum += n
	}
	if sum != st.Skipped {
		t.Fatalf("skipped %d, reasons sum to %d: %v", st.Skipped, sum, st.SkippedByReason)
	}
	for _, e := range st.Errors {
		if msg := e.Error(); !utf8.ValidString(msg) || len(e.Detail) > 4*record.MaxDetail {
			t.Fatalf("skip message not bounded valid text: %q", msg)
		}
	}
	return st
}

// FuzzFlat is the flat JSON-lines decoder on arbitrary bytes, with a small
// --max-record so that the too-long path is reached. Seeds: a few lines of
// every shape the decoder knows, the seed sample's first lines, and
// testdata/fuzz/FuzzFlat (inputs the fuzzer found).
func FuzzFlat(f *testing.F) {
	seeds := []string{
		`{"trace_id":"t","span_id":"a","hop":"h","start":1,"duration_ms":1.5,"status":"ok"}`,
		`{"trace_id":"t","span_id":"b","parent_id":"a","service":"s","name":"n","kind":"SPAN_KIND_CLIENT","start":"2026-01-02T03:04:05Z","end":"2026-01-02T03:04:06Z","status":"timeout","code":"DEADLINE_EXCEEDED","attempt":2,"timeout_ms":3000,"weight":2}`,
		`{"hop":"h","duration":"fast"}`,
		`{"hop":"h","duration_us":-1}` + "\n" + `{"hop":"h","duration_ns":1e400}`,
		`{"hop":"h","start_ms":9223372036854775807,"duration":"1s"}`,
		`{"attributes":{"hop":"x","duration_ms":2,"attributes":{"hop":"y"}},"error":"boom","error.type":"timeout"}`,
		`{"hop":"h\u00e9\ud800","duration":"1s","http.request.resend_count":0}`,
		"{\"hop\":\"\xff\",\"duration\":1}\r\n\n{\"hop\":",
		`{"hop":"h","duration":1} trailing`,
		`[1,2,3]`,
		`{"hop":{"a":[[[[[]]]]]},"duration":1}`,
		// Attributes: extra fields, attribute and resource objects.
		`{"hop":"h","duration_ms":1,"pod":"p","n":1.5,"ok":true,"attributes":{"a":{"b":{"c":"d"}},"code":500},"resource":{"attributes":{"host.name":"x"}}}`,
		// Wild codes and attempt numbers, optional values not understood,
		// a byte order mark.
		"\xef\xbb\xbf" + `{"hop":"h","duration_ms":1,"code":"ECONNRESET","attempt":0,"status":"UNAVAILABLE"}` + "\n" +
			`{"hop":"h","duration_ms":1,"code":"deadline exceeded","grpc-previous-rpc-attempts":"x","weight":-1,"start":"soon","code_text":"EPIPE"}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), false)
	}
	if b, err := os.ReadFile("../samples/seed-chain/spans.jsonl"); err == nil {
		lines := strings.SplitAfter(string(b), "\n")
		f.Add([]byte(strings.Join(lines[:min(len(lines), 8)], "")), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, attr bool) {
		opt := record.Options{Format: "jsonl", MaxRecord: 4096}
		if attr {
			opt.HopBy = "attr:name"
		}
		checkRead(t, data, opt)
	})
}

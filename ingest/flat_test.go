package ingest

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/span"
)

func readString(t *testing.T, in string, opt record.Options) ([]span.Span, *record.Stats) {
	t.Helper()
	var out []span.Span
	st, err := ReadStream("in.jsonl", strings.NewReader(in), opt, SinkFunc(func(s *span.Span) { out = append(out, *s) }))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if st.Read != st.Used+st.Skipped+st.Filtered {
		t.Fatalf("read %d != used %d + skipped %d", st.Read, st.Used, st.Skipped)
	}
	var sum int64
	for _, n := range st.SkippedByReason {
		sum += n
	}
	if sum != st.Skipped {
		t.Fatalf("skipped %d but reasons sum to %d", st.Skipped, sum)
	}
	return out, st
}

func TestFlatFields(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	tests := []struct {
		name string
		line string
		want span.Span
	}{
		{"duration_ms and ns start",
			`{"trace_id":"t1","span_id":"s1","hop":"db","start":1772445600000000000,"duration_ms":12.5,"status":"ok"}`,
			span.Span{TraceID: "t1", SpanID: "s1", Hop: "db", Start: t0, Duration: 12_500_000, Status: span.OK}},
		{"duration_us",
			`{"hop":"db","duration_us":1500}`,
			span.Span{Hop: "db", Duration: 1_500_000}},
		{"duration_ns",
			`{"hop":"db","duration_ns":7}`,
			span.Span{Hop: "db", Duration: 7}},
		{"Go duration string and RFC 3339 start",
			`{"hop":"db","duration":"1.5s","start":"2026-03-02T10:00:00Z"}`,
			span.Span{Hop: "db", Duration: 1_500_000_000, Start: t0}},
		{"end instead of duration",
			`{"hop":"db","start":100,"end":350}`,
			span.Span{Hop: "db", Start: 100, Duration: 250}},
		{"timeout flag makes an error",
			`{"hop":"db","duration_ms":3000,"timeout":true,"attempt":2,"timeout_ms":3000}`,
			span.Span{Hop: "db", Duration: 3e9, Status: span.Error, Timeout: true, Attempt: 2, AttemptSet: true, TimeoutInForce: 3e9}},
		{"HTTP 504 status is a timeout",
			`{"hop":"db","duration_ms":1,"status":504}`,
			span.Span{Hop: "db", Duration: 1e6, Status: span.Error, Timeout: true, Code: 504}},
		{"OTel status spelling",
			`{"hop":"db","duration_ms":1,"status":"STATUS_CODE_ERROR"}`,
			span.Span{Hop: "db", Duration: 1e6, Status: span.Error}},
		{"gRPC DEADLINE_EXCEEDED code",
			`{"hop":"db","duration_ms":1,"code":"DEADLINE_EXCEEDED"}`,
			span.Span{Hop: "db", Duration: 1e6, Status: span.Error, Timeout: true, Code: 4}},
		{"nested attributes and resend count",
			`{"hop":"db","duration_ms":1,"attributes":{"http.request.resend_count":1,"error.type":"timeout"}}`,
			span.Span{Hop: "db", Duration: 1e6, Status: span.Error, Timeout: true, Attempt: 2, AttemptSet: true, CodeText: "timeout",
				Attrs: []span.Attr{{Key: "http.request.resend_count", Value: "1"}, {Key: "error.type", Value: "timeout"}}}},
		{"hop falls back to service and name",
			`{"service":"api","name":"GET /x","kind":"SPAN_KIND_CLIENT","duration_ms":1}`,
			span.Span{Service: "api", Name: "GET /x", Kind: "client", Hop: "api GET /x (client)", Duration: 1e6}},
		{"escaped strings",
			`{"hop":"d\u00e9j\u00e0 \"vu\"","duration_ms":1}`,
			span.Span{Hop: `déjà "vu"`, Duration: 1e6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, st := readString(t, tc.line+"\n", record.Options{})
			if st.Skipped != 0 || len(got) != 1 {
				t.Fatalf("skipped %d (%v), got %d spans", st.Skipped, st.Errors, len(got))
			}
			tc.want.Weight = 1
			if !reflect.DeepEqual(got[0], tc.want) {
				t.Errorf("got  %+v\nwant %+v", got[0], tc.want)
			}
		})
	}
}

func TestFlatBadRecords(t *testing.T) {
	in := strings.Join([]string{
		`{"hop":"db","duration_ms":1}`,
		`{"hop":"db","duration":"fast"}`,
		`{"hop":"db"}`,
		`{"hop":"db","duration_ms":-5}`,
		`not json`,
		``,
		`{"hop":"db","duration_ms":1e400}`,
		`{"hop":"db","start":500,"end":100}`,
		`{"duration_ms":3}`,
		`{"hop":"db","duration_ms":1} trailing`,
		`{"hop":"db","duration_ms":{"x":1}}`,
		`{"hop":"db","duration_ms":2}`,
	}, "\n")
	got, st := readString(t, in, record.Options{})
	if len(got) != 2 || st.Used != 2 {
		t.Fatalf("used %d, want 2", st.Used)
	}
	want := map[string]int64{"bad value": 3, "missing duration": 1, "negative duration": 1, "bad JSON": 2, "end before start": 1, record.ReasonNoHop: 1}
	for r, n := range want {
		if st.SkippedByReason[r] != n {
			t.Errorf("reason %q: %d, want %d (all: %v)", r, st.SkippedByReason[r], n, st.SkippedByReason)
		}
	}
	if st.Read != 11 {
		t.Errorf("read %d, want 11 (blank lines are not records)", st.Read)
	}
	if e := st.Errors[0].Error(); e != `in.jsonl:2: bad value: bad duration "fast": want a Go duration like 1.5s or integer nanoseconds` {
		t.Errorf("first error: %s", e)
	}
}

func TestFlatLongLine(t *testing.T) {
	long := `{"hop":"db","duration_ms":1,"pad":"` + strings.Repeat("x", 5000) + `"}`
	in := `{"hop":"a","duration_ms":1}` + "\n" + long + "\n" + `{"hop":"b","duration_ms":1}` + "\n"
	got, st := readString(t, in, record.Options{MaxRecord: 1000})
	if len(got) != 2 || st.SkippedByReason["record too long"] != 1 {
		t.Fatalf("got %d spans, skipped %v", len(got), st.SkippedByReason)
	}
	if st.Errors[0].Line != 2 || got[1].Hop != "b" {
		t.Errorf("error at line %d, second span %q", st.Errors[0].Line, got[1].Hop)
	}
}

func TestMap(t *testing.T) {
	m, err := ParseMap([]string{"hop=operation,duration_ms=took"})
	if err != nil {
		t.Fatal(err)
	}
	got, st := readString(t, `{"operation":"db","took":4,"hop":"ignored"}`+"\n", record.Options{Map: m})
	if st.Skipped != 0 || got[0].Hop != "db" || got[0].Duration != 4e6 {
		t.Fatalf("got %+v (%v)", got, st.Errors)
	}
	if _, err := ParseMap([]string{"hopp=x"}); err == nil || !strings.Contains(err.Error(), `unknown field "hopp"`) {
		t.Errorf("bad field accepted: %v", err)
	}
}

func TestFilters(t *testing.T) {
	in := `{"hop":"a","start":100,"duration_ms":1}
{"hop":"b","start":200,"duration_ms":1}
{"hop":"c","start":300,"duration_ms":1}
`
	got, st := readString(t, in, record.Options{Since: 150, Until: 300})
	// Filtered, not skipped: counted by reason, never listed.
	if len(got) != 1 || got[0].Hop != "b" || st.FilteredByReason[record.ReasonOutsideWindow] != 2 || st.Filtered != 2 ||
		st.Skipped != 0 || len(st.Errors) != 0 || st.Read != 3 {
		t.Fatalf("got %v, filtered %v, skipped %v", got, st.FilteredByReason, st.SkippedByReason)
	}
}

// Files, directories, globs, gzip and zstd all read the same spans.
func TestSources(t *testing.T) {
	dir := t.TempDir()
	plain := `{"hop":"a","duration_ms":1}` + "\n" + `{"hop":"b","duration_ms":2}` + "\n"
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("1.jsonl", []byte(plain))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(plain))
	zw.Close()
	write("2.jsonl.gz", gz.Bytes())
	enc, _ := zstd.NewWriter(nil)
	write("3.log.zst", enc.EncodeAll([]byte(plain), nil))
	write(".hidden", []byte("garbage"))

	for _, paths := range [][]string{{dir}, {filepath.Join(dir, "*")}} {
		var n int
		st, err := Read(paths, record.Options{}, SinkFunc(func(*span.Span) { n++ }))
		if err != nil {
			t.Fatal(err)
		}
		if n != 6 || len(st.Files) != 3 {
			t.Errorf("%v: %d spans from %v", paths, n, st.Files)
		}
	}
	var n int
	if _, err := Read([]string{"-"}, record.Options{Stdin: strings.NewReader(plain)}, SinkFunc(func(*span.Span) { n++ })); err != nil || n != 2 {
		t.Errorf("stdin: %d spans, %v", n, err)
	}
	if _, err := Read([]string{filepath.Join(dir, "nope")}, record.Options{}, SinkFunc(func(*span.Span) {})); err == nil {
		t.Error("missing file: no error")
	}
	// A truncated gzip file is an error naming the file, not a silent loss.
	write("bad.gz", gz.Bytes()[:gz.Len()-6])
	_, err := Read([]string{filepath.Join(dir, "bad.gz")}, record.Options{}, SinkFunc(func(*span.Span) {}))
	if err == nil || !strings.Contains(err.Error(), "bad.gz") {
		t.Errorf("truncated gzip: %v", err)
	}
}

// angled names each option <Name>, so that a test sees the message ask
// its caller's Names (the CLI's spell flags).
func angled(o option.Option) string { return "<" + o.String() + ">" }

func TestSniffUnknown(t *testing.T) {
	_, err := ReadStream("x.bin", strings.NewReader("\x00\x01\x02garbage"), record.Options{Names: angled}, SinkFunc(func(*span.Span) {}))
	if err == nil || !strings.Contains(err.Error(), "name it with <Input>") {
		t.Errorf("unknown format: %v", err)
	}
	_, err = Read([]string{"x"}, record.Options{Format: "yaml", Names: angled}, SinkFunc(func(*span.Span) {}))
	if err == nil || !strings.Contains(err.Error(), "unknown <Input> \"yaml\"") {
		t.Errorf("unknown format named: %v", err)
	}
}

// TestMessagesNameOptions: the readers' skip details name the setting to
// change by the caller's Names — a span without its hop's field names
// HopBy, a trace record over the limit names MaxRecord.
func TestMessagesNameOptions(t *testing.T) {
	details := func(in string, opt record.Options) string {
		t.Helper()
		opt.Names = angled
		st, err := ReadStream("x", strings.NewReader(in), opt, SinkFunc(func(*span.Span) {}))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, e := range st.Errors {
			b.WriteString(e.Detail + "\n")
		}
		return b.String()
	}
	if d := details(`{"trace_id":"a","span_id":"1","start":1,"end":2}`+"\n", record.Options{HopBy: "peer"}); !strings.Contains(d, "(see <HopBy>)") {
		t.Errorf("a span without its hop: %q", d)
	}
	big := `[{"traceId":"1","id":"1","name":"a","duration":5},` + "\n" + `{"traceId":"1","id":"2","name":"` + strings.Repeat("x", 4096) + `","duration":5}]`
	if d := details(big, record.Options{Format: "zipkin", MaxRecord: 1024}); !strings.Contains(d, "(raise with <MaxRecord>)") {
		t.Errorf("a record over the limit: %q", d)
	}
}

// TestFlatMessagesNameOptions: the flat readers' messages name Map and
// MaxRecord by the caller's Names (architecture III, item 6): a record
// over the limit in JSON lines and CSV, a CSV header without a duration,
// a mapped key no record has.
func TestFlatMessagesNameOptions(t *testing.T) {
	read := func(name, in string, opt record.Options) (*Stats, error) {
		t.Helper()
		opt.Names = angled
		return ReadStream(name, strings.NewReader(in), opt, SinkFunc(func(*span.Span) {}))
	}
	details := func(st *Stats) string {
		var b strings.Builder
		for _, e := range st.Errors {
			b.WriteString(e.Detail + "\n")
		}
		return b.String()
	}
	line := `{"trace_id":"a","span_id":"1","hop":"h","duration_ms":1}` + "\n"
	long := `{"trace_id":"a","span_id":"2","hop":"` + strings.Repeat("x", 2048) + `","duration_ms":1}` + "\n"
	st, err := read("x.jsonl", line+long+line, record.Options{MaxRecord: 1024})
	if err != nil || !strings.Contains(details(st), "over 1024 bytes (raise with <MaxRecord>)") {
		t.Errorf("a JSON line over the limit: %v %q", err, details(st))
	}
	csvHead := "trace_id,span_id,hop,duration_ms\n"
	st, err = read("x.csv", csvHead+"a,1,h,1\na,2,"+strings.Repeat("x", 2048)+",1\na,3,h,1\n", record.Options{Format: "csv", MaxRecord: 1024})
	if err != nil || !strings.Contains(details(st), "(raise with <MaxRecord>)") {
		t.Errorf("a CSV record over the limit: %v %q", err, details(st))
	}
	_, err = read("x.csv", "trace_id,span_id,hop\na,1,h\n", record.Options{Format: "csv"})
	if err == nil || !strings.Contains(err.Error(), "name one with <Map>, e.g. <Map> duration_ms=COLUMN") {
		t.Errorf("a CSV header without a duration: %v", err)
	}
	st, err = read("x.jsonl", line, record.Options{Map: map[string]string{"service": "svc"}})
	if err != nil || len(st.Unmapped) != 1 || st.Unmapped[0] != "x.jsonl: <Map> service=svc" || !slices.ContainsFunc(st.Notes, func(n string) bool { return strings.HasPrefix(n, "x.jsonl: <Map> service=svc: no record has the key") }) {
		t.Errorf("a mapped key no record has: %v %q %q", err, st.Unmapped, st.Notes)
	}
}

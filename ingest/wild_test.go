package ingest

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/tailscope/tailscope/ingest/internal/pool"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// Logs as they are in the wild: attempt numbers that count from
// 0 or from 1 or count earlier tries, and status codes that are not
// numbers. Every reader must give the same spans for the same facts.

// wildRow is one span of the wild table: a hop, a duration in ms, and the
// optional facts under test ("" or -1 when absent).
type wildRow struct {
	hop     string
	ms      float64
	status  string
	code    string // as the log writes it: 503, ECONNRESET, unavailable…
	attempt int    // -1: absent
	resend  int    // a count of earlier tries; -1: absent
}

// wildWant is what every reader must make of a wildRow.
type wildWant struct {
	status     span.Status
	timeout    bool
	code       int
	codeText   string
	attempt    int
	attemptSet bool
}

var wildCases = []struct {
	row  wildRow
	want wildWant
}{
	// Explicit 0 is an attempt number, not "none".
	{wildRow{"a", 1, "error", "503", 0, -1}, wildWant{status: span.Error, code: 503, attempt: 0, attemptSet: true}},
	{wildRow{"a", 2, "ok", "200", 1, -1}, wildWant{status: span.OK, code: 200, attempt: 1, attemptSet: true}},
	{wildRow{"a", 3, "ok", "", 2, -1}, wildWant{status: span.OK, attempt: 2, attemptSet: true}},
	// Counts of earlier tries: attempt = count + 1.
	{wildRow{"b", 4, "ok", "", -1, 0}, wildWant{status: span.OK, attempt: 1, attemptSet: true}},
	{wildRow{"b", 5, "ok", "", -1, 2}, wildWant{status: span.OK, attempt: 3, attemptSet: true}},
	// No number: none.
	{wildRow{"b", 6, "ok", "", -1, -1}, wildWant{status: span.OK}},
	// Codes that are not numbers never cost the span.
	{wildRow{"c", 7, "error", "ECONNRESET", -1, -1}, wildWant{status: span.Error, codeText: "ECONNRESET"}},
	{wildRow{"c", 8, "error", "EPIPE", -1, -1}, wildWant{status: span.Error, codeText: "EPIPE"}},
	{wildRow{"c", 9, "error", "connection reset", -1, -1}, wildWant{status: span.Error, codeText: "connection reset"}},
	{wildRow{"c", 10, "error", "ETIMEDOUT", -1, -1}, wildWant{status: span.Error, timeout: true, codeText: "ETIMEDOUT"}},
	{wildRow{"c", 11, "", "UNAVAILABLE", -1, -1}, wildWant{status: span.Error, code: 14}},
	{wildRow{"c", 12, "error", "unavailable", -1, -1}, wildWant{status: span.Error, code: 14}},
	{wildRow{"c", 13, "error", "Unavailable", -1, -1}, wildWant{status: span.Error, code: 14}},
	{wildRow{"c", 14, "error", "resource_exhausted", -1, -1}, wildWant{status: span.Error, code: 8}},
	{wildRow{"c", 15, "", "DeadlineExceeded", -1, -1}, wildWant{status: span.Error, timeout: true, code: 4}},
	{wildRow{"c", 16, "error", "deadline exceeded", -1, -1}, wildWant{status: span.Error, timeout: true, code: 4}},
	{wildRow{"c", 17, "error", "timed out", -1, -1}, wildWant{status: span.Error, timeout: true, codeText: "timed out"}},
	{wildRow{"c", 18, "", "504", -1, -1}, wildWant{status: span.Error, timeout: true, code: 504}},
	{wildRow{"c", 19, "", "ECONNREFUSED", -1, -1}, wildWant{status: span.Error, codeText: "ECONNREFUSED"}},
	// The outcome comes from the status when there is one.
	{wildRow{"c", 20, "ok", "EAGAIN", -1, -1}, wildWant{status: span.OK, codeText: "EAGAIN"}},
	// A status that is an error kind.
	{wildRow{"c", 21, "ECONNRESET", "", -1, -1}, wildWant{status: span.Error, codeText: "ECONNRESET"}},
	{wildRow{"c", 22, "UNAVAILABLE", "", -1, -1}, wildWant{status: span.Error, code: 14}},
	// An HTTP status as a word among words.
	{wildRow{"c", 23, "", "503 Service Unavailable", -1, -1}, wildWant{status: span.Error, code: 503}},
	{wildRow{"c", 24, "error", "HTTP/1.1 504", -1, -1}, wildWant{status: span.Error, timeout: true, code: 504}},
	{wildRow{"c", 25, "", "StatusCode.RESOURCE_EXHAUSTED", -1, -1}, wildWant{status: span.Error, code: 8}},
	{wildRow{"c", 26, "error", "Connection refused", -1, -1}, wildWant{status: span.Error, codeText: "Connection refused"}},
	{wildRow{"c", 27, "cancelled", "", -1, -1}, wildWant{status: span.Error, code: 1}},
}

func (w wildWant) check(t *testing.T, what string, sp span.Span, row wildRow) {
	t.Helper()
	got := wildWant{sp.Status, sp.Timeout, sp.Code, sp.CodeText, sp.Attempt, sp.AttemptSet}
	if got != w || sp.Hop != row.hop || sp.Duration != int64(row.ms*1e6) {
		t.Errorf("%s: row %+v:\n got %+v (hop %q, %d ns)\nwant %+v", what, row, got, sp.Hop, sp.Duration, w)
	}
}

func wildJSONL(escape bool) string {
	var b strings.Builder
	for _, c := range wildCases {
		r := c.row
		fmt.Fprintf(&b, `{"hop":%q,"duration_ms":%g`, r.hop, r.ms)
		if escape {
			b.WriteString(`,"name":"x\u0079"`) // an escape: the general path
		}
		if r.status != "" {
			fmt.Fprintf(&b, `,"status":%q`, r.status)
		}
		if r.code != "" {
			if _, err := strconv.Atoi(r.code); err == nil {
				fmt.Fprintf(&b, `,"code":%s`, r.code)
			} else {
				fmt.Fprintf(&b, `,"code":%q`, r.code)
			}
		}
		if r.attempt >= 0 {
			fmt.Fprintf(&b, `,"attempt":%d`, r.attempt)
		}
		if r.resend >= 0 {
			fmt.Fprintf(&b, `,"http.request.resend_count":%d`, r.resend)
		}
		b.WriteString("}\n")
	}
	return b.String()
}

func wildCSV(sep string) string {
	var b strings.Builder
	b.WriteString(strings.Join([]string{"hop", "duration_ms", "status", "code", "attempt", "grpc-previous-rpc-attempts"}, sep) + "\n")
	opt := func(n int) string {
		if n < 0 {
			return ""
		}
		return fmt.Sprint(n)
	}
	for _, c := range wildCases {
		r := c.row
		b.WriteString(strings.Join([]string{r.hop, fmt.Sprint(r.ms), r.status, r.code, opt(r.attempt), opt(r.resend)}, sep) + "\n")
	}
	return b.String()
}

type wildPQRow struct {
	Hop     string  `parquet:"hop,dict"`
	Ms      float64 `parquet:"duration_ms"`
	Status  *string `parquet:"status,optional"`
	Code    *string `parquet:"code,optional,dict"`
	Attempt *int32  `parquet:"attempt,optional"`
	Resend  *int64  `parquet:"http.request.resend_count,optional"`
}

func wildParquet(t *testing.T) []byte {
	var rows []wildPQRow
	for _, c := range wildCases {
		r := c.row
		w := wildPQRow{Hop: r.hop, Ms: r.ms}
		if r.status != "" {
			w.Status = &r.status
		}
		if r.code != "" {
			w.Code = &r.code
		}
		if r.attempt >= 0 {
			a := int32(r.attempt)
			w.Attempt = &a
		}
		if r.resend >= 0 {
			n := int64(r.resend)
			w.Resend = &n
		}
		rows = append(rows, w)
	}
	return writeParquet(t, rows)
}

func wildArrow(t *testing.T) []byte {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "hop", Type: arrow.BinaryTypes.String},
		{Name: "duration_ms", Type: arrow.PrimitiveTypes.Float64},
		{Name: "status", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "code", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "attempt", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "http.request.resend_count", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	var buf bytes.Buffer
	fw, err := ipc.NewFileWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, c := range wildCases {
		r := c.row
		f := b.Fields()
		f[0].(*array.StringBuilder).Append(r.hop)
		f[1].(*array.Float64Builder).Append(r.ms)
		for i, s := range []string{r.status, r.code} {
			if s == "" {
				f[2+i].AppendNull()
			} else {
				f[2+i].(*array.StringBuilder).Append(s)
			}
		}
		if r.attempt < 0 {
			f[4].AppendNull()
		} else {
			f[4].(*array.Int64Builder).Append(int64(r.attempt))
		}
		if r.resend < 0 {
			f[5].AppendNull()
		} else {
			f[5].(*array.Int32Builder).Append(int32(r.resend))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// wildAttrs are the trace-format attributes of a row: the code goes to
// rpc.grpc.status_code (where gRPC names are read) unless it is an HTTP
// number, the status to otel.status_code or error when it says so.
func wildAttrs(r wildRow) [][2]string {
	var a [][2]string
	if r.code != "" {
		key := "rpc.grpc.status_code"
		if len(r.code) == 3 && r.code[0] >= '1' && r.code[0] <= '5' {
			key = "http.status_code"
		}
		a = append(a, [2]string{key, r.code})
	}
	switch r.status {
	case "ok":
		a = append(a, [2]string{"otel.status_code", "OK"})
	case "error":
		a = append(a, [2]string{"otel.status_code", "ERROR"})
	case "":
	default: // a status that is an error kind: the code says it
		a = append(a, [2]string{"rpc.grpc.status_code", r.status})
	}
	if r.attempt >= 0 {
		a = append(a, [2]string{"retry.attempt", fmt.Sprint(r.attempt)})
	}
	if r.resend >= 0 {
		a = append(a, [2]string{"http.request.resend_count", fmt.Sprint(r.resend)})
	}
	return a
}

func wildOTLP() string {
	var spans []string
	for i, c := range wildCases {
		r := c.row
		var attrs []string
		for _, kv := range wildAttrs(r) {
			attrs = append(attrs, fmt.Sprintf(`{"key":%q,"value":{"stringValue":%q}}`, kv[0], kv[1]))
		}
		spans = append(spans, fmt.Sprintf(`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"%016x","name":%q,"startTimeUnixNano":"1000000000","endTimeUnixNano":"%d","attributes":[%s]}`,
			i+1, r.hop, 1000000000+int64(r.ms*1e6), strings.Join(attrs, ",")))
	}
	return `{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.Join(spans, ",\n") + `]}]}]}`
}

func wildJaeger() string {
	var spans []string
	for i, c := range wildCases {
		r := c.row
		var tags []string
		for _, kv := range wildAttrs(r) {
			tags = append(tags, fmt.Sprintf(`{"key":%q,"type":"string","value":%q}`, kv[0], kv[1]))
		}
		spans = append(spans, fmt.Sprintf(`{"traceID":"abc","spanID":"%x","operationName":%q,"startTime":1000,"duration":%d,"tags":[%s]}`,
			i+1, r.hop, int64(r.ms*1e3), strings.Join(tags, ",")))
	}
	return `{"data":[{"traceID":"abc","spans":[` + strings.Join(spans, ",\n") + `],"processes":{}}]}`
}

func wildZipkin() string {
	var spans []string
	for i, c := range wildCases {
		r := c.row
		var tags []string
		for _, kv := range wildAttrs(r) {
			tags = append(tags, fmt.Sprintf(`%q:%q`, kv[0], kv[1]))
		}
		spans = append(spans, fmt.Sprintf(`{"traceId":"aa","id":"%x","name":%q,"timestamp":1000,"duration":%d,"tags":{%s}}`,
			i+1, r.hop, int64(r.ms*1e3), strings.Join(tags, ",")))
	}
	return "[" + strings.Join(spans, ",\n") + "]"
}

func TestWildAttemptsAndCodes(t *testing.T) {
	inputs := []struct {
		name, format string
		data         func(t *testing.T) []byte
		hopBy        string
		rowPath      bool
	}{
		{name: "jsonl fast path", data: func(*testing.T) []byte { return []byte(wildJSONL(false)) }},
		{name: "jsonl general path", data: func(*testing.T) []byte { return []byte(wildJSONL(true)) }},
		{name: "csv comma", data: func(*testing.T) []byte { return []byte(wildCSV(",")) }},
		{name: "csv tab", data: func(*testing.T) []byte { return []byte(wildCSV("\t")) }},
		{name: "csv semicolon", data: func(*testing.T) []byte { return []byte(wildCSV(";")) }},
		{name: "parquet batch", data: wildParquet},
		{name: "parquet rows", data: wildParquet, rowPath: true},
		{name: "arrow", data: wildArrow},
		{name: "otlp", data: func(*testing.T) []byte { return []byte(wildOTLP()) }, hopBy: "name"},
		{name: "jaeger", data: func(*testing.T) []byte { return []byte(wildJaeger()) }, hopBy: "name"},
		{name: "zipkin", data: func(*testing.T) []byte { return []byte(wildZipkin()) }, hopBy: "name"},
	}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			spans, st := readBytes(t, "wild", in.data(t), record.Options{HopBy: in.hopBy, Paths: record.Paths{Rows: in.rowPath}})
			if st.Skipped != 0 || st.Ignored != 0 || len(spans) != len(wildCases) {
				t.Fatalf("%d spans, skipped %v %v, ignored %v %v", len(spans), st.SkippedByReason, st.Errors, st.IgnoredByField, st.IgnoredExamples)
			}
			for i, c := range wildCases {
				c.want.check(t, in.name, spans[i], c.row)
			}
		})
	}
}

// An optional field whose value is not understood costs the span only that
// value, in every flat reader; the duration and the hop are required.
func TestWildOptionalValues(t *testing.T) {
	in := `{"hop":"a","duration_ms":1,"attempt":"first"}
{"hop":"a","duration_ms":2,"weight":-3,"timeout_ms":"soon","status":"maybe"}
{"hop":"a","duration_ms":3,"timeout":"perhaps","trace_id":{"x":1},"start":"yesterday"}
{"hop":"a","duration_ms":"long"}
{"hop":{"a":1},"duration_ms":5}
{"hop":"a","start":"yesterday","end":5}
`
	spans, st := readString(t, in, record.Options{})
	if len(spans) != 3 || st.Skipped != 3 || st.SkippedByReason["bad value"] != 3 {
		t.Fatalf("%d spans, skipped %v: %v", len(spans), st.SkippedByReason, st.Errors)
	}
	want := map[string]int64{"attempt": 1, "weight": 1, "timeout_ms": 1, "status": 1, "timeout": 1, "trace_id": 1, "start": 1}
	if fmt.Sprint(st.IgnoredByField) != fmt.Sprint(want) || st.Ignored != 3 {
		t.Errorf("ignored %d %v, want 3 %v", st.Ignored, st.IgnoredByField, want)
	}
	if e := st.IgnoredExamples[0].Error(); e != `in.jsonl:1: attempt: attempt: want a non-negative integer, got "first"` {
		t.Errorf("first example %q", e)
	}
	if spans[1].Weight != 1 || spans[1].Status != span.Unset || spans[2].Start != 0 || spans[2].TraceID != "" {
		t.Errorf("spans %+v", spans)
	}
	if len(st.Notes) != 1 || !strings.Contains(st.Notes[0], "3 spans were kept without a value tailscope could not read (") {
		t.Errorf("notes %q", st.Notes)
	}
}

// Rejecting a line over --max-record costs about --max-record of memory,
// not a multiple of it; a long line within the limit is read whole, and
// the lines around both are read.
func TestLongLineMemory(t *testing.T) {
	const limit = 8 << 20
	short := `{"hop":"a","duration_ms":1}` + "\n"
	long := func(n int) string { return `{"hop":"b","duration_ms":1,"pad":"` + strings.Repeat("x", n) + `"}` + "\n" }
	for _, c := range []struct {
		name      string
		pad       int
		used      int64
		maxAllocs uint64
	}{
		{"rejected", 6 * limit, 2, limit + limit/2},
		{"accepted", limit - 1000, 3, 3 * limit},
	} {
		in := short + long(c.pad) + short
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		st, err := ReadStream("l.jsonl", strings.NewReader(in), record.Options{MaxRecord: limit}, SinkFunc(func(*span.Span) {}))
		runtime.ReadMemStats(&after)
		if err != nil || st.Used != c.used || st.Read != 3 {
			t.Fatalf("%s: used %d of %d, skipped %v, err %v", c.name, st.Used, st.Read, st.SkippedByReason, err)
		}
		// Blocks of ordinary lines are allocated once per worker: leave
		// room for them on top of the line itself.
		blocks := uint64(2*pool.Workers()+2) * uint64(2*record.DefaultBlockSize)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > c.maxAllocs+blocks {
			t.Errorf("%s: a %d MB line with --max-record %d MB allocated %d MB", c.name, c.pad>>20, limit>>20, grew>>20)
		}
	}
}

// A zstd frame made with a long window (zstd --long=30: 1 GiB, over the
// library's default limit) is read; one claiming a window over the bound
// is refused with an error, not decoded.
func TestZstdLongWindow(t *testing.T) {
	content := []byte(`{"hop":"a","duration_ms":1}` + "\n" + `{"hop":"b","duration_ms":2}` + "\n")
	// A frame by hand: magic, a header with only a window descriptor
	// (exponent e: 2^(10+e) bytes), one raw last block.
	frame := func(exp byte) []byte {
		b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, exp << 3}
		h := uint32(len(content))<<3 | 1 // raw, last
		b = append(b, byte(h), byte(h>>8), byte(h>>16))
		return append(b, content...)
	}
	var n int
	st, err := ReadStream("long.jsonl.zst", bytes.NewReader(frame(20)), record.Options{}, SinkFunc(func(*span.Span) { n++ }))
	if err != nil || n != 2 || st.Skipped != 0 {
		t.Errorf("a 1 GiB window: %d spans, err %v", n, err)
	}
	if _, err := ReadStream("huge.jsonl.zst", bytes.NewReader(frame(30)), record.Options{}, SinkFunc(func(*span.Span) {})); err == nil {
		t.Error("a 1 TiB window was accepted")
	}
}

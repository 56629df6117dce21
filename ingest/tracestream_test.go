package ingest

import (
	"bytes"
	"fmt"
	"github.com/tailscope/tailscope/internal/cputime"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/ingest/internal/tracejson"
	"github.com/tailscope/tailscope/span"
)

// Hostile shapes of trace JSON: padding, oversized records,
// documents of another kind, byte order marks, positions.

// padded builds a document of n spans in format, with pad bytes of
// whitespace between every pair of tokens the walker streams over (not
// inside the spans, whose size --max-record bounds).
func padded(format string, n int, pad string) string {
	var spans []string
	for i := range n {
		switch format {
		case "otlp":
			spans = append(spans, fmt.Sprintf(`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"%016x","name":"op","startTimeUnixNano":"1000000000","endTimeUnixNano":"1250000000"}`, i+1))
		case "jaeger":
			// A Jaeger trace is one record: one span per trace here.
			spans = append(spans, fmt.Sprintf(`{"traceID":"%x",%s"spans":%s[{"traceID":"%x","spanID":"1","operationName":"op","startTime":1000,"duration":250,"processID":"p1"}]%s,"processes":{"p1":{"serviceName":"svc"}}}`, i+1, pad, pad, i+1, pad))
		case "zipkin":
			spans = append(spans, fmt.Sprintf(`{"traceId":"aa","id":"%x","name":"op","timestamp":1000,"duration":250,"localEndpoint":{"serviceName":"svc"}}`, i+1))
		}
	}
	body := strings.Join(spans, pad+","+pad)
	switch format {
	case "otlp":
		return pad + `{` + pad + `"resourceSpans"` + pad + `:` + pad + `[` + pad + `{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},` +
			pad + `"scopeSpans"` + pad + `:` + pad + `[` + pad + `{` + pad + `"spans"` + pad + `:` + pad + `[` + pad + body + pad + `]` + pad + `}` + pad + `]` + pad + `}` + pad + `]` + pad + `}` + pad
	case "jaeger":
		return pad + `{` + pad + `"data"` + pad + `:` + pad + `[` + pad + body + pad + `]` + pad + `}` + pad
	}
	return pad + `[` + pad + body + pad + `]` + pad
}

// Whitespace padding between tokens is passed over in linear time and
// costs no memory: 16 times the padding takes about 16 times as long, not
// 256 times (encoding/json rescanned a run of whitespace on every refill).
// The times are compared with each other, measured in the same run, so a
// slow machine does not fail it.
func TestPaddedDocumentsLinear(t *testing.T) {
	for _, format := range []string{"otlp", "jaeger", "zipkin"} {
		t.Run(format, func(t *testing.T) {
			var times []time.Duration
			for _, mb := range []int{1, 4, 16} {
				pad := strings.Repeat(" \n\t ", mb<<20/4/40) // ~40 pads of mb/40 MB
				in := padded(format, 3, pad)
				var best time.Duration
				for run := range 3 {
					start := cputime.Now()
					var n int
					st, err := ReadStream("p.json", strings.NewReader(in), record.Options{Format: format}, SinkFunc(func(*span.Span) { n++ }))
					d := cputime.Since(start)
					if err != nil || n != 3 || st.Skipped != 0 {
						t.Fatalf("%d MB: %d spans, skipped %v %v, err %v", mb, n, st.SkippedByReason, st.Errors, err)
					}
					if run == 0 || d < best {
						best = d
					}
				}
				times = append(times, best)
			}
			// Linear: 16× the input within ~20× the time (with room for
			// a noisy machine on the small run). Each time is the best of
			// three reads: on a loaded machine a single read of the
			// largest input took 50× the smallest's.
			if limit := 20*times[0] + 200*time.Millisecond; times[2] > limit {
				t.Errorf("1, 4, 16 MB of padding took %v: not linear", times)
			}
			// Padding inside a record counts towards --max-record: a
			// Jaeger trace is a record, and is then skipped, counted.
			if format == "jaeger" {
				in := padded(format, 3, strings.Repeat(" ", 1<<20))
				st, err := ReadStream("p.json", strings.NewReader(in), record.Options{Format: format, MaxRecord: 1 << 20}, SinkFunc(func(*span.Span) {}))
				if err != nil || st.SkippedByReason[record.ReasonTooLong] != 3 {
					t.Errorf("padded traces over --max-record: skipped %v, err %v", st.SkippedByReason, err)
				}
			}
		})
	}
}

// A randomized mix of padding, nesting of ignored values and wide arrays
// reads every span at every size, in time that grows with the input, not
// faster: a skip that rescanned what it had passed (quadratic in the depth
// or the padding) would take ~16 times as long per byte at 16 times the
// size. The time per byte is compared between sizes in the same run, the
// best of five reads each, so a slow or busy machine does not fail it.
func TestTraceShapesRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 3))
	perByte := map[int]float64{}
	scales := []int{1, 4, 16}
	for _, scale := range scales {
		var b strings.Builder
		b.WriteString(`{"resourceSpans":[{"resource":{"attributes":[]},"scopeSpans":[{"scope":`)
		// A deep ignored value: skipped with one bit per level.
		depth := 1000 * scale
		b.WriteString(strings.Repeat(`{"x":[`, depth) + strings.Repeat(`]}`, depth))
		b.WriteString(`,"spans":[`)
		n := 500 * scale
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(strings.Repeat(" ", rng.IntN(200)))
			fmt.Fprintf(&b, `{"traceId":"%032x","spanId":"%016x","name":"op","startTimeUnixNano":"1000000000","endTimeUnixNano":"1250000000","attributes":[%s]}`,
				i/10+1, i+1, strings.Repeat(`{"key":"k","value":{"intValue":"1"}},`, rng.IntN(20))+`{"key":"k","value":{"intValue":"1"}}`)
		}
		b.WriteString("]}]}]}")
		in := b.String()
		var best time.Duration
		for run := range 5 {
			start := cputime.Now()
			var got int
			st, err := ReadStream("r.json", strings.NewReader(in), record.Options{}, SinkFunc(func(*span.Span) { got++ }))
			d := cputime.Since(start)
			if err != nil || got != n || st.Skipped != 0 {
				t.Fatalf("scale %d: %d of %d spans, skipped %v %v, err %v", scale, got, n, st.SkippedByReason, st.Errors, err)
			}
			if run == 0 || d < best {
				best = d
			}
		}
		perByte[scale] = float64(best) / float64(len(in))
	}
	// Linear: the largest input costs at most 6× the smallest's time per
	// byte (room for caches and noise; a quadratic skip costs ~16×).
	small, large := perByte[scales[0]], perByte[scales[len(scales)-1]]
	if large > 6*small {
		t.Errorf("time per byte at scales %v: %.2f, %.2f, %.2f ns: grows with the input", scales, perByte[1], perByte[4], perByte[16])
	}
}

// A span over --max-record is counted and skipped as it streams by, and
// the spans after it are read: in OTLP and Jaeger as in Zipkin.
func TestOversizedRecordThenMore(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	cases := []struct {
		format, in string
		spans      int
	}{
		{"otlp", `{"resourceSpans":[{"scopeSpans":[{"spans":[` +
			`{"traceId":"01","spanId":"01","name":"a","startTimeUnixNano":"1","endTimeUnixNano":"5"},` + "\n" +
			`{"traceId":"01","spanId":"02","name":"` + big + `","startTimeUnixNano":"1","endTimeUnixNano":"5"},` + "\n" +
			`{"traceId":"01","spanId":"03","name":"c","startTimeUnixNano":"1","endTimeUnixNano":"5"}]}]}]}` + "\n" +
			`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"01","spanId":"04","name":"d","startTimeUnixNano":"1","endTimeUnixNano":"5"}]}]}]}`, 3},
		{"jaeger", `{"data":[` +
			`{"traceID":"1","spans":[{"traceID":"1","spanID":"1","operationName":"a","duration":5}]},` + "\n" +
			`{"traceID":"2","spans":[{"traceID":"2","spanID":"1","operationName":"` + big + `","duration":5}]},` + "\n" +
			`{"traceID":"3","spans":[{"traceID":"3","spanID":"1","operationName":"c","duration":5}]}]}`, 2},
		{"zipkin", `[{"traceId":"1","id":"1","name":"a","duration":5},` + "\n" +
			`{"traceId":"1","id":"2","name":"` + big + `","duration":5},` + "\n" +
			`{"traceId":"1","id":"3","name":"c","duration":5}]`, 2},
	}
	for _, c := range cases {
		var n int
		st, err := ReadStream("o.json", strings.NewReader(c.in), record.Options{Format: c.format, MaxRecord: 100 << 10}, SinkFunc(func(*span.Span) { n++ }))
		if err != nil || n != c.spans || st.Skipped != 1 || st.SkippedByReason[record.ReasonTooLong] != 1 || st.Read != st.Used+st.Skipped {
			t.Errorf("%s: %d spans, read %d, skipped %v, err %v", c.format, n, st.Read, st.SkippedByReason, err)
			continue
		}
		if e := st.Errors[0].Error(); !strings.HasPrefix(e, "o.json:2: span 2: record too long: at byte ") {
			t.Errorf("%s: %q", c.format, e)
		}
	}
}

// Every record of an OTLP input is used or skipped: a flat span line or
// any other object among TracesData lines is counted, and so is every line
// of a flat file read with --input otlp.
func TestOTLPOtherDocuments(t *testing.T) {
	good := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"01","spanId":"01","name":"a","startTimeUnixNano":"1","endTimeUnixNano":"5"}]}]}]}`
	in := good + "\n" + `{"hop":"db","duration_ms":3}` + "\n" + `{}` + "\n" +
		`{"traceId":"01","spanId":"02","name":"b","startTimeUnixNano":"1","endTimeUnixNano":"5"}` + "\n" + good + "\n"
	var n int
	st, err := ReadStream("m.json", strings.NewReader(in), record.Options{}, SinkFunc(func(*span.Span) { n++ }))
	if err != nil || n != 2 || st.Read != 5 || st.SkippedByReason[tracejson.ReasonNotOTLP] != 3 {
		t.Fatalf("%d spans, read %d, skipped %v, err %v", n, st.Read, st.SkippedByReason, err)
	}
	if e := st.Errors[0].Error(); !strings.HasPrefix(e, `m.json:2: span 2: not an OTLP document: at byte `) || !strings.Contains(e, `"hop", "duration_ms"`) {
		t.Errorf("%q", e)
	}
	flat := "{\"hop\":\"a\",\"duration_ms\":1}\n{\"hop\":\"b\",\"duration_ms\":2}\n"
	st, err = ReadStream("f.jsonl", strings.NewReader(flat), record.Options{Format: "otlp"}, SinkFunc(func(*span.Span) {}))
	if err != nil || st.Read != 2 || st.Skipped != 2 {
		t.Errorf("--input otlp on a flat file: read %d, skipped %d, err %v", st.Read, st.Skipped, err)
	}
	st, err = ReadStream("j.json", strings.NewReader(flat), record.Options{Format: "jaeger"}, SinkFunc(func(*span.Span) {}))
	if err != nil || st.Read != 2 || st.SkippedByReason[tracejson.ReasonNotJaeger] != 2 {
		t.Errorf("--input jaeger on a flat file: read %d, skipped %v, err %v", st.Read, st.SkippedByReason, err)
	}
}

// A UTF-8 byte order mark costs neither the first line nor the document.
func TestByteOrderMark(t *testing.T) {
	bom := "\xef\xbb\xbf"
	for name, in := range map[string]string{
		"jsonl":  bom + `{"hop":"a","duration_ms":1}` + "\n" + `{"hop":"b","duration_ms":2}` + "\n",
		"otlp":   bom + `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"01","spanId":"01","name":"a","startTimeUnixNano":"1","endTimeUnixNano":"5"},{"traceId":"01","spanId":"02","name":"b","startTimeUnixNano":"1","endTimeUnixNano":"5"}]}]}]}`,
		"jaeger": bom + `{"data":[{"traceID":"1","spans":[{"traceID":"1","spanID":"1","operationName":"a","duration":5},{"traceID":"1","spanID":"2","operationName":"b","duration":5}]}]}`,
		"zipkin": bom + `[{"traceId":"1","id":"1","name":"a","duration":5},{"traceId":"1","id":"2","name":"b","duration":5}]`,
		"csv":    bom + "hop,duration_ms\na,1\nb,2\n",
		"otlp-spans": bom + `{"traceId":"01","spanId":"01","name":"a","startTimeUnixNano":"1","endTimeUnixNano":"5"}` + "\n" +
			`{"traceId":"01","spanId":"02","name":"b","startTimeUnixNano":"1","endTimeUnixNano":"5"}` + "\n",
	} {
		for _, format := range []string{"auto", name} {
			var n int
			st, err := ReadStream("b", strings.NewReader(in), record.Options{Format: format}, SinkFunc(func(*span.Span) { n++ }))
			if err != nil || n != 2 || st.Skipped != 0 || st.Formats["b"] != name {
				t.Errorf("%s (--input %s): %d spans, format %q, skipped %v, err %v", name, format, n, st.Formats["b"], st.Errors, err)
			}
		}
	}
}

// Positions of trace-format records say the line and the span's number.
func TestTracePositions(t *testing.T) {
	in := "{\"resourceSpans\": [\n {\"scopeSpans\": [\n  {\"spans\": [\n" +
		"   {\"traceId\":\"01\",\"spanId\":\"01\",\"name\":\"a\",\"startTimeUnixNano\":\"1\",\"endTimeUnixNano\":\"5\"},\n" +
		"   {\"traceId\":\"01\",\"spanId\":\"02\",\"name\":\"b\",\"startTimeUnixNano\":\"9\",\"endTimeUnixNano\":\"5\"},\n" +
		"   {\"traceId\":\"01\",\"spanId\":\"03\",\"name\":\"c\",\n    \"startTimeUnixNano\":\"1\"}\n  ]}\n ]}\n]}\n"
	st, err := ReadStream("p.json", strings.NewReader(in), record.Options{}, SinkFunc(func(*span.Span) {}))
	if err != nil || len(st.Errors) != 2 {
		t.Fatalf("errors %v, err %v", st.Errors, err)
	}
	for i, want := range []string{"p.json:5: span 2: end before start: at byte ", "p.json:6: span 3: missing end time: at byte "} {
		if e := st.Errors[i].Error(); !strings.HasPrefix(e, want) {
			t.Errorf("%q, want %q…", e, want)
		}
	}
	// Jaeger spans inside a trace record: lines counted within it.
	jg := "{\"data\":[{\"traceID\":\"1\",\"spans\":[\n{\"traceID\":\"1\",\"spanID\":\"1\",\"operationName\":\"a\",\"duration\":5},\n{\"traceID\":\"1\",\"spanID\":\"2\",\"operationName\":\"b\"}\n]}]}"
	st, _ = ReadStream("j.json", strings.NewReader(jg), record.Options{}, SinkFunc(func(*span.Span) {}))
	if len(st.Errors) != 1 || !strings.HasPrefix(st.Errors[0].Error(), "j.json:3: span 2: missing duration") {
		t.Errorf("jaeger: %v", st.Errors)
	}
}

// Syntax errors inside a skipped or copied value are found by the
// tokenizer's bracket and string checks, and the walk resumes at the next
// document line.
func TestTokenizerErrors(t *testing.T) {
	good := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"01","spanId":"01","name":"a","startTimeUnixNano":"1","endTimeUnixNano":"5"}]}]}]}`
	for _, bad := range []string{
		`{"resourceSpans":[{"x":[}]}`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a` + "\n",
		`{"resourceSpans":[{"scopeSpans":"x"` + "\n",
		`{"resourceSpans"`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"a":1}]]}]}`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"a":1} {"b":2}]}]}]}`,
	} {
		in := good + "\n" + bad + "\n" + good + "\n"
		var n int
		st, err := ReadStream("e.json", bytes.NewReader([]byte(in)), record.Options{Format: "otlp"}, SinkFunc(func(*span.Span) { n++ }))
		if err != nil || n != 2 || st.Read != st.Used+st.Skipped || st.Skipped < 1 {
			t.Errorf("%q: %d spans, skipped %v %v, err %v", bad, n, st.SkippedByReason, st.Errors, err)
		}
	}
}

// Wrappers nested far deeper than any producer writes them are skipped,
// not followed (the walk's depth never follows the input's).
func TestOTLPDeepWrappers(t *testing.T) {
	n := 200000
	in := strings.Repeat(`{"result":`, n) + `{}` + strings.Repeat(`}`, n)
	st, err := ReadStream("w.json", strings.NewReader(in), record.Options{Format: "otlp"}, SinkFunc(func(*span.Span) {}))
	if err != nil || st.SkippedByReason[record.ReasonBadDocument] != 1 || st.Read != 1 {
		t.Errorf("read %d, skipped %v, err %v", st.Read, st.SkippedByReason, err)
	}
}

package ingest_test

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

// tjBrief writes the fields of a span that a variant test checks, leaving
// out those at their zero value so expectations stay short.
func tjBrief(sp span.Span, withHop bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "T=%s S=%s", sp.TraceID, sp.SpanID)
	if sp.ParentID != "" {
		fmt.Fprintf(&b, " P=%s", sp.ParentID)
	}
	fmt.Fprintf(&b, " %s|%s", sp.Service, sp.Name)
	if sp.Kind != "" {
		fmt.Fprintf(&b, "|%s", sp.Kind)
	}
	fmt.Fprintf(&b, " %d+%d %s", sp.Start, sp.Duration, sp.Status)
	if sp.Timeout {
		b.WriteString(" timeout")
	}
	if sp.Code != 0 {
		fmt.Fprintf(&b, " code=%d", sp.Code)
	}
	if sp.CodeText != "" {
		fmt.Fprintf(&b, " code=%s", sp.CodeText)
	}
	if sp.Attempt != 0 {
		fmt.Fprintf(&b, " attempt=%d", sp.Attempt)
	}
	if sp.Peer != "" {
		fmt.Fprintf(&b, " peer=%s", sp.Peer)
	}
	if sp.TimeoutInForce != 0 {
		fmt.Fprintf(&b, " tif=%d", sp.TimeoutInForce)
	}
	if sp.Weight != 1 {
		fmt.Fprintf(&b, " w=%g", sp.Weight)
	}
	if withHop {
		fmt.Fprintf(&b, " hop=%s", sp.Hop)
	}
	return b.String()
}

type tjCase struct {
	name   string
	format string // "" = sniffed
	hopBy  string
	in     string
	want   []string         // tjBrief of each span, in order
	skips  map[string]int64 // skipped by reason
	errHas []string         // substrings of the positioned errors, in order
	sniff  string           // expected sniffed format, when format is ""
	extra  func(*testing.T, []span.Span)
	// ignored counts the values of kept spans that could not be read, by
	// field; ignHas are substrings of their positioned examples.
	ignored map[string]int64
	ignHas  []string
}

func tjRunCases(t *testing.T, cases []tjCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			format := c.format
			if format == "" {
				format = "auto"
			}
			spans, st := tjRead(t, format, c.in, ingest.Options{HopBy: c.hopBy})
			var got []string
			for _, sp := range spans {
				got = append(got, tjBrief(sp, c.hopBy != ""))
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("spans:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(c.want, "\n     "))
			}
			skips := c.skips
			if skips == nil {
				skips = map[string]int64{}
			}
			if fmt.Sprint(st.SkippedByReason) != fmt.Sprint(skips) {
				t.Errorf("skipped %v, want %v", st.SkippedByReason, skips)
			}
			for i, want := range c.errHas {
				if i >= len(st.Errors) {
					t.Errorf("error %d missing, want one containing %q", i, want)
					continue
				}
				if !strings.Contains(st.Errors[i].Error(), want) {
					t.Errorf("error %d = %q, want it to contain %q", i, st.Errors[i].Error(), want)
				}
			}
			if fmt.Sprint(st.IgnoredByField) != fmt.Sprint(c.ignored) {
				t.Errorf("ignored %v, want %v", st.IgnoredByField, c.ignored)
			}
			for i, want := range c.ignHas {
				if i >= len(st.IgnoredExamples) || !strings.Contains(st.IgnoredExamples[i].Error(), want) {
					t.Errorf("ignored value %d: %v, want one containing %q", i, st.IgnoredExamples, want)
				}
			}
			if c.sniff != "" && st.Formats["in.json"] != c.sniff {
				t.Errorf("sniffed %q, want %q", st.Formats["in.json"], c.sniff)
			}
			if c.extra != nil {
				c.extra(t, spans)
			}
		})
	}
}

// otlpDoc wraps spans (JSON objects) in one resource of service svc.
func otlpDoc(svc string, spans ...string) string {
	return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"` + svc + `"}}]},` +
		`"scopeSpans":[{"scope":{"name":"lib"},"spans":[` + strings.Join(spans, ",") + `]}]}]}`
}

// otlpSpan is a span with the given extra members.
func otlpSpan(extra string) string {
	s := `{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","name":"op",` +
		`"startTimeUnixNano":"1000000000","endTimeUnixNano":"1250000000"`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

const tjBase = "T=0102030405060708090a0b0c0d0e0f10 S=1112131415161718 svc|op"

func attr(k, typ, v string) string {
	return `{"key":"` + k + `","value":{"` + typ + `":` + v + `}}`
}

func TestOTLPVariants(t *testing.T) {
	one := tjBase + " 1000000000+250000000 unset"
	cases := []tjCase{
		{name: "canonical", in: otlpDoc("svc", otlpSpan(`"kind":2`)), sniff: "otlp",
			want: []string{tjBase + "|server 1000000000+250000000 unset"}},
		{name: "kind and status as names", in: otlpDoc("svc", otlpSpan(`"kind":"SPAN_KIND_CLIENT","status":{"code":"STATUS_CODE_ERROR","message":"boom"}`)),
			want: []string{tjBase + "|client 1000000000+250000000 error"}},
		{name: "kind and status as numbers", in: otlpDoc("svc", otlpSpan(`"kind":5,"status":{"code":1}`)),
			want: []string{tjBase + "|consumer 1000000000+250000000 ok"}},
		{name: "empty status is unset", in: otlpDoc("svc", otlpSpan(`"status":{}`)), want: []string{one}},
		{name: "snake_case, numeric times, base64 ids",
			in: `{"resource_spans":[{"resource":{"attributes":[{"key":"service.name","value":{"string_value":"svc"}}]},"scope_spans":[{"spans":[` +
				`{"trace_id":"AQIDBAUGBwgJCgsMDQ4PEA==","span_id":"ERITFBUWFxg=","parent_span_id":"ISIjJCUmJyg=","name":"op",` +
				`"kind":"SPAN_KIND_PRODUCER","start_time_unix_nano":1000000000,"end_time_unix_nano":1250000000,` +
				`"attributes":[{"key":"http.response.status_code","value":{"int_value":503}}],"status":{"code":2}}]}]}]}`,
			want: []string{"T=0102030405060708090a0b0c0d0e0f10 S=1112131415161718 P=2122232425262728 svc|op|producer 1000000000+250000000 error code=503"}},
		{name: "uppercase hex ids, zero parent is none",
			in:   otlpDoc("svc", `{"traceId":"0102030405060708090A0B0C0D0E0F10","spanId":"1112131415161718","parentSpanId":"0000000000000000","name":"op","startTimeUnixNano":"1000000000","endTimeUnixNano":"1250000000"}`),
			want: []string{one}},
		{name: "instrumentationLibrarySpans",
			in:   `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"instrumentationLibrarySpans":[{"instrumentationLibrary":{"name":"x"},"spans":[` + otlpSpan("") + `]}]}]}`,
			want: []string{one}, sniff: "otlp"},
		{name: "Tempo batches",
			in:   `{"batches":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"spans":[` + otlpSpan("") + `]}]}]}`,
			want: []string{one}, sniff: "otlp"},
		{name: "Jaeger v3 result wrapper", in: `{"result":` + otlpDoc("svc", otlpSpan("")) + `}`, want: []string{one}, sniff: "otlp"},
		{name: "file exporter: one document per line",
			in:   otlpDoc("svc", otlpSpan("")) + "\n" + otlpDoc("other", otlpSpan(`"kind":3`)) + "\n",
			want: []string{one, "T=0102030405060708090a0b0c0d0e0f10 S=1112131415161718 other|op|client 1000000000+250000000 unset"}},
		{name: "top-level array of documents", in: "[" + otlpDoc("svc", otlpSpan("")) + "," + otlpDoc("svc", otlpSpan("")) + "]",
			want: []string{one, one}, sniff: "otlp"},
		{name: "resource after scopeSpans",
			in:   `{"resourceSpans":[{"scopeSpans":[{"spans":[` + otlpSpan("") + `]}],"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]}}]}`,
			want: []string{one}},
		{name: "no resource", in: `{"resourceSpans":[{"scopeSpans":[{"spans":[` + otlpSpan("") + `]}]}]}`,
			want: []string{"T=0102030405060708090a0b0c0d0e0f10 S=1112131415161718 |op 1000000000+250000000 unset"}},
		{name: "null and empty containers", in: `{"resourceSpans":[{"resource":null,"scopeSpans":null},{"scopeSpans":[{"spans":[]}]}]}` + "\n" + `{"resourceSpans":null}`},
		{name: "timeouts and codes", in: otlpDoc("svc",
			otlpSpan(`"attributes":[`+attr("http.status_code", "intValue", `"504"`)+`]`),
			otlpSpan(`"attributes":[`+attr("rpc.grpc.status_code", "intValue", `4`)+`]`),
			otlpSpan(`"attributes":[`+attr("error.type", "stringValue", `"timeout"`)+`]`),
			otlpSpan(`"status":{"code":2,"message":"context deadline exceeded"}`),
			otlpSpan(`"status":{"code":1,"message":"deadline noted"}`),
			otlpSpan(`"attributes":[`+attr("http.response.status_code", "intValue", `408`)+`]`),
			otlpSpan(`"attributes":[`+attr("rpc.grpc.status_code", "intValue", `14`)+`],"status":{"code":"STATUS_CODE_ERROR"}`),
			otlpSpan(`"attributes":[`+attr("response_flags", "stringValue", `"URX,UT"`)+`]`),
			otlpSpan(`"status":{"code":2},"events":[{"name":"exception","attributes":[`+attr("exception.type", "stringValue", `"java.net.SocketTimeoutException"`)+`]}]`),
		),
			want: []string{
				tjBase + " 1000000000+250000000 error timeout code=504",
				tjBase + " 1000000000+250000000 error timeout code=4",
				tjBase + " 1000000000+250000000 error timeout code=timeout", // error.type is the error kind
				tjBase + " 1000000000+250000000 error timeout",
				tjBase + " 1000000000+250000000 ok",
				tjBase + " 1000000000+250000000 error timeout code=408",
				tjBase + " 1000000000+250000000 error code=14",
				tjBase + " 1000000000+250000000 error timeout",
				tjBase + " 1000000000+250000000 error timeout",
			}},
		{name: "attempts, peers, timeout in force, weights", in: otlpDoc("svc",
			otlpSpan(`"attributes":[`+attr("http.request.resend_count", "intValue", `"2"`)+`,`+attr("server.address", "stringValue", `"db"`)+`]`),
			otlpSpan(`"attributes":[`+attr("grpc-previous-rpc-attempts", "intValue", `1`)+`,`+attr("net.peer.name", "stringValue", `"n"`)+`,`+attr("peer.service", "stringValue", `"p"`)+`]`),
			otlpSpan(`"attributes":[`+attr("x-envoy-attempt-count", "stringValue", `"3"`)+`,`+attr("rpc.timeout_ms", "doubleValue", `1500.5`)+`]`),
			otlpSpan(`"attributes":[`+attr("retry.attempt", "intValue", `"1"`)+`,`+attr("sampling.weight", "doubleValue", `10`)+`]`),
			otlpSpan(`"traceState":"vendor=x,ot=th:8;rv:abcdef"`),
			otlpSpan(`"traceState":"ot=th:c"`),
			otlpSpan(`"traceState":"ot=th:0"`),
		),
			want: []string{
				tjBase + " 1000000000+250000000 unset attempt=3 peer=db",
				tjBase + " 1000000000+250000000 unset attempt=2 peer=p",
				tjBase + " 1000000000+250000000 unset attempt=3 tif=1500500000",
				tjBase + " 1000000000+250000000 unset attempt=1 w=10",
				tjBase + " 1000000000+250000000 unset w=2",
				tjBase + " 1000000000+250000000 unset w=4",
				tjBase + " 1000000000+250000000 unset",
			}},
		{name: "attr hop from span, else resource", hopBy: "attr:tier",
			in: `{"resourceSpans":[{"resource":{"attributes":[` + attr("service.name", "stringValue", `"svc"`) + `,` + attr("tier", "stringValue", `"backend"`) + `]},` +
				`"scopeSpans":[{"spans":[` + otlpSpan(`"attributes":[`+attr("tier", "stringValue", `"edge"`)+`]`) + `,` + otlpSpan("") + `]}]}]}`,
			want: []string{one + " hop=edge", one + " hop=backend"}},
		{name: "attr hop missing", hopBy: "attr:tier", in: otlpDoc("svc", otlpSpan("")),
			skips: map[string]int64{"missing hop": 1}, errHas: []string{"in.json:1: span 1: missing hop"}},
	}
	tjRunCases(t, cases)
}

func TestOTLPBadInput(t *testing.T) {
	good := otlpSpan("")
	one := tjBase + " 1000000000+250000000 unset"
	cases := []tjCase{
		{name: "empty input", format: "otlp", in: ""},
		{name: "end before start", in: otlpDoc("svc", good, otlpSpan(`"endTimeUnixNano":"900"`)),
			want: []string{one}, skips: map[string]int64{"end before start": 1}, errHas: []string{"in.json:1: span 2: end before start: at byte "}},
		{name: "missing times", in: otlpDoc("svc", `{"name":"a"}`, `{"name":"b","startTimeUnixNano":"5"}`, `{"name":"c","endTimeUnixNano":"5"}`),
			skips:  map[string]int64{"missing duration": 1, "missing end time": 1, "missing start time": 1},
			errHas: []string{"span 1: missing duration", "span 2: missing end time", "span 3: missing start time"}},
		{name: "bad values", in: otlpDoc("svc", good,
			otlpSpan(`"kind":"SPAN_KIND_SIDEWAYS"`),
			otlpSpan(`"status":{"code":"STATUS_CODE_MAYBE"}`),
			otlpSpan(`"name":5`),
			otlpSpan(`"traceId":{}`),
			otlpSpan(`"attributes":[`+attr("http.status_code", "stringValue", `"OK"`)+`]`),
			otlpSpan(`"attributes":{}`),
			`{"name":"x","startTimeUnixNano":"soon","endTimeUnixNano":"5"}`,
			`{"name":"x","startTimeUnixNano":"1","endTimeUnixNano":"99999999999999999999"}`,
			`"a string"`, `7`,
		),
			// Only the times are required: every other value that cannot
			// be read costs the span that value, not the span.
			want: []string{one, one, one, "T=0102030405060708090a0b0c0d0e0f10 S=1112131415161718 svc|5 1000000000+250000000 unset",
				"T= S=1112131415161718 svc|op 1000000000+250000000 unset", one, one},
			skips:   map[string]int64{"bad value": 2, "not a span": 2},
			errHas:  []string{"span 8: bad value: at byte", "span 9: bad value: at byte", "span 10: not a span: at byte", "span 11: not a span"},
			ignored: map[string]int64{"attributes": 1, "code": 1, "kind": 1, "status": 1, "trace_id": 1},
			ignHas:  []string{"span 2: kind: kind: unknown span kind", "span 3: status: status.code: want 0-2", "span 5: trace_id", "span 6: code: http.status_code", "span 7: attributes"}},
		{name: "wrong structure", in: `{"resourceSpans":{"a":1}}` + "\n" + `{"resourceSpans":[5,{"scopeSpans":"x"}]}` + "\n" + otlpDoc("svc", good),
			want: []string{one}, skips: map[string]int64{"bad document": 3},
			errHas: []string{"resourceSpans: want an array, got an object", "resourceSpans element: want an object, got a number", "scopeSpans: want an array, got a string"}},
		{name: "truncated document", in: tjCut(otlpDoc("svc", good, good), good, 10),
			want: []string{one}, skips: map[string]int64{"truncated JSON": 1}, errHas: []string{"in.json:1: span 2: truncated JSON: at byte "}},
		{name: "broken line among file-exporter lines",
			in:   otlpDoc("svc", good) + "\n" + `{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":}]}]}]}` + "\n" + otlpDoc("svc", good, good) + "\n",
			want: []string{one, one, one}, skips: map[string]int64{"bad JSON": 1},
			errHas: []string{"in.json:2: span 2: bad JSON: at byte "}},
		{name: "garbage in a pretty document", in: strings.Replace(otlpDoc("svc", good, good), `,{"traceId"`, "\n  ,{\"traceId\"x", 1),
			want: []string{one}, skips: map[string]int64{"bad JSON": 1}},
		{name: "scalar document", format: "otlp", in: `42`, skips: map[string]int64{"bad document": 1}},
		{name: "deep nesting", format: "otlp", in: strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
			skips: map[string]int64{"bad document": 1}},
	}
	tjRunCases(t, cases)
}

// TestOTLPStreams reads a large OTLP document through a pipe, so the
// reader cannot see it whole, and checks every span arrives.
func TestOTLPStreams(t *testing.T) {
	const n = 20000
	pr, pw := io.Pipe()
	go func() {
		fmt.Fprint(pw, `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"spans":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				fmt.Fprint(pw, ",")
			}
			fmt.Fprintf(pw, `{"traceId":"%032x","spanId":"%016x","name":"op","startTimeUnixNano":"%d","endTimeUnixNano":"%d"}`, i/10+1, i+1, 1000+i, 2000+2*i)
		}
		fmt.Fprint(pw, `]}]}]}`)
		pw.Close()
	}()
	var count int
	var sum int64
	st, err := ingest.ReadStream("pipe", pr, ingest.Options{Format: "otlp"}, ingest.SinkFunc(func(sp *span.Span) { count++; sum += sp.Duration }))
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for i := 0; i < n; i++ {
		want += int64(1000 + i)
	}
	if count != n || st.Used != n || sum != want {
		t.Errorf("%d spans (used %d), durations %d; want %d, %d", count, st.Used, sum, n, want)
	}
}

// tjCut cuts doc n bytes after the first occurrence of part.
func tjCut(doc, part string, n int) string {
	return doc[:strings.Index(doc, part)+len(part)+n]
}

// TestOTLPConformance reads OTLP JSON as the specification and real
// producers write it (opentelemetry-proto docs/specification.md, "JSON
// Protobuf Encoding"; the proto3 JSON mapping; Tempo's and Jaeger's query
// APIs; the collector's file exporter), not as our own fixtures do.
func TestOTLPConformance(t *testing.T) {
	one := tjBase + " 1000000000+250000000 unset"
	res := `"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}],"droppedAttributesCount":0}`
	withStatus := func(st string) string { return otlpDoc("svc", otlpSpan(`"status":`+st)) }
	cases := []tjCase{
		{name: "collector file exporter line with every field", sniff: "otlp",
			in: `{"resourceSpans":[{` + res + `,"scopeSpans":[{"scope":{"name":"io.opentelemetry.okhttp","version":"1.2.3","attributes":[` + attr("a", "stringValue", `"b"`) + `],"droppedAttributesCount":0},` +
				`"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","parentSpanId":"","flags":257,"traceState":"vendor=x",` +
				`"name":"op","kind":3,"startTimeUnixNano":"1000000000","endTimeUnixNano":"1250000000",` +
				`"attributes":[` + attr("http.request.method", "stringValue", `"GET"`) + `,` + attr("http.response.status_code", "intValue", `"503"`) + `,` + attr("http.request.resend_count", "intValue", `"1"`) + `],` +
				`"droppedAttributesCount":0,"events":[{"timeUnixNano":"1100000000","name":"retry","attributes":[],"droppedAttributesCount":0}],"droppedEventsCount":0,` +
				`"links":[{"traceId":"0102030405060708090a0b0c0d0e0f11","spanId":"1112131415161719","traceState":"","attributes":[],"droppedAttributesCount":0,"flags":256}],"droppedLinksCount":0,` +
				`"status":{"message":"Service Unavailable","code":2},"futureField":{"nested":[1,2,{"x":null}]}}],` +
				`"schemaUrl":"https://opentelemetry.io/schemas/1.21.0"}],"schemaUrl":"https://opentelemetry.io/schemas/1.21.0"}]}` + "\n",
			want: []string{tjBase + "|client 1000000000+250000000 error code=503 attempt=2"}},
		{name: "Tempo /api/traces: batches, base64 ids, enum names, int64 as strings", sniff: "otlp",
			in: `{"batches":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"scope":{"name":"lib"},"spans":[` +
				`{"traceId":"AQIDBAUGBwgJCgsMDQ4PEA==","spanId":"ERITFBUWFxg=","parentSpanId":"ISIjJCUmJyg=","name":"op","kind":"SPAN_KIND_SERVER",` +
				`"startTimeUnixNano":"1000000000","endTimeUnixNano":"1250000000","attributes":[{"key":"http.status_code","value":{"intValue":"504"}}],"status":{"code":"STATUS_CODE_ERROR"}}]}]}]}`,
			want: []string{"T=0102030405060708090a0b0c0d0e0f10 S=1112131415161718 P=2122232425262728 svc|op|server 1000000000+250000000 error timeout code=504"}},
		{name: "Tempo /api/v2/traces: trace wrapper with resourceSpans", sniff: "otlp",
			in:   `{"trace":{"resourceSpans":[{` + res + `,"scopeSpans":[{"spans":[` + otlpSpan("") + `]}]}]},"metrics":{"inspectedBytes":"1234"},"status":"COMPLETE"}`,
			want: []string{one}},
		{name: "Tempo /api/v2/traces: trace wrapper with batches", sniff: "otlp",
			in:   `{"trace":{"batches":[{` + res + `,"scopeSpans":[{"spans":[` + otlpSpan("") + `]}]}]}}`,
			want: []string{one}},
		{name: "Jaeger /api/v3/traces: streamed result lines", sniff: "otlp",
			in:   `{"result":` + otlpDoc("svc", otlpSpan("")) + "}\n" + `{"result":` + otlpDoc("svc", otlpSpan(`"kind":2`)) + "}\n",
			want: []string{one, tjBase + "|server 1000000000+250000000 unset"}},
		{name: "pretty-printed document, scope after spans", sniff: "otlp",
			in:   "{\n  \"resourceSpans\": [\n    {\n      \"scopeSpans\": [\n        {\n          \"spans\": [\n            " + otlpSpan("") + "\n          ],\n          \"scope\": {\"name\": \"lib\", \"version\": \"1\"}\n        }\n      ],\n      " + res + "\n    }\n  ]\n}\n",
			want: []string{one}},
		{name: "a flat log with trace and result fields is not OTLP", sniff: "jsonl",
			in:   `{"trace":"abc","result":"ok","hop":"h","duration_ms":5}` + "\n",
			want: []string{"T=abc S= | 0+5000000 unset"}},
		{name: "AnyValue kinds: scalars read, arrays, kvlists and bytes passed over", in: otlpDoc("svc",
			otlpSpan(`"attributes":[`+attr("http.response.status_code", "arrayValue", `{"values":[{"intValue":"500"}]}`)+`,`+
				attr("peer.service", "kvlistValue", `{"values":[{"key":"a","value":{"stringValue":"b"}}]}`)+`,`+
				attr("server.address", "bytesValue", `"ZGI="`)+`,`+attr("error", "boolValue", `true`)+`,`+
				attr("sampling.weight", "doubleValue", `2.5`)+`,`+attr("retry.attempt", "intValue", `2`)+`,`+attr("x", "doubleValue", `"NaN"`)+`,`+
				`{"key":"empty","value":{}},{"key":"novalue"}]`)),
			want: []string{tjBase + " 1000000000+250000000 error attempt=2 w=2.5"}},
		{name: "status: pre-0.7 codes and deprecatedCode", in: otlpDoc("svc",
			otlpSpan(`"status":{"code":0,"deprecatedCode":4}`),
			otlpSpan(`"status":{"deprecated_code":"DEPRECATED_STATUS_CODE_UNAVAILABLE"}`),
			otlpSpan(`"status":{"code":1,"deprecatedCode":2}`),
			otlpSpan(`"status":{"deprecatedCode":0}`),
			otlpSpan(`"status":{"code":4}`),
			otlpSpan(`"status":{"code":"STATUS_CODE_DEADLINE_EXCEEDED"}`),
			otlpSpan(`"status":{"code":"DeadlineExceeded"}`),
			otlpSpan(`"status":{"code":"Ok"}`),
			otlpSpan(`"status":{"code":14,"message":"unavailable"}`),
			otlpSpan(`"status":{"code":99}`),
		),
			want: []string{
				tjBase + " 1000000000+250000000 error timeout",
				tjBase + " 1000000000+250000000 error",
				tjBase + " 1000000000+250000000 ok",
				one,
				tjBase + " 1000000000+250000000 error timeout",
				tjBase + " 1000000000+250000000 error timeout",
				tjBase + " 1000000000+250000000 error timeout",
				tjBase + " 1000000000+250000000 ok",
				tjBase + " 1000000000+250000000 error",
				one,
			}},
		{name: "bad status names", in: withStatus(`{"code":"STATUS_CODE_MAYBE"}`) + "\n" + withStatus(`{"deprecatedCode":"SOMETIMES"}`) + "\n" + withStatus(`{"code":true}`),
			want:    []string{one, one, one},
			ignored: map[string]int64{"status": 3}, ignHas: []string{"status.code: want 0-2", "status.deprecatedCode", "status.code"}},
		{name: "kind: open enum numbers, names", in: otlpDoc("svc", otlpSpan(`"kind":7`), otlpSpan(`"kind":"SPAN_KIND_UNSPECIFIED"`), otlpSpan(`"kind":"SPAN_KIND_INTERNAL"`)),
			want: []string{one, one, tjBase + "|internal 1000000000+250000000 unset"}},
		{name: "64-bit integers as JSON numbers", in: otlpDoc("svc",
			`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","name":"op","startTimeUnixNano":1000000000,"endTimeUnixNano":1250000000,"attributes":[`+attr("http.request.resend_count", "intValue", `0`)+`]}`),
			want: []string{tjBase + " 1000000000+250000000 unset attempt=1"}},
		{name: "ids: hex in either case, base64 std and URL-safe, all-zero parent", in: otlpDoc("svc",
			`{"traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"EEE19B7EC3C1B174","parentSpanId":"eee19b7ec3c1b173","name":"op","startTimeUnixNano":"1000000000","endTimeUnixNano":"1250000000"}`,
			`{"traceId":"W47/95gDgQPSabYzgT/GDA==","spanId":"7uGbfsPBsXQ=","parentSpanId":"AAAAAAAAAAA=","name":"op","startTimeUnixNano":"1000000000","endTimeUnixNano":"1250000000"}`,
			`{"traceId":"W47_95gDgQPSabYzgT_GDA==","spanId":"7uGbfsPBsXQ","name":"op","startTimeUnixNano":"1000000000","endTimeUnixNano":"1250000000"}`),
			want: []string{
				"T=5b8efff798038103d269b633813fc60c S=eee19b7ec3c1b174 P=eee19b7ec3c1b173 svc|op 1000000000+250000000 unset",
				"T=5b8efff798038103d269b633813fc60c S=eee19b7ec3c1b174 svc|op 1000000000+250000000 unset",
				"T=5b8efff798038103d269b633813fc60c S=eee19b7ec3c1b174 svc|op 1000000000+250000000 unset",
			}},
		{name: "exception event: only an event named exception counts, only on an error", in: otlpDoc("svc",
			otlpSpan(`"status":{"code":2},"events":[{"name":"log","attributes":[`+attr("exception.type", "stringValue", `"TimeoutError"`)+`]}]`),
			otlpSpan(`"status":{"code":2},"events":[{"name":"exception","attributes":[`+attr("exception.message", "stringValue", `"context deadline exceeded"`)+`]}]`),
			otlpSpan(`"events":[{"name":"exception","attributes":[`+attr("exception.type", "stringValue", `"TimeoutError"`)+`]}]`)),
			want: []string{tjBase + " 1000000000+250000000 error", tjBase + " 1000000000+250000000 error timeout", one}},
	}
	tjRunCases(t, cases)
}

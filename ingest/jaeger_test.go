package ingest_test

import (
	"strings"
	"testing"
)

// jgSpan is a Jaeger span of process p1 with extra members.
func jgSpan(id, extra string) string {
	s := `{"traceID":"abc","spanID":"` + id + `","operationName":"op","startTime":1000,"duration":250,"processID":"p1"`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

func jgTrace(spans ...string) string {
	return `{"traceID":"abc","spans":[` + strings.Join(spans, ",") + `],"processes":{"p1":{"serviceName":"svc","tags":[{"key":"zone","type":"string","value":"eu"}]}},"warnings":null}`
}

func jgTag(k, typ, v string) string {
	return `{"key":"` + k + `","type":"` + typ + `","value":` + v + `}`
}

const jgT = "T=00000000000000000000000000000abc"

func TestJaegerVariants(t *testing.T) {
	one := jgT + " S=0000000000000001 svc|op 1000000+250000 unset"
	cases := []tjCase{
		{name: "envelope", in: `{"data":[` + jgTrace(jgSpan("1", "")) + `],"total":0,"limit":0,"offset":0,"errors":null}`,
			want: []string{one}, sniff: "jaeger"},
		{name: "bare trace", in: jgTrace(jgSpan("1", "")), want: []string{one}, sniff: "jaeger"},
		{name: "array of traces", in: "[" + jgTrace(jgSpan("1", "")) + "," + jgTrace(jgSpan("1", "")) + "]", want: []string{one, one}, sniff: "jaeger"},
		{name: "documents one after another", in: jgTrace(jgSpan("1", "")) + "\n" + `{"data":[` + jgTrace(jgSpan("1", "")) + `]}`, want: []string{one, one}},
		{name: "error tags", in: jgTrace(
			jgSpan("1", `"tags":[`+jgTag("error", "bool", "true")+`]`),
			jgSpan("1", `"tags":[`+jgTag("error", "string", `"true"`)+`]`),
			jgSpan("1", `"tags":[`+jgTag("error", "bool", "false")+`]`),
			jgSpan("1", `"tags":[`+jgTag("otel.status_code", "string", `"ERROR"`)+`,`+jgTag("otel.status_description", "string", `"upstream deadline exceeded"`)+`]`),
			jgSpan("1", `"tags":[`+jgTag("otel.status_code", "string", `"OK"`)+`]`),
		),
			want: []string{
				jgT + " S=0000000000000001 svc|op 1000000+250000 error",
				jgT + " S=0000000000000001 svc|op 1000000+250000 error",
				one,
				jgT + " S=0000000000000001 svc|op 1000000+250000 error timeout",
				jgT + " S=0000000000000001 svc|op 1000000+250000 ok",
			}},
		{name: "timeouts and codes", in: jgTrace(
			jgSpan("1", `"tags":[`+jgTag("response_flags", "string", `"UT"`)+`,`+jgTag("span.kind", "string", `"client"`)+`]`),
			jgSpan("1", `"tags":[`+jgTag("grpc.status_code", "int64", `4`)+`]`),
			jgSpan("1", `"tags":[`+jgTag("http.status_code", "string", `"504"`)+`]`),
			jgSpan("1", `"tags":[`+jgTag("http.status_code", "int64", `200`)+`,`+jgTag("response_flags", "string", `"-"`)+`]`),
			jgSpan("1", `"tags":[`+jgTag("x-envoy-attempt-count", "string", `"2"`)+`,`+jgTag("peer.service", "string", `"db"`)+`]`),
		),
			want: []string{
				jgT + " S=0000000000000001 svc|op|client 1000000+250000 error timeout",
				jgT + " S=0000000000000001 svc|op 1000000+250000 error timeout code=4",
				jgT + " S=0000000000000001 svc|op 1000000+250000 error timeout code=504",
				jgT + " S=0000000000000001 svc|op 1000000+250000 unset code=200",
				jgT + " S=0000000000000001 svc|op 1000000+250000 unset attempt=2 peer=db",
			}},
		{name: "parents", in: jgTrace(
			jgSpan("2", `"references":[{"refType":"FOLLOWS_FROM","spanID":"f"},{"refType":"CHILD_OF","spanID":"c"}],"parentSpanID":"9"`),
			jgSpan("2", `"references":[{"refType":"FOLLOWS_FROM","spanID":"f"}],"parentSpanID":"9"`),
			jgSpan("2", `"references":[{"refType":"FOLLOWS_FROM","spanID":"f"}]`),
			jgSpan("2", `"references":[],"parentSpanID":"9"`),
		),
			want: []string{
				jgT + " S=0000000000000002 P=000000000000000c svc|op 1000000+250000 unset",
				jgT + " S=0000000000000002 P=0000000000000009 svc|op 1000000+250000 unset",
				jgT + " S=0000000000000002 P=000000000000000f svc|op 1000000+250000 unset",
				jgT + " S=0000000000000002 P=0000000000000009 svc|op 1000000+250000 unset",
			}},
		{name: "embedded process and api_v2 protobuf JSON", in: `{"data":[{"spans":[{"traceId":"AAAAAAAAAAAAAAAAAAAKvA==","spanId":"AAAAAAAAAAE=",` +
			`"operationName":"op","startTime":"1970-01-01T00:00:00.001Z","duration":"0.000250s","process":{"serviceName":"svc"}}]}]}`,
			want: []string{one}},
		{name: "attr hop from span, else process", hopBy: "attr:zone", in: jgTrace(
			jgSpan("1", `"tags":[`+jgTag("zone", "string", `"us"`)+`]`), jgSpan("1", "")),
			want: []string{one + " hop=us", one + " hop=eu"}},
		{name: "unknown process keeps the span", in: jgTrace(jgSpan("1", `"processID":"p9"`)),
			want: []string{jgT + " S=0000000000000001 |op 1000000+250000 unset"}},
		{name: "no start time keeps the span at 0", in: jgTrace(`{"traceID":"abc","spanID":"1","operationName":"op","duration":250,"processID":"p1"}`),
			want: []string{jgT + " S=0000000000000001 svc|op 0+250000 unset"}},
		{name: "null data and errors", in: `{"data":null,"total":0,"errors":[{"code":404,"msg":"trace not found"}]}`},
	}
	tjRunCases(t, cases)
}

func TestJaegerBadInput(t *testing.T) {
	one := jgT + " S=0000000000000001 svc|op 1000000+250000 unset"
	good := jgSpan("1", "")
	cases := []tjCase{
		{name: "empty input", format: "jaeger", in: ""},
		{name: "bad spans", in: jgTrace(good,
			`{"traceID":"abc","spanID":"1","operationName":"op","startTime":1000,"processID":"p1"}`,
			jgSpan("1", `"duration":"long"`),
			jgSpan("1", `"tags":{"a":1}`),
			jgSpan("1", `"tags":[`+jgTag("http.status_code", "string", `"teapot"`)+`]`),
			jgSpan("1", `"references":[3]`),
			jgSpan("1", `"duration":-5`),
			`[]`,
		),
			// Only the duration is required: tags and references that
			// cannot be read cost the span those values; a status code
			// that is no number is an error kind of its own.
			want:    []string{one, one, strings.Replace(one, "unset", "error code=teapot", 1), one},
			skips:   map[string]int64{"missing duration": 1, "bad value": 1, "negative duration": 1, "not a span": 1},
			errHas:  []string{"in.json:1: span 2: missing duration: at byte ", "span 3: bad value: at byte", "span 7: negative duration", "span 8: not a span: at byte"},
			ignored: map[string]int64{"references": 1, "tags": 1}, ignHas: []string{"span 4: tags", "span 6: references"}},
		{name: "bad structure", in: `{"data":{"x":1}}` + "\n" + `{"data":[5]}` + "\n" + jgTrace(good) + "\n" + `{"traceID":"abc","spans":7}`,
			want: []string{one}, skips: map[string]int64{"bad document": 3}},
		{name: "truncated", in: tjCut(`{"data":[`+jgTrace(good)+`,`+jgTrace(good)+`]}`, jgTrace(good), 30),
			want: []string{one}, skips: map[string]int64{"truncated JSON": 1}, errHas: []string{"in.json:1: span 2: truncated JSON: at byte"}},
		{name: "broken line between documents", in: jgTrace(good) + "\n" + `{"data":[{"spans":[}]}` + "\n" + jgTrace(good),
			want: []string{one, one}, skips: map[string]int64{"bad JSON": 1}},
	}
	tjRunCases(t, cases)
}

package ingest_test

import (
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

// attrText writes a span's Attrs in order as key=value, space-separated.
func attrText(attrs []span.Attr) string {
	var b strings.Builder
	for i, a := range attrs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a.Key + "=" + a.Value)
	}
	return b.String()
}

// TestTraceAttrs pins what each trace reader puts in span.Span.Attrs:
// resource (process, local endpoint) first, then the scope (OTLP), then
// the span's own; scalar values as their text, arrays, maps and bytes left
// out, and the attributes that restate the span's service, kind or outcome
// left to those fields.
func TestTraceAttrs(t *testing.T) {
	res := `{"resource":{"attributes":[` + attr("service.name", "stringValue", `"svc"`) + `,` +
		attr("k8s.pod.name", "stringValue", `"pod-7"`) + `,` + attr("host.cpus", "intValue", `"8"`) + `,` +
		attr("tags", "arrayValue", `{"values":[{"stringValue":"a"}]}`) + `]},`
	cases := []struct {
		name, format, in string
		want             []string // attrText of each span
	}{
		{"otlp: resource, scope, span; scalar values as text", "otlp",
			`{"resourceSpans":[` + res + `"scopeSpans":[{"scope":{"name":"io.lib","version":"1.2","attributes":[` + attr("lib.x", "stringValue", `"no"`) + `]},"spans":[` +
				otlpSpan(`"attributes":[`+
					attr("http.route", "stringValue", `"/users/{id}"`)+`,`+
					attr("http.response.status_code", "intValue", `"503"`)+`,`+
					attr("retries", "intValue", `2`)+`,`+
					attr("ratio", "doubleValue", `0.25`)+`,`+
					attr("cached", "boolValue", `true`)+`,`+
					attr("esc", "stringValue", `"a\"b\u00e9"`)+`,`+
					attr("list", "arrayValue", `{"values":[]}`)+`,`+
					attr("map", "kvlistValue", `{"values":[]}`)+`,`+
					attr("blob", "bytesValue", `"AAE="`)+`,`+
					attr("error", "boolValue", `true`)+`,`+
					attr("otel.status_code", "stringValue", `"ERROR"`)+`]`) + `]}]}]}`,
			[]string{`k8s.pod.name=pod-7 host.cpus=8 otel.scope.name=io.lib otel.scope.version=1.2 http.route=/users/{id} http.response.status_code=503 retries=2 ratio=0.25 cached=true esc=a"bé`}},
		{"otlp: resource written after its spans still comes first", "otlp",
			`{"resourceSpans":[{"scopeSpans":[{"spans":[` + otlpSpan(`"attributes":[`+attr("a", "stringValue", `"1"`)+`]`) + `]}],` +
				`"resource":{"attributes":[` + attr("zone", "stringValue", `"eu-1"`) + `]}}]}`,
			[]string{"zone=eu-1 a=1"}},
		{"otlp: no attributes at all", "otlp", `{"resourceSpans":[{"scopeSpans":[{"spans":[` + otlpSpan("") + `]}]}]}`, []string{""}},
		{"otlp: a bare span line with its resource", "otlp-spans",
			otlpSpan(`"resource":{"attributes":[` + attr("host.name", "stringValue", `"h1"`) + `]},"attributes":[` + attr("peer.service", "stringValue", `"db"`) + `]`),
			[]string{"host.name=h1 peer.service=db"}},
		{"jaeger: process tags then span tags, typed values", "jaeger",
			`{"data":[{"traceID":"abc","spans":[` + jgSpan("1", `"tags":[`+
				jgTag("span.kind", "string", `"client"`)+`,`+jgTag("error", "bool", `true`)+`,`+
				jgTag("http.status_code", "int64", `503`)+`,`+jgTag("weight", "float64", `1.5`)+`,`+
				jgTag("sampled", "bool", `false`)+`,`+jgTag("payload", "binary", `"AAE="`)+`,`+
				jgTag("route", "string", `"/x"`)+`]`) + `],` +
				`"processes":{"p1":{"serviceName":"svc","tags":[` + jgTag("hostname", "string", `"node-3"`) + `,` + jgTag("ip", "string", `"10.0.0.3"`) + `,` + jgTag("cert", "binary", `"AAE="`) + `]}}}]}`,
			[]string{"hostname=node-3 ip=10.0.0.3 http.status_code=503 weight=1.5 sampled=false route=/x"}},
		{"jaeger: an embedded process", "jaeger",
			`{"traceID":"abc","spans":[{"traceID":"abc","spanID":"1","operationName":"op","startTime":1,"duration":2,"process":{"serviceName":"svc","tags":[` + jgTag("zone", "string", `"b"`) + `]}}]}`,
			[]string{"zone=b"}},
		{"zipkin: local endpoint, tags, remote endpoint", "zipkin",
			`[` + `{"traceId":"aa","id":"1","name":"get","timestamp":1,"duration":2,"kind":"CLIENT",` +
				`"localEndpoint":{"serviceName":"svc","ipv4":"10.0.0.1","port":8080},` +
				`"tags":{"http.route":"/a","error":"boom","n":"1"},` +
				`"remoteEndpoint":{"serviceName":"db","ipv4":"10.0.0.9","port":5432}},` +
				`{"traceId":"aa","id":"2","name":"get","timestamp":1,"duration":2,"localEndpoint":{"serviceName":"svc","ipv6":"::1","port":0},"remoteEndpoint":{"ipv6":"fe80::1"}}` + `]`,
			[]string{"net.host.ip=10.0.0.1 net.host.port=8080 http.route=/a n=1 peer.service=db net.peer.ip=10.0.0.9 net.peer.port=5432",
				"net.host.ip=::1 net.peer.ip=fe80::1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, borrowed := range []bool{false, true} {
				var got []string
				st, err := ingest.ReadStream("in.json", strings.NewReader(c.in), ingest.Options{Format: c.format, Borrowed: borrowed}, ingest.SinkFunc(func(sp *span.Span) {
					got = append(got, attrText(sp.Attrs))
				}))
				if err != nil {
					t.Fatal(err)
				}
				if st.Skipped != 0 {
					t.Fatalf("skipped %v: %v", st.SkippedByReason, st.Errors)
				}
				if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
					t.Errorf("borrowed=%v:\n got %q\nwant %q", borrowed, got, c.want)
				}
			}
		})
	}
}

// TestTraceAttrsOwned: spans that are not borrowed own their Attrs (a
// consumer keeps them past the next span); borrowed ones may share.
func TestTraceAttrsOwned(t *testing.T) {
	in := otlpDoc("svc", otlpSpan(`"attributes":[`+attr("a", "stringValue", `"1"`)+`]`), otlpSpan(`"attributes":[`+attr("a", "stringValue", `"2"`)+`]`))
	var kept []span.Span
	if _, err := ingest.ReadStream("in.json", strings.NewReader(in), ingest.Options{}, ingest.SinkFunc(func(sp *span.Span) { kept = append(kept, *sp) })); err != nil {
		t.Fatal(err)
	}
	if len(kept) != 2 || attrText(kept[0].Attrs) != "otel.scope.name=lib a=1" || attrText(kept[1].Attrs) != "otel.scope.name=lib a=2" {
		t.Errorf("kept spans' attributes changed under them: %+v", kept)
	}
}

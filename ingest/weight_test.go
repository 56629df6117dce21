package ingest_test

import (
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

// A span's sampling weight is read wherever a trace format carries it: an
// OTel th threshold in a W3C tracestate that Jaeger or Zipkin keep as a
// w3c.tracestate tag, an explicit weight, and OpenTracing's
// sampling.priority (kept whatever the odds: weight 1 unless something
// else says otherwise).
func TestWeightFromTags(t *testing.T) {
	jaeger := func(tags string) string {
		return `{"data":[{"traceID":"t1","spans":[{"traceID":"t1","spanID":"a1","operationName":"GET","startTime":1700000000000000,"duration":1000,` +
			`"processID":"p1","tags":[` + tags + `]}],"processes":{"p1":{"serviceName":"svc"}}}]}`
	}
	zipkin := func(tags string) string {
		return `[{"traceId":"t1","id":"a1","name":"get","timestamp":1700000000000000,"duration":1000,"localEndpoint":{"serviceName":"svc"},"tags":{` + tags + `}}]`
	}
	for _, c := range []struct {
		name, format, in string
		want             float64
	}{
		{"jaeger w3c.tracestate th:c (p = 1/4)", "jaeger", jaeger(`{"key":"w3c.tracestate","type":"string","value":"ot=th:c,vendor=x"}`), 4},
		{"zipkin w3c.tracestate th:8 (p = 1/2)", "zipkin", zipkin(`"w3c.tracestate":"ot=th:8"`), 2},
		{"zipkin sampling.priority 1", "zipkin", zipkin(`"sampling.priority":"1"`), 1},
		{"jaeger priority and a threshold: the threshold wins", "jaeger",
			jaeger(`{"key":"sampling.priority","type":"int64","value":1},{"key":"w3c.tracestate","type":"string","value":"ot=th:c"}`), 4},
		{"jaeger explicit weight wins over the threshold", "jaeger",
			jaeger(`{"key":"w3c.tracestate","type":"string","value":"ot=th:c"},{"key":"sampling.weight","type":"float64","value":10}`), 10},
		{"no weight information", "zipkin", zipkin(`"http.method":"GET"`), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []span.Span
			if _, err := ingest.ReadStream("in.json", strings.NewReader(c.in), ingest.Options{Format: c.format}, ingest.SinkFunc(func(s *span.Span) { got = append(got, *s) })); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Weight != c.want {
				t.Fatalf("spans %d, weight %v, want %v", len(got), got[0].Weight, c.want)
			}
		})
	}
}

package tracejson

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// zipkinUsual writes n spans as a Zipkin exporter does: one array, traces
// of a server span and its client calls, 16- or 32-digit trace ids, local
// and remote endpoints, a few tags (with an error and a status code on
// some).
func zipkinUsual(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	services := []string{"frontend", "cart", "checkout", "payment", "shipping", "currency", "email", "ads"}
	var b bytes.Buffer
	b.WriteString("[")
	var trace, parent string
	for i := range n {
		if i%8 == 0 {
			trace, parent = traceHex(r, 16+16*r.IntN(2)), ""
		}
		if i > 0 {
			b.WriteString(",")
		}
		id := traceHex(r, 16)
		svc := services[r.IntN(len(services))]
		fmt.Fprintf(&b, `{"traceId":"%s",`, trace)
		if parent != "" {
			fmt.Fprintf(&b, `"parentId":"%s",`, parent)
		}
		kind, name := "SERVER", "get /api/"+svc
		if parent != "" {
			kind, name = "CLIENT", "post /"+services[r.IntN(len(services))]
		}
		code := 200
		if r.IntN(50) == 0 {
			code = 503
		}
		fmt.Fprintf(&b, `"id":"%s","kind":"%s","name":"%s","timestamp":%d,"duration":%d,"localEndpoint":{"serviceName":"%s","ipv4":"10.0.%d.%d","port":8080},`,
			id, kind, name, 1_700_000_000_000_000+int64(i)*100, 100+r.IntN(200000), svc, r.IntN(4), r.IntN(250))
		if kind == "CLIENT" {
			fmt.Fprintf(&b, `"remoteEndpoint":{"serviceName":"%s"},`, services[r.IntN(len(services))])
		}
		fmt.Fprintf(&b, `"tags":{"http.method":"GET","http.path":"/api/%s","http.status_code":"%d"`, svc, code)
		if code >= 500 {
			b.WriteString(`,"error":"503"`)
		}
		b.WriteString("}}")
		if parent == "" {
			parent = id
		}
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// jaegerUsual writes n spans as the Jaeger UI downloads them: one
// envelope, traces of 8 spans (a server span and its client calls) over
// processes with a few tags, spans with a CHILD_OF reference and typed
// tags (span.kind, http.*, an error on some).
func jaegerUsual(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	services := []string{"frontend", "cart", "checkout", "payment", "shipping", "currency", "email", "ads"}
	var b bytes.Buffer
	b.WriteString(`{"data":[`)
	for t := 0; t < n; t += 8 {
		if t > 0 {
			b.WriteString(",")
		}
		trace := traceHex(r, 16+16*r.IntN(2))
		fmt.Fprintf(&b, `{"traceID":"%s","spans":[`, trace)
		var root string
		for i := t; i < min(n, t+8); i++ {
			if i > t {
				b.WriteString(",")
			}
			id := traceHex(r, 16)
			refs, kind := "[]", "server"
			if root != "" {
				refs, kind = fmt.Sprintf(`[{"refType":"CHILD_OF","traceID":"%s","spanID":"%s"}]`, trace, root), "client"
			} else {
				root = id
			}
			code := 200
			if r.IntN(50) == 0 {
				code = 503
			}
			svc := services[r.IntN(len(services))]
			fmt.Fprintf(&b, `{"traceID":"%s","spanID":"%s","flags":1,"operationName":"%s /api/%s","references":%s,"startTime":%d,"duration":%d,`+
				`"tags":[{"key":"span.kind","type":"string","value":"%s"},{"key":"http.method","type":"string","value":"GET"},`+
				`{"key":"http.url","type":"string","value":"/api/%s"},{"key":"http.status_code","type":"int64","value":%d}`,
				trace, id, kind, svc, refs, 1_700_000_000_000_000+int64(i)*100, 100+r.IntN(200000), kind, svc, code)
			if code >= 500 {
				b.WriteString(`,{"key":"error","type":"bool","value":true}`)
			}
			fmt.Fprintf(&b, `],"logs":[],"processID":"p%d","warnings":null}`, 1+r.IntN(3))
		}
		b.WriteString(`],"processes":{`)
		for p := 1; p <= 3; p++ {
			if p > 1 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"p%d":{"serviceName":"%s","tags":[{"key":"hostname","type":"string","value":"host-%d"},{"key":"ip","type":"string","value":"10.0.0.%d"},{"key":"jaeger.version","type":"string","value":"Go-2.30.0"}]}`,
				p, services[r.IntN(len(services))], p, p)
		}
		b.WriteString(`},"warnings":null}`)
	}
	b.WriteString(`],"total":0,"limit":0,"offset":0,"errors":null}` + "\n")
	return b.Bytes()
}

// benchTraceRead reads input in format as pipeline.Read does (borrowed spans,
// every attribute), with the fast paths on or off, reporting ns and
// allocations per span.
func benchTraceRead(b *testing.B, input []byte, format string, fast bool, enable *bool) {
	defer func(was bool) { *enable = was }(*enable)
	*enable = fast
	b.ReportAllocs()
	b.SetBytes(int64(len(input)))
	var n int64
	for b.Loop() {
		n = 0
		_, err := readTrace("in.json", bytes.NewReader(input), record.Options{Format: format, Borrowed: true}, func(sp *span.Span) { n++ })
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*n), "ns/span")
	b.ReportMetric(float64(testing.AllocsPerRun(1, func() {
		readTrace("in.json", bytes.NewReader(input), record.Options{Format: format, Borrowed: true}, func(*span.Span) {})
	}))/float64(n), "allocs/span")
}

// BenchmarkZipkinRead reads 100k generated spans in memory, general path
// and fast path.
func BenchmarkZipkinRead(b *testing.B) {
	in := zipkinUsual(1, 100_000)
	b.Run("general", func(b *testing.B) { benchTraceRead(b, in, "zipkin", false, &zipkinFastEnabled) })
	b.Run("fast", func(b *testing.B) { benchTraceRead(b, in, "zipkin", true, &zipkinFastEnabled) })
}

// BenchmarkJaegerRead reads 100k generated spans in memory, general path
// and fast path.
func BenchmarkJaegerRead(b *testing.B) {
	in := jaegerUsual(1, 100_000)
	b.Run("general", func(b *testing.B) { benchTraceRead(b, in, "jaeger", false, &jaegerFastEnabled) })
	b.Run("fast", func(b *testing.B) { benchTraceRead(b, in, "jaeger", true, &jaegerFastEnabled) })
}

// TestWriteTraceBench writes the generated benchmark inputs at scale for
// whole-analysis timings: TAILSCOPE_WRITE_TRACE_BENCH=DIR writes DIR/zipkin.json
// (1M spans) and DIR/jaeger.json.
func TestWriteTraceBench(t *testing.T) {
	dir := os.Getenv("TAILSCOPE_WRITE_TRACE_BENCH")
	if dir == "" {
		t.Skip("set TAILSCOPE_WRITE_TRACE_BENCH to a directory")
	}
	if err := os.WriteFile(dir+"/zipkin.json", zipkinUsual(1, 1_000_000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/jaeger.json", jaegerUsual(1, 1_000_000), 0o644); err != nil {
		t.Fatal(err)
	}
}

package tracejson

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/internal/realdata"
	"github.com/tailscope/tailscope/span"
)

// traceRead reads input in format with the fast paths of the trace JSON
// formats on or off and returns the spans (deep copies: borrowed strings
// die with the call) and stats.
func traceRead(t testing.TB, input []byte, opt record.Options, fast bool) ([]span.Span, *record.Stats, error) {
	t.Helper()
	defer func(z, j bool, eb int) {
		zipkinFastEnabled, jaegerFastEnabled, fastElemBuffer = z, j, eb
	}(zipkinFastEnabled, jaegerFastEnabled, fastElemBuffer)
	zipkinFastEnabled, jaegerFastEnabled = fast, fast
	// A small enlarged buffer, so that generated inputs meet its limit.
	fastElemBuffer = 1 << 17
	var out []span.Span
	st, err := readTrace("in.json", bytes.NewReader(input), opt, func(sp *span.Span) {
		c := *sp
		c.TraceID, c.SpanID, c.ParentID = strings.Clone(sp.TraceID), strings.Clone(sp.SpanID), strings.Clone(sp.ParentID)
		c.Attrs = nil
		for _, a := range sp.Attrs {
			c.Attrs = append(c.Attrs, span.Attr{Key: strings.Clone(a.Key), Value: strings.Clone(a.Value)})
		}
		out = append(out, c)
	})
	return out, st, err
}

// fastCount counts the spans the fast paths read in place while f runs.
func fastCount(f func()) (n int) {
	defer func(was func(string, int)) { fastTaken = was }(fastTaken)
	fastTaken = func(_ string, k int) { n += k }
	f()
	return n
}

// traceSame reads input with the fast paths and without, with and without
// borrowed spans, and fails on any difference in spans, attributes,
// skips, positions or counts.
func traceSame(t testing.TB, input []byte, opt record.Options) (spans int) {
	t.Helper()
	for _, borrowed := range []bool{false, true} {
		opt.Borrowed = borrowed
		gs, gst, gerr := traceRead(t, input, opt, false)
		fs, fst, ferr := traceRead(t, input, opt, true)
		if fmt.Sprint(gerr) != fmt.Sprint(ferr) {
			t.Fatalf("borrowed=%v: errors differ: general %v, fast %v\ninput %.3000q", borrowed, gerr, ferr, input)
		}
		if a, b := otlpStatsText(gst), otlpStatsText(fst); a != b {
			t.Fatalf("borrowed=%v: stats differ:\ngeneral %s\nfast    %s\ninput %.3000q", borrowed, a, b, input)
		}
		if len(gs) != len(fs) {
			t.Fatalf("borrowed=%v: %d spans general, %d fast\ninput %.3000q", borrowed, len(gs), len(fs), input)
		}
		for i := range gs {
			if !reflect.DeepEqual(gs[i], fs[i]) {
				t.Fatalf("borrowed=%v: span %d differs:\ngeneral %+v\nfast    %+v\ninput %.3000q", borrowed, i, gs[i], fs[i], input)
			}
		}
		spans = len(gs)
	}
	return spans
}

// traceHex is n random lowercase hex digits.
func traceHex(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "%016x", r.Uint64())
	}
	return b.String()[:n]
}

// traceID is an id of width hex digits, usually plain, sometimes in one of
// the shapes the general path normalises or keeps as it is.
func traceID(r *rand.Rand, width int) string {
	switch r.IntN(60) {
	case 0:
		return strings.ToUpper(traceHex(r, width))
	case 1:
		return traceHex(r, width/2) // a 64-bit trace id, or a short one
	case 2:
		return strings.Repeat("0", width)
	case 3:
		return traceHex(r, width+8) // too long: kept as it is
	case 4:
		return "AQIDBAUGBwg="
	case 5:
		return traceHex(r, 3)
	case 6:
		return ""
	}
	return traceHex(r, width)
}

// zipkinGen writes a Zipkin v2 document of varied shapes: the usual span
// and the unusual-but-valid ones (escapes, numbers as strings, floats,
// missing and null members, duplicate keys, nested tags, odd kinds,
// endpoints of every shape, shared halves, annotations), in an array, an
// array of arrays, arrays per line or lone objects per line, compact or
// pretty-printed.
func zipkinGen(seed uint64, spans int) []byte {
	r := rand.New(rand.NewPCG(seed, 9))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	// usual picks from the usual values, and one time in 12 from the odd.
	usual := func(usual []string, odd ...string) string {
		if r.IntN(12) == 0 {
			return pick(odd...)
		}
		return pick(usual...)
	}
	micros := func(n int64) string {
		switch r.IntN(40) {
		case 0:
			return `"` + fmt.Sprint(n) + `"`
		case 1:
			return fmt.Sprint(n) + ".5"
		case 2:
			return pick(`"x"`, `-5`, `1e3`, `" 12"`, `null`, `true`, `{}`, `"1.5s"`, `99999999999999999`, `""`)
		}
		return fmt.Sprint(n)
	}
	endpoint := func() string {
		var m []string
		if r.IntN(5) > 0 {
			m = append(m, `"serviceName":`+usual([]string{`"api"`, `"db"`, `"cache"`, `"café"`}, `""`, `"caf\u00e9"`, `5`, `null`))
		}
		if r.IntN(2) == 0 {
			m = append(m, `"ipv4":`+pick(`"10.0.0.1"`, `"192.168.1.9"`, `""`))
		}
		if r.IntN(4) == 0 {
			m = append(m, `"ipv6":"::1"`)
		}
		if r.IntN(2) == 0 {
			m = append(m, `"port":`+pick(`8080`, `"9090"`, `0`, `"0"`, `true`))
		}
		if r.IntN(20) == 0 {
			m = append(m, `"serviceName":"again"`)
		}
		return "{" + strings.Join(m, ",") + "}"
	}
	tags := func() string {
		var m []string
		for range r.IntN(6) {
			k := usual([]string{"http.status_code", "http.method", "http.path", "error", "peer.service", "server.address", "grpc.status_code",
				"retry.attempt", "timeout_ms", "sampling.weight", "otel.status_code", "span.kind", "zone", "", "café"}, "caf\u00e9", `a\"b`)
			v := usual([]string{`"200"`, `"503"`, `"GET"`, `""`, `"/users/{id}"`, `"DEADLINE_EXCEEDED"`, `"2"`, `"1.5"`, `"ERROR"`,
				`"java.net.SocketTimeoutException"`, `5`, `true`, `null`, `"503 Service Unavailable"`, `"x"`}, `"x\ny"`, `"a\u00e9"`)
			if r.IntN(100) == 0 {
				v = pick(`{"a":1}`, `["x"]`)
			}
			m = append(m, `"`+k+`":`+v)
		}
		return "{" + strings.Join(m, ",") + "}"
	}
	spanJSON := func() string {
		var m []string
		add := func(s string) { m = append(m, s) }
		add(`"traceId":"` + traceID(r, 32) + `"`)
		if r.IntN(4) > 0 {
			add(`"parentId":"` + traceID(r, 16) + `"`)
		}
		add(`"id":"` + traceID(r, 16) + `"`)
		if r.IntN(10) > 0 {
			add(`"kind":` + usual([]string{`"CLIENT"`, `"SERVER"`, `"PRODUCER"`, `"CONSUMER"`, `"client"`, `"SPAN_KIND_SERVER"`, `null`}, `"INTERNAL"`, `"SIDEWAYS"`, `3`))
		}
		add(`"name":` + usual([]string{`"get"`, `"post /users"`, `7`, `null`, `"café"`}, `"op\"x"`, `"caf\u00e9"`, `{}`))
		start := int64(1_700_000_000_000_000) + r.Int64N(1e9)
		if r.IntN(20) > 0 {
			add(`"timestamp":` + micros(start))
		}
		if r.IntN(20) > 0 {
			add(`"duration":` + micros(1+r.Int64N(2e6)))
		}
		if r.IntN(6) > 0 {
			add(`"localEndpoint":` + endpoint())
		}
		if r.IntN(3) == 0 {
			add(`"remoteEndpoint":` + endpoint())
		}
		if r.IntN(10) == 0 {
			add(`"annotations":[{"timestamp":` + fmt.Sprint(start) + `,"value":"ws"},{"timestamp":1,"value":"wr"}]`)
		}
		if r.IntN(3) > 0 {
			add(`"tags":` + tags())
		}
		if r.IntN(8) == 0 {
			add(`"shared":` + pick("true", "false", `"true"`))
		}
		if r.IntN(10) == 0 {
			add(`"debug":true`)
		}
		if r.IntN(80) == 0 {
			add(pick(`"duration":5`, `"id":"00000000000000ff"`, `"tags":{"x":"y"}`, `"name":"dup"`)) // a duplicate
		}
		r.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
		sep := ","
		if r.IntN(8) == 0 {
			sep = ",\n  "
		}
		return "{" + strings.Join(m, sep) + "}"
	}
	elem := func() string {
		switch r.IntN(100) {
		case 0:
			return pick(`5`, `"s"`, `null`, `true`, `[5]`, `{}`)
		}
		return spanJSON()
	}
	var b strings.Builder
	switch r.IntN(4) {
	case 0: // one array
		var e []string
		for range spans {
			e = append(e, elem())
		}
		b.WriteString("[" + strings.Join(e, pick(",", ",\n", " , ")) + "]\n")
	case 1: // an array of traces
		var traces []string
		for n := 0; n < spans; {
			var e []string
			for range 1 + r.IntN(5) {
				e = append(e, elem())
				n++
			}
			traces = append(traces, "["+strings.Join(e, pick(",", ",\n"))+"]")
		}
		b.WriteString("[" + strings.Join(traces, ",\n") + "]")
	case 2: // an array per line
		for n := 0; n < spans; {
			var e []string
			for range 1 + r.IntN(4) {
				e = append(e, elem())
				n++
			}
			b.WriteString("[" + strings.Join(e, ",") + "]\n")
		}
	default: // a span per line
		for range spans {
			b.WriteString(elem() + "\n")
		}
	}
	return []byte(b.String())
}

// TestZipkinFastSame pins the fast path to the general reader on
// generated documents of every shape, on mutations of them, and on the
// Zipkin fixtures.
func TestZipkinFastSame(t *testing.T) {
	total, taken := 0, 0
	for seed := range uint64(60) {
		in := zipkinGen(seed, 30)
		taken += fastCount(func() { total += traceSame(t, in, record.Options{Format: "zipkin"}) })
		if seed%5 == 0 {
			traceSame(t, in, record.Options{Format: "zipkin", HopBy: "attr:error"})
			traceSame(t, in, record.Options{Format: "zipkin", HopBy: "attr:http.path"})
			traceSame(t, in, record.Options{Format: "zipkin", MaxRecord: 300})
			traceSame(t, in, record.Options{Format: "zipkin", MaxErrors: 3})
		}
	}
	// taken counts both borrowed and not.
	if total < 900 || taken < total/2 || taken > 2*total*9/10 {
		t.Fatalf("%d spans read from the generated documents, %d of them (×2) by the fast path: the comparison proves little", total, taken)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 600 {
		traceSame(t, otlpMutate(r, zipkinGen(uint64(i), 4)), record.Options{Format: "zipkin"})
	}
	// Elements across the read buffer's end and past its size.
	big := zipkinGen(7, 4000)
	traceSame(t, big, record.Options{Format: "zipkin"})
	// The real files (testdata/real's, and ../shared/data's with TAILSCOPE_REALDATA=full)
	// and the broken-input fixtures.
	dirs := []string{"../../../testdata/bad/zipkin"}
	for _, root := range realdata.Roots(t) {
		dirs = append(dirs, filepath.Join(root, "zipkin"))
	}
	for _, dir := range dirs {
		m, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, f := range m {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var n int
			taken := fastCount(func() { n = traceSame(t, b, record.Options{Format: "zipkin"}) })
			t.Logf("%s: %d spans, %d read by the fast path", f, n, taken/2)
		}
	}
}

// TestZipkinFastTakesTheUsualSpan checks that the fast path is the one
// that reads a plain span and a trace (the differential test alone would
// pass with a fast path that always declines).
func TestZipkinFastTakesTheUsualSpan(t *testing.T) {
	sp := `{"traceId":"0102030405060708","parentId":"2122232425262728","id":"1112131415161718","kind":"CLIENT","name":"get",` +
		`"timestamp":1000,"duration":250,"localEndpoint":{"serviceName":"api","ipv4":"10.0.0.1","port":8080},` +
		`"remoteEndpoint":{"serviceName":"db","port":0},"tags":{"http.status_code":"503","zone":"eu","error":"boom"}}`
	for _, in := range []string{sp, "[" + sp + "," + sp + "]"} {
		var got []span.Span
		src := record.NewSource("in", bufioReader(in+"\n"), nil, &record.Options{MaxRecord: record.DefaultMaxRecord, MaxErrors: 20, Borrowed: true}, record.NewStats(nil), record.SinkFunc(func(sp *span.Span) { got = append(got, *sp) }))
		w := newWalker(src)
		if c, err := w.top(); err != nil || c != in[0] {
			t.Fatal(c, err)
		}
		z := &zipkinFast{w: w}
		_, n := w.fastInPlace(true, z.decode)
		if n != len(in) || z.n != strings.Count(in, `"traceId"`) {
			t.Fatalf("the fast path read %d of %d bytes, %d spans", n, len(in), z.n)
		}
		if err := z.elem(); err != nil {
			t.Fatal(err)
		}
		g := got[len(got)-1]
		if g.TraceID != "00000000000000000102030405060708" || g.Service != "api" || g.Code != 503 || g.Status != span.Error || g.Peer != "db" ||
			g.Kind != "client" || g.Start != 1_000_000 || g.Duration != 250_000 ||
			fmt.Sprint(g.Attrs) != "[{net.host.ip 10.0.0.1} {net.host.port 8080} {peer.service db} {http.status_code 503} {zone eu}]" {
			t.Errorf("got %+v", g)
		}
		if w.s.off != int64(len(in)) || w.index != int64(strings.Count(in, `"traceId"`)) {
			t.Errorf("walker at byte %d index %d after the element", w.s.off, w.index)
		}
	}
}

func FuzzZipkinFast(f *testing.F) {
	for seed := range uint64(8) {
		f.Add(zipkinGen(seed, 3))
	}
	m, _ := filepath.Glob("../../../testdata/bad/zipkin/*.json")
	for _, p := range m {
		if b, err := os.ReadFile(p); err == nil && len(b) < 1<<16 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		traceSame(t, data, record.Options{Format: "zipkin", MaxRecord: 1 << 12})
	})
}

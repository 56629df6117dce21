package tracejson

import (
	"bufio"
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

// The ways the OTLP reader can read: the general path alone, the fast
// paths on one goroutine, and with parallel workers (over small blocks, so
// that an input is many blocks).
const (
	otlpGeneral = iota
	otlpFastSeq
	otlpFastPar
)

// otlpRead reads input as OTLP one of those ways and returns the spans
// (deep copies: borrowed strings die with the call) and stats.
func otlpRead(t testing.TB, input []byte, opt record.Options, mode int) ([]span.Span, *record.Stats, error) {
	t.Helper()
	defer func(was bool, workers, lb int) {
		otlpFastEnabled, otlpWorkersSet, otlpLineBuffer = was, workers, lb
	}(otlpFastEnabled, otlpWorkersSet, otlpLineBuffer)
	otlpFastEnabled = mode != otlpGeneral
	otlpWorkersSet = 1
	if mode == otlpFastPar {
		// Lines over the limit end the parallel reading (some generated
		// lines are longer, most shorter).
		otlpWorkersSet, opt.Paths.BlockSize, otlpLineBuffer = 2, 512, 6000
	}
	if opt.Format == "" {
		opt.Format = "otlp"
	}
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

// otlpStatsText is everything a report takes from the read statistics.
func otlpStatsText(st *record.Stats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "read %d used %d skipped %d %v filtered %d %v ignored %d %v\n", st.Read, st.Used, st.Skipped, st.SkippedByReason,
		st.Filtered, st.FilteredByReason, st.Ignored, st.IgnoredByField)
	for _, e := range st.Errors {
		fmt.Fprintln(&b, "error", e.Error())
	}
	for _, e := range st.IgnoredExamples {
		fmt.Fprintln(&b, "ignored", e.Error())
	}
	for _, n := range st.Notes {
		fmt.Fprintln(&b, "note", n)
	}
	return b.String()
}

// otlpSame reads input every way, with and without borrowed spans, and
// fails on any difference in spans, attributes, skips, positions or counts
// between the general path and the fast ones.
func otlpSame(t testing.TB, input []byte, opt record.Options) (spans int) {
	t.Helper()
	for _, borrowed := range []bool{false, true} {
		opt.Borrowed = borrowed
		gs, gst, gerr := otlpRead(t, input, opt, otlpGeneral)
		for _, mode := range []int{otlpFastSeq, otlpFastPar} {
			fs, fst, ferr := otlpRead(t, input, opt, mode)
			if fmt.Sprint(gerr) != fmt.Sprint(ferr) {
				t.Fatalf("mode %d borrowed=%v: errors differ: general %v, fast %v\ninput %q", mode, borrowed, gerr, ferr, input)
			}
			if a, b := otlpStatsText(gst), otlpStatsText(fst); a != b {
				t.Fatalf("mode %d borrowed=%v: stats differ:\ngeneral %s\nfast    %s\ninput %.3000q", mode, borrowed, a, b, input)
			}
			if len(gs) != len(fs) {
				t.Fatalf("mode %d borrowed=%v: %d spans general, %d fast", mode, borrowed, len(gs), len(fs))
			}
			for i := range gs {
				if !reflect.DeepEqual(gs[i], fs[i]) {
					t.Fatalf("mode %d borrowed=%v: span %d differs:\ngeneral %+v\nfast    %+v\ninput %.3000q", mode, borrowed, i, gs[i], fs[i], input)
				}
			}
		}
		spans = len(gs)
	}
	return spans
}

// otlpGen writes OTLP JSON lines of varied shapes: the collector's usual
// line and the variants the general reader knows (snake_case, numbers for
// times, enum names, base64 and short ids, resource after its spans, a
// scope or none, attribute values of every type, statuses old and new,
// events, nulls, escapes, whitespace), so that both paths meet both
// kinds of input.
func otlpGen(seed uint64, lines int) []byte {
	r := rand.New(rand.NewPCG(seed, 18))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	hex := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			fmt.Fprintf(&b, "%016x", r.Uint64())
		}
		return b.String()[:n]
	}
	attrVal := func() string {
		switch r.IntN(12) {
		case 0:
			return `{"intValue":"` + fmt.Sprint(r.IntN(600)) + `"}`
		case 1:
			return `{"intValue":` + fmt.Sprint(r.IntN(600)) + `}`
		case 2:
			return `{"doubleValue":` + pick("1.5", "800", "1e3", "-0.25") + `}`
		case 3:
			return `{"boolValue":` + pick("true", "false") + `}`
		case 4:
			return `{"arrayValue":{"values":[{"stringValue":"a"}]}}`
		case 5:
			return `{"kvlistValue":{"values":[]}}`
		case 6:
			return `{"bytesValue":"AAE="}`
		case 7:
			return `{"stringValue":"` + pick(`a\"b`, `caf\u00e9`, `x y`, "") + `"}`
		case 8:
			return pick(`{}`, `{"stringValue":null}`, `{"string_value":"s"}`, `{"int_value":"7"}`)
		}
		return `{"stringValue":"` + pick("eu-1", "pod-3", "/users/{id}", "GET", "db") + `"}`
	}
	attrKey := func() string {
		return pick("http.response.status_code", "http.status_code", "rpc.grpc.status_code", "peer.service", "server.address",
			"http.request.resend_count", "retry.attempt", "timeout_ms", "sampling.weight", "error", "error.type", "otel.status_code",
			"k8s.pod.name", "zone", "http.route", "", "tier")
	}
	attrs := func(n int) string {
		var a []string
		for range n {
			if r.IntN(30) == 0 {
				a = append(a, pick(`{"key":"k"}`, `{"value":{"stringValue":"v"}}`, `{"key":1,"value":{}}`, `"x"`, `{"key":"k","value":{"stringValue":"v"},"type":1}`))
				continue
			}
			a = append(a, `{"key":"`+attrKey()+`","value":`+attrVal()+`}`)
		}
		return "[" + strings.Join(a, ",") + "]"
	}
	spanJSON := func() string {
		var m []string
		snake := r.IntN(8) == 0
		k := func(camel, sn string) string {
			if snake {
				return `"` + sn + `"`
			}
			return `"` + camel + `"`
		}
		start := int64(1_700_000_000_000_000_000) + r.Int64N(1e12)
		end := start + r.Int64N(2e9)
		id := func(n int) string {
			switch r.IntN(20) {
			case 0:
				return strings.ToUpper(hex(n))
			case 1:
				return "AQIDBAUGBwg="
			case 2:
				return hex(n - 2)
			case 3:
				return strings.Repeat("0", n)
			}
			return hex(n)
		}
		m = append(m, k("traceId", "trace_id")+`:"`+id(32)+`"`, k("spanId", "span_id")+`:"`+id(16)+`"`)
		if r.IntN(4) > 0 {
			m = append(m, k("parentSpanId", "parent_span_id")+`:"`+id(16)+`"`)
		}
		m = append(m, `"name":`+pick(`"GET /a"`, `"query"`, `"op\"x"`, `12`, `null`))
		m = append(m, `"kind":`+pick("1", "2", "3", "4", "5", "0", `"SPAN_KIND_CLIENT"`, "9", `"weird"`))
		switch r.IntN(30) {
		case 0: // no end
		case 1:
			m = append(m, k("startTimeUnixNano", "start_time_unix_nano")+`:"`+fmt.Sprint(end)+`"`)
		default:
			if r.IntN(5) == 0 {
				m = append(m, k("startTimeUnixNano", "start_time_unix_nano")+`:`+fmt.Sprint(start))
			} else {
				m = append(m, k("startTimeUnixNano", "start_time_unix_nano")+`:"`+fmt.Sprint(start)+`"`)
			}
		}
		if r.IntN(30) > 0 {
			m = append(m, k("endTimeUnixNano", "end_time_unix_nano")+`:"`+fmt.Sprint(end)+`"`)
		}
		if r.IntN(3) > 0 {
			m = append(m, `"attributes":`+attrs(r.IntN(5)))
		}
		m = append(m, `"status":`+pick(`{}`, `{"code":2}`, `{"code":1}`, `{"code":2,"message":"context deadline exceeded"}`,
			`{"code":"STATUS_CODE_ERROR"}`, `{"deprecatedCode":4}`, `{"code":7}`, `{"code":"x"}`, `null`, `{}`, `{}`))
		if r.IntN(6) == 0 {
			m = append(m, `"events":`+pick(`[]`, `[{"name":"exception","attributes":[{"key":"exception.type","value":{"stringValue":"java.net.SocketTimeoutException"}}]}]`, `[{"name":"log"}]`))
		}
		if r.IntN(6) == 0 {
			m = append(m, pick(`"flags":257`, `"droppedAttributesCount":0`, `"links":[]`, `"links":[{"traceId":"ab"}]`, `"traceState":"ot=th:8"`, `"traceState":5`, `"x":{"y":[1,{"z":null}]}`))
		}
		if r.IntN(50) == 0 {
			m = append(m, m[r.IntN(len(m))]) // a repeated member
		}
		r.Shuffle(len(m), func(i, j int) {
			if r.IntN(10) == 0 {
				m[i], m[j] = m[j], m[i]
			}
		})
		sep := pick(",", ",", ",", ", ", ",\t")
		return "{" + strings.Join(m, sep) + "}"
	}
	var b strings.Builder
	for range lines {
		var rs []string
		for range 1 + r.IntN(3) {
			res := `"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"` + pick("svc", "db", "gw") + `"}}` +
				pick("", `,{"key":"k8s.pod.name","value":{"stringValue":"p-1"}}`, `,{"key":"tier","value":{"stringValue":"edge"}}`) + `]}`
			if r.IntN(20) == 0 {
				res = `"resource":` + pick("null", `{"attributes":[{"key":"service.name","value":{"stringValue":1}}]}`, `{}`)
			}
			var scopes []string
			for range 1 + r.IntN(2) {
				var spans []string
				for range r.IntN(5) {
					spans = append(spans, spanJSON())
				}
				scope := pick(`"scope":{"name":"lib","version":"1.0"},`, `"scope":{},`, ``, `"instrumentationLibrary":{"name":"old"},`)
				scopes = append(scopes, "{"+scope+`"spans":[`+strings.Join(spans, ",")+"]}")
			}
			ss := pick(`"scopeSpans"`, `"scopeSpans"`, `"scope_spans"`, `"instrumentationLibrarySpans"`) + `:[` + strings.Join(scopes, ",") + `]`
			if r.IntN(6) == 0 {
				rs = append(rs, "{"+ss+","+res+"}")
			} else {
				rs = append(rs, "{"+res+","+ss+"}")
			}
		}
		doc := pick(`{"resourceSpans":[`, `{"resourceSpans":[`, `{"resource_spans":[`, `{"batches":[`) + strings.Join(rs, ",") + "]}"
		switch r.IntN(25) {
		case 0:
			doc = `{"result":` + doc + `}`
		case 1:
			doc = " " + doc
		case 2:
			doc += " \t"
		case 3:
			doc += "\r"
		case 4:
			doc = `{"hop":"db","duration_ms":3}`
		case 5:
			doc = ""
		}
		b.WriteString(doc + "\n")
	}
	return []byte(b.String())
}

// otlpMutate breaks input in small ways: bytes dropped, inserted or
// repeated, lines cut.
func otlpMutate(r *rand.Rand, in []byte) []byte {
	out := append([]byte(nil), in...)
	for range 1 + r.IntN(3) {
		if len(out) == 0 {
			break
		}
		i := r.IntN(len(out))
		switch r.IntN(4) {
		case 0:
			out = append(out[:i], out[i+1:]...)
		case 1:
			c := `{}[],:"\ 0an` + "\n"
			out = append(out[:i], append([]byte{c[r.IntN(len(c))]}, out[i:]...)...)
		case 2:
			j := min(len(out), i+1+r.IntN(40))
			out = append(out[:j], append(append([]byte(nil), out[i:j]...), out[j:]...)...)
		case 3:
			if j := bytes.IndexByte(out[i:], '\n'); j >= 0 {
				out = append(out[:i], out[i+j:]...)
			}
		}
	}
	return out
}

// TestOTLPFastSame pins the fast paths to the general reader on generated
// lines of every shape, on mutations of them, and on the trace fixtures.
func TestOTLPFastSame(t *testing.T) {
	total := 0
	for seed := range uint64(40) {
		in := otlpGen(seed, 20)
		total += otlpSame(t, in, record.Options{})
		if seed%4 == 0 {
			otlpSame(t, in, record.Options{HopBy: "attr:tier"})
			otlpSame(t, in, record.Options{MaxRecord: 300})
			otlpSame(t, in, record.Options{MaxErrors: 3})
		}
	}
	if total < 500 {
		t.Fatalf("only %d spans read from the generated lines: the comparison proves little", total)
	}
	r := rand.New(rand.NewPCG(5, 5))
	for i := range 600 {
		otlpSame(t, otlpMutate(r, otlpGen(uint64(i), 3)), record.Options{})
	}
	// One big document, pretty-printed: the span-level fast path.
	big := bytes.ReplaceAll(otlpGen(99, 1), []byte(`,"`), []byte(",\n  \""))
	otlpSame(t, big, record.Options{})
	// The real files of these folders: testdata/real's, and
	// ../shared/data's with TAILSCOPE_REALDATA=full.
	read := 0
	for _, root := range realdata.Roots(t) {
		for dir, format := range map[string]string{"otel-proto": "otlp", "jaeger": "jaeger"} {
			m, _ := filepath.Glob(filepath.Join(root, dir, "*.json"))
			for _, f := range m {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				otlpSame(t, b, record.Options{Format: format})
				read++
			}
		}
	}
	if read == 0 {
		t.Error("no real OTLP or Jaeger file read")
	}
}

// TestOTLPFastTakesTheUsualLine checks that the fast path is the one that
// reads a collector line (the differential test alone would pass with a
// fast path that always declines).
func TestOTLPFastTakesTheUsualLine(t *testing.T) {
	line := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}},{"key":"k8s.pod.name","value":{"stringValue":"p-1"}}]},` +
		`"scopeSpans":[{"scope":{"name":"lib","version":"1"},"spans":[` +
		`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","parentSpanId":"2122232425262728","flags":257,"name":"GET","kind":3,` +
		`"startTimeUnixNano":"1000","endTimeUnixNano":"3000","attributes":[{"key":"http.response.status_code","value":{"intValue":"503"}},` +
		`{"key":"peer.service","value":{"stringValue":"db"}}],"status":{"code":2}}]}]}]}` + "\n"
	var got []span.Span
	src := record.NewSource("in", bufioReader(line), nil, &record.Options{MaxRecord: record.DefaultMaxRecord, MaxErrors: 20, Borrowed: true}, record.NewStats(nil), record.SinkFunc(func(sp *span.Span) { got = append(got, *sp) }))
	w := newWalker(src)
	if c, err := w.top(); err != nil || c != '{' {
		t.Fatal(c, err)
	}
	if !w.otlpFastLine(&otlpFastState{br: src.R}) {
		t.Fatal("the fast path declined a collector line")
	}
	if len(got) != 1 || got[0].Code != 503 || got[0].Status != span.Error || got[0].Peer != "db" || got[0].Kind != "client" ||
		got[0].Duration != 2000 || fmt.Sprint(got[0].Attrs) != "[{k8s.pod.name p-1} {otel.scope.name lib} {otel.scope.version 1} {http.response.status_code 503} {peer.service db}]" {
		t.Errorf("got %+v", got)
	}
	if w.s.off != int64(len(line)) || w.s.line != 2 || w.index != 1 {
		t.Errorf("walker at byte %d line %d index %d after the line", w.s.off, w.s.line, w.index)
	}
}

func FuzzOTLPFast(f *testing.F) {
	for seed := range uint64(6) {
		f.Add(otlpGen(seed, 2))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		otlpSame(t, data, record.Options{MaxRecord: 1 << 12})
	})
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReaderSize(strings.NewReader(s), 1<<16) }

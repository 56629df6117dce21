package tracejson

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/internal/realdata"
)

// jaegerGen writes Jaeger query JSON of varied shapes: the usual trace and
// the unusual-but-valid ones (escapes, numbers as strings, missing and
// null members, both spellings and duplicates, tags of every type and
// malformed ones, references of both kinds, parentSpanID, embedded and
// unknown processes, duplicate process ids), in one envelope, an envelope
// per line, a top-level array, compact or pretty-printed.
func jaegerGen(seed uint64, traces int) []byte {
	r := rand.New(rand.NewPCG(seed, 10))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	usual := func(usual []string, odd ...string) string {
		if r.IntN(40) == 0 {
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
			return pick(`"x"`, `-5`, `1e3`, `null`, `true`, `"0.000123s"`, `"2019-10-17T15:39:34.777373Z"`, `99999999999999999`)
		}
		return fmt.Sprint(n)
	}
	tag := func() string {
		if r.IntN(60) == 0 {
			return pick(`"x"`, `{"key":5,"value":"v"}`, `{"value":"v"}`, `{"key":"k"}`, `{"key":"k","value":{"a":1}}`, `{"key":"k","key":"j","value":"v"}`)
		}
		k := usual([]string{"http.status_code", "http.method", "http.url", "error", "span.kind", "peer.service", "component",
			"grpc.status_code", "retry.attempt", "otel.status_code", "sampler.type", "zone", "café"}, "", `a\"b`, "caf\\u00e9")
		typ, v := "string", usual([]string{`"200"`, `"GET"`, `"/api/x"`, `"server"`, `"client"`, `""`, `"true"`, `"UNAVAILABLE"`, `"ERROR"`}, `"x\ny"`, `"a\u00e9"`)
		switch r.IntN(6) {
		case 0:
			typ, v = "int64", pick(`200`, `503`, `"504"`, `0`)
		case 1:
			typ, v = "bool", pick(`true`, `false`)
		case 2:
			typ, v = "float64", pick(`1`, `0.5`, `1e3`)
		case 3:
			if r.IntN(4) == 0 {
				typ, v = pick("binary", "BINARY"), `"AAE="`
			}
		}
		m := []string{`"key":"` + k + `"`, `"value":` + v}
		if r.IntN(10) > 0 {
			m = append(m, `"type":"`+typ+`"`)
		}
		r.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
		return "{" + strings.Join(m, ",") + "}"
	}
	tags := func(n int) string {
		var t []string
		for range n {
			t = append(t, tag())
		}
		return "[" + strings.Join(t, ",") + "]"
	}
	process := func() string {
		var m []string
		if r.IntN(10) > 0 {
			m = append(m, `"serviceName":`+usual([]string{`"frontend"`, `"db"`, `"redis"`, `"café"`}, `5`, `null`, `"caf\u00e9"`))
		}
		if r.IntN(4) > 0 {
			m = append(m, `"tags":`+usual([]string{tags(r.IntN(4))}, `null`, `{}`))
		}
		return "{" + strings.Join(m, ",") + "}"
	}
	trace := func() string {
		tid := traceID(r, 32)
		nproc := 1 + r.IntN(3)
		var spans []string
		var ids []string
		for range 1 + r.IntN(6) {
			if r.IntN(100) == 0 {
				spans = append(spans, pick(`5`, `null`, `"s"`, `[]`))
				continue
			}
			var m []string
			add := func(s string) { m = append(m, s) }
			id := traceID(r, 16)
			add(usual([]string{`"traceID"`}, `"traceId"`) + `:"` + tid + `"`)
			add(usual([]string{`"spanID"`}, `"spanId"`) + `:"` + id + `"`)
			add(`"flags":1`)
			add(`"operationName":` + usual([]string{`"GET /api"`, `"query"`, `"HTTP GET"`, `7`}, `null`, `"op\"x"`, `{}`))
			switch {
			case len(ids) > 0 && r.IntN(8) > 0:
				refs := []string{`{"refType":"` + usual([]string{"CHILD_OF", "FOLLOWS_FROM"}, "child_of", "", "OTHER") + `","traceID":"` + tid + `","spanID":"` + ids[r.IntN(len(ids))] + `"}`}
				if r.IntN(10) == 0 {
					refs = append(refs, `{"refType":"FOLLOWS_FROM","spanID":"`+traceID(r, 16)+`"}`)
				}
				if r.IntN(40) == 0 {
					refs = append(refs, pick(`5`, `{"spanID":7}`, `{"refType":null}`))
				}
				add(`"references":[` + strings.Join(refs, ",") + `]`)
			case r.IntN(2) == 0:
				add(`"references":[]`)
			}
			if len(ids) > 0 && r.IntN(6) == 0 {
				add(`"parentSpanID":"` + ids[0] + `"`)
			}
			start := int64(1_571_326_774_777_373) + r.Int64N(1e9)
			if r.IntN(20) > 0 {
				add(`"startTime":` + micros(start))
			}
			if r.IntN(20) > 0 {
				add(`"duration":` + micros(1+r.Int64N(2e6)))
			}
			if r.IntN(5) > 0 {
				add(`"tags":` + usual([]string{tags(r.IntN(7))}, `null`, `{}`, `"x"`))
			}
			add(`"logs":[{"timestamp":` + fmt.Sprint(start) + `,"fields":[{"key":"event","type":"string","value":"x"}]}]`)
			switch r.IntN(12) {
			case 0:
				add(`"process":` + process())
			case 1:
				add(`"processID":"p9"`)
			case 2:
			default:
				add(`"processID":"p` + fmt.Sprint(1+r.IntN(nproc)) + `"`)
			}
			add(`"warnings":null`)
			if r.IntN(80) == 0 {
				add(pick(`"duration":5`, `"traceId":"aa"`, `"tags":[]`, `"processID":"p1"`))
			}
			r.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
			spans = append(spans, "{"+strings.Join(m, usual([]string{","}, ",\n        "))+"}")
			ids = append(ids, id)
		}
		var procs []string
		for i := range nproc {
			procs = append(procs, `"p`+fmt.Sprint(i+1)+`":`+process())
		}
		if r.IntN(30) == 0 {
			procs = append(procs, `"p1":`+process())
		}
		m := []string{`"traceID":"` + tid + `"`, `"spans":[` + strings.Join(spans, usual([]string{","}, ",\n      ")) + `]`}
		if r.IntN(12) > 0 {
			m = append(m, `"processes":`+usual([]string{"{" + strings.Join(procs, ",") + "}"}, `null`, `[]`, `{"p1":5}`))
		}
		m = append(m, `"warnings":null`)
		r.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
		return "{" + strings.Join(m, ",") + "}"
	}
	elem := func() string {
		if r.IntN(100) == 0 {
			return pick(`5`, `"s"`, `null`, `[]`)
		}
		return trace()
	}
	var b strings.Builder
	switch r.IntN(3) {
	case 0: // one envelope
		var e []string
		for range traces {
			e = append(e, elem())
		}
		b.WriteString(`{"data":[` + strings.Join(e, pick(",", ",\n")) + `],"total":0,"limit":0,"offset":0,"errors":null}` + "\n")
	case 1: // an envelope per line
		for range traces {
			b.WriteString(`{"data":[` + elem() + `]}` + "\n")
		}
	default: // a top-level array
		var e []string
		for range traces {
			e = append(e, elem())
		}
		b.WriteString("[" + strings.Join(e, ",\n") + "]")
	}
	return []byte(b.String())
}

// TestJaegerFastSame pins the fast path to the general reader on
// generated documents of every shape, on mutations of them, and on the
// Jaeger fixtures.
func TestJaegerFastSame(t *testing.T) {
	total, taken := 0, 0
	for seed := range uint64(60) {
		in := jaegerGen(seed, 8)
		taken += fastCount(func() { total += traceSame(t, in, record.Options{Format: "jaeger"}) })
		if seed%5 == 0 {
			traceSame(t, in, record.Options{Format: "jaeger", HopBy: "attr:http.method"})
			traceSame(t, in, record.Options{Format: "jaeger", HopBy: "attr:zone"})
			traceSame(t, in, record.Options{Format: "jaeger", MaxRecord: 600})
			traceSame(t, in, record.Options{Format: "jaeger", MaxErrors: 3})
		}
	}
	// taken counts both borrowed and not.
	if total < 900 || taken < total/2 || taken > 2*total*9/10 {
		t.Fatalf("%d spans read from the generated documents, %d of them (×2) by the fast path: the comparison proves little", total, taken)
	}
	r := rand.New(rand.NewPCG(5, 7))
	for i := range 600 {
		traceSame(t, otlpMutate(r, jaegerGen(uint64(i), 2)), record.Options{Format: "jaeger"})
	}
	// Traces across the read buffer's end and past its size.
	traceSame(t, jaegerGen(7, 3000), record.Options{Format: "jaeger"})
	// The real files (testdata/real's, and ../shared/data's with TAILSCOPE_REALDATA=full)
	// and the broken-input fixtures.
	dirs := []string{"../../../testdata/bad/jaeger"}
	for _, root := range realdata.Roots(t) {
		dirs = append(dirs, filepath.Join(root, "jaeger"))
	}
	for _, dir := range dirs {
		m, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, f := range m {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var n int
			taken := fastCount(func() { n = traceSame(t, b, record.Options{Format: "jaeger"}) })
			t.Logf("%s: %d spans, %d read by the fast path", f, n, taken/2)
		}
	}
}

func FuzzJaegerFast(f *testing.F) {
	for seed := range uint64(8) {
		f.Add(jaegerGen(seed, 2))
	}
	m, _ := filepath.Glob("../../../testdata/*/jaeger/*.json")
	for _, p := range m {
		if b, err := os.ReadFile(p); err == nil && len(b) < 1<<16 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		traceSame(t, data, record.Options{Format: "jaeger", MaxRecord: 1 << 12})
	})
}

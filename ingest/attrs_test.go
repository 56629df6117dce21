package ingest

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// readAttrs reads in both ways a reader hands out spans: owned (each kept
// span as the reader gave it, its Attrs kept past the next span) and
// borrowed (copied during the emit, as a consumer that keeps spans must),
// fails unless both give the same spans, and returns them.
func readAttrs(t *testing.T, name, in string, opt record.Options) []span.Span {
	t.Helper()
	var owned, borrowed []span.Span
	if _, err := ReadStream(name, strings.NewReader(in), opt, SinkFunc(func(s *span.Span) { owned = append(owned, *s) })); err != nil {
		t.Fatal(err)
	}
	opt.Borrowed = true
	if _, err := ReadStream(name, strings.NewReader(in), opt, SinkFunc(func(s *span.Span) { borrowed = append(borrowed, cloneSpan(s)) })); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(owned, borrowed) {
		t.Fatalf("owned and borrowed spans differ:\n%+v\n%+v", owned, borrowed)
	}
	return owned
}

// cloneSpan copies a borrowed span's strings.
func cloneSpan(s *span.Span) span.Span {
	c := *s
	c.TraceID, c.SpanID, c.ParentID = strings.Clone(s.TraceID), strings.Clone(s.SpanID), strings.Clone(s.ParentID)
	c.Attrs = nil
	for _, a := range s.Attrs {
		c.Attrs = append(c.Attrs, span.Attr{Key: strings.Clone(a.Key), Value: strings.Clone(a.Value)})
	}
	return c
}

func attrList(kv ...string) []span.Attr {
	var out []span.Attr
	for i := 0; i < len(kv); i += 2 {
		out = append(out, span.Attr{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

// Which fields of a flat JSON line become attributes, in which order.
func TestFlatAttrs(t *testing.T) {
	long := strings.Repeat("x", record.MaxAttrValue+1)
	for _, tc := range []struct {
		name, line string
		opt        record.Options
		want       []span.Attr
		check      func(*span.Span) bool
	}{
		{"fields no span field takes, scalars only",
			`{"hop":"a","duration_ms":1,"pod":"p-1","zone":"eu","retries":3,"ratio":-1.5e3,"canary":true,"off":false,"note":null,"arr":[1],"obj":{"x":1},"empty":""}`,
			record.Options{}, attrList("pod", "p-1", "zone", "eu", "retries", "3", "ratio", "-1.5e3", "canary", "true", "off", "false"), nil},
		{"resource, then span attributes, then fields",
			`{"pod":"p","attributes":{"http.route":"/x","code":500},"resource":{"service.name":"api","k8s.pod.name":"api-1","attributes":{"host.name":"h1"}},"hop":"a","duration_ms":1}`,
			record.Options{}, attrList("k8s.pod.name", "api-1", "host.name", "h1", "http.route", "/x", "code", "500", "pod", "p"),
			func(s *span.Span) bool { return s.Service == "api" && s.Code == 500 }},
		{"resource.attributes, labels and tags; nested objects as dotted keys",
			`{"hop":"a","duration_ms":1,"labels":{"zone":"z1"},"tags":{"http":{"method":"GET","status":{"text":"ok"}},"list":[1,2],"n":null},"resource.attributes":{"host.name":"h"}}`,
			record.Options{}, attrList("host.name", "h", "zone", "z1", "http.method", "GET", "http.status.text", "ok"), nil},
		{"the line's own field wins over an attribute's",
			`{"code":200,"attributes":{"code":500,"duration_ms":"x"},"hop":"a","duration_ms":1}`,
			record.Options{}, attrList("code", "500", "duration_ms", "x"),
			func(s *span.Span) bool { return s.Code == 200 && s.Duration == 1e6 }},
		{"service, kind and outcome attributes are their fields only",
			`{"hop":"a","duration_ms":1,"attributes":{"error":true,"otel.status_code":"ERROR","span.kind":"client","otel.status_description":"boom","peer":"db"}}`,
			record.Options{}, attrList("peer", "db"),
			func(s *span.Span) bool { return s.Status == span.Error && s.Kind == "client" && s.Peer == "db" }},
		{"escapes, invalid UTF-8, values too long",
			"{\"hop\":\"a\",\"duration_ms\":1,\"path\":\"a\\\"b\",\"bad\":\"x\xffy\",\"big\":\"" + long + "\",\"k\\u00e9y\":1}",
			record.Options{}, attrList("path", `a"b`, "bad", "x\uFFFDy", "kéy", "1"), nil},
		{"--hop-by attr:KEY takes its key",
			`{"duration_ms":1,"pod":"p-1","zone":"eu"}`,
			record.Options{HopBy: "attr:pod"}, attrList("zone", "eu"),
			func(s *span.Span) bool { return s.Hop == "p-1" }},
		{"--map takes the mapped key, and frees the alias",
			`{"route":"r","duration_ms":1,"hop":"h2"}`,
			record.Options{Map: map[string]string{"hop": "route"}}, attrList("hop", "h2"),
			func(s *span.Span) bool { return s.Hop == "r" }},
		{"no attributes: nil",
			`{"hop":"a","duration_ms":1,"status":"ok"}`, record.Options{}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readAttrs(t, "in.jsonl", tc.line+"\n", tc.opt)
			if len(got) != 1 {
				t.Fatalf("%d spans", len(got))
			}
			if !reflect.DeepEqual(got[0].Attrs, tc.want) {
				t.Errorf("attrs %q\nwant  %q", got[0].Attrs, tc.want)
			}
			if tc.check != nil && !tc.check(&got[0]) {
				t.Errorf("span %+v", got[0])
			}
		})
	}
}

// Many lines in small blocks: the spans a reader hands on after the whole
// block keep their own attributes, borrowed or not, on both paths (a line
// with an escape takes the general one).
func TestFlatAttrsAcrossSpans(t *testing.T) {
	var in strings.Builder
	var want [][]span.Attr
	for i := range 500 {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&in, `{"hop":"a","duration_ms":1,"pod":"p-%d","zone":"z%d"}`+"\n", i, i%4)
			want = append(want, attrList("pod", fmt.Sprintf("p-%d", i), "zone", fmt.Sprintf("z%d", i%4)))
		case 1:
			fmt.Fprintf(&in, `{"hop":"a","duration_ms":1,"attributes":{"v":"\u0041%d"}}`+"\n", i)
			want = append(want, attrList("v", fmt.Sprintf("A%d", i)))
		default:
			fmt.Fprintf(&in, `{"hop":"a","duration_ms":1}`+"\n")
			want = append(want, nil)
		}
	}
	got := readAttrs(t, "in.jsonl", in.String(), record.Options{Paths: record.Paths{BlockSize: 256}})
	if len(got) != len(want) {
		t.Fatalf("%d spans", len(got))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i].Attrs, want[i]) {
			t.Fatalf("span %d: %q, want %q", i, got[i].Attrs, want[i])
		}
	}
}

// CSV: every column no span field takes, under its header, and the pod
// column that the service was read from; empty cells are absent.
func TestCSVAttrs(t *testing.T) {
	in := "TraceID,SpanID,PodName,OperationName,Duration,Zone,Version\n" +
		"t1,s1,ts-basic-service-5d8f6b7c9d-x7k2p,GET /a,10,eu-1,v2\n" +
		"t1,s2,ts-order-service-6c9f8d7b5f-q4w8z,GET /b,20,,v3\n"
	got := readAttrs(t, "in.csv", in, record.Options{Map: map[string]string{"trace_id": "TraceID", "span_id": "SpanID", "service": "PodName", "name": "OperationName", "duration_us": "Duration"}})
	want := [][]span.Attr{
		attrList("PodName", "ts-basic-service-5d8f6b7c9d-x7k2p", "Zone", "eu-1", "Version", "v2"),
		attrList("PodName", "ts-order-service-6c9f8d7b5f-q4w8z", "Version", "v3"),
	}
	if len(got) != 2 || got[0].Service != "ts-basic-service" {
		t.Fatalf("spans %+v", got)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i].Attrs, want[i]) {
			t.Errorf("span %d: %q, want %q", i, got[i].Attrs, want[i])
		}
	}
}

// Arrow: unmapped scalar columns (text, dictionary text, integers,
// floats, booleans) are attributes; a list column is not.
func TestArrowAttrs(t *testing.T) {
	mem := memory.NewGoAllocator()
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "hop", Type: arrow.BinaryTypes.String},
		{Name: "duration_ms", Type: arrow.PrimitiveTypes.Int64},
		{Name: "pod", Type: dict, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
		{Name: "ratio", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "canary", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	f := b.Fields()
	for i := range 2 {
		f[0].(*array.StringBuilder).Append("h")
		f[1].(*array.Int64Builder).Append(int64(i + 1))
		if i == 0 {
			f[2].(*array.BinaryDictionaryBuilder).AppendString("pod-a")
			f[3].(*array.Uint16Builder).Append(7)
			f[4].(*array.Float64Builder).Append(0.25)
			f[5].(*array.BooleanBuilder).Append(true)
		} else {
			for _, c := range f[2:6] {
				c.AppendNull()
			}
		}
		f[6].AppendNull()
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got := readAttrs(t, "in.arrow", buf.String(), record.Options{})
	if len(got) != 2 {
		t.Fatalf("%d spans", len(got))
	}
	if want := attrList("pod", "pod-a", "n", "7", "ratio", "0.25", "canary", "true"); !reflect.DeepEqual(got[0].Attrs, want) {
		t.Errorf("attrs %q, want %q", got[0].Attrs, want)
	}
	if got[1].Attrs != nil {
		t.Errorf("nulls gave %q", got[1].Attrs)
	}
}

// checkAttrs is what every reader owes Attrs whatever the input: keys and
// values non-empty valid text, values bounded.
func checkAttrs(t testing.TB, sp *span.Span) {
	for _, a := range sp.Attrs {
		if a.Key == "" || a.Value == "" || len(a.Value) > record.MaxAttrValue || !utf8.ValidString(a.Key) || !utf8.ValidString(a.Value) {
			t.Fatalf("bad attribute %q", a)
		}
	}
}

// BenchmarkJSONLAttrs reads lines of bench/'s shape with three fields no
// span field takes (a pod, a zone, a version): what capturing attributes
// costs, borrowed (no allocation per span) and owned.
func BenchmarkJSONLAttrs(b *testing.B) {
	base := bytes.Split(bytes.TrimSpace(benchLines(200_000)), []byte("\n"))
	var data []byte
	for i, l := range base {
		data = append(data, l[:len(l)-1]...)
		data = fmt.Appendf(data, `,"pod":"svc-%d","zone":"z%d","version":"v1.%d"}`+"\n", i%20, i%3, i%2)
	}
	for _, borrow := range []bool{false, true} {
		b.Run(fmt.Sprintf("borrowed=%v", borrow), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				if _, err := ReadStream("b", bytes.NewReader(data), record.Options{Borrowed: borrow}, SinkFunc(func(sp *span.Span) { n += len(sp.Attrs) })); err != nil || n != 3*len(base) {
					b.Fatal(n, err)
				}
			}
		})
	}
}

package ingest

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/span"
)

// The types below are shaped like Grafana Tempo's vParquet4 schema (trace
// row → rs list → Resource + ss list → Spans list), with the column names
// and encodings of tempodb/encoding/vparquet4/schema.go, trimmed to what a
// block holds around the columns tailscope reads. They are our own test
// writer of that layout, not Tempo's code.

// updateFixtures rewrites the generated binary fixtures in testdata/.
var updateFixtures = flag.Bool("update-fixtures", false, "rewrite the generated Parquet/Arrow fixtures in testdata/")

type tAttr struct {
	Key      string   `parquet:",snappy,dict"`
	IsArray  bool     `parquet:",snappy"`
	Value    []string `parquet:",snappy,dict,list"`
	ValueInt []int64  `parquet:",snappy,list"`
}

type tDedicated struct {
	String01 *string `parquet:",snappy,optional,dict"`
	String02 *string `parquet:",snappy,optional,dict"`
}

type tEvent struct {
	TimeSinceStartNano uint64  `parquet:",delta"`
	Name               string  `parquet:",snappy"`
	Attrs              []tAttr `parquet:",list"`
}

// tSpan4 is a full vParquet4 span; tSpan4Lean lacks the optional
// StatusMessage and HttpStatusCode columns.
type tSpan4 struct {
	SpanID                 []byte     `parquet:","`
	ParentSpanID           []byte     `parquet:","`
	ParentID               int32      `parquet:",delta"`
	NestedSetLeft          int32      `parquet:",delta"`
	NestedSetRight         int32      `parquet:",delta"`
	Name                   string     `parquet:",snappy,dict"`
	Kind                   int        `parquet:",delta"`
	TraceState             string     `parquet:",snappy"`
	StartTimeUnixNano      uint64     `parquet:",delta"`
	DurationNano           uint64     `parquet:",delta"`
	StatusCode             int        `parquet:",delta"`
	StatusMessage          string     `parquet:",snappy"`
	Attrs                  []tAttr    `parquet:",list"`
	DroppedAttributesCount int32      `parquet:",snappy,delta"`
	Events                 []tEvent   `parquet:",list"`
	HttpMethod             *string    `parquet:",snappy,optional,dict"`
	HttpUrl                *string    `parquet:",snappy,optional,dict"`
	HttpStatusCode         *int64     `parquet:",snappy,optional"`
	DedicatedAttributes    tDedicated `parquet:""`
}

type tScope struct {
	Name    string `parquet:",snappy,dict"`
	Version string `parquet:",snappy,dict"`
}

type tScopeSpans[S any] struct {
	Scope tScope `parquet:""`
	Spans []S    `parquet:",list"`
}

type tResource struct {
	Attrs               []tAttr    `parquet:",list"`
	ServiceName         string     `parquet:",snappy,dict"`
	Cluster             *string    `parquet:",snappy,optional,dict"`
	K8sPodName          *string    `parquet:",snappy,optional,dict"`
	DedicatedAttributes tDedicated `parquet:""`
}

type tResourceSpans[S any] struct {
	Resource   tResource        `parquet:""`
	ScopeSpans []tScopeSpans[S] `parquet:"ss,list"`
}

type tTrace[S any] struct {
	TraceID           []byte              `parquet:""`
	TraceIDText       string              `parquet:",snappy"`
	StartTimeUnixNano uint64              `parquet:",delta"`
	EndTimeUnixNano   uint64              `parquet:",delta"`
	DurationNano      uint64              `parquet:",delta"`
	RootServiceName   string              `parquet:",dict"`
	RootSpanName      string              `parquet:",dict"`
	ResourceSpans     []tResourceSpans[S] `parquet:"rs,list"`
}

type tSpan4Lean struct {
	SpanID            []byte `parquet:","`
	ParentSpanID      []byte `parquet:","`
	Name              string `parquet:",snappy,dict"`
	Kind              int    `parquet:",delta"`
	StartTimeUnixNano uint64 `parquet:",delta"`
	DurationNano      uint64 `parquet:",delta"`
	StatusCode        int    `parquet:",delta"`
	// an extra column no Tempo version has
	Extra string `parquet:",snappy"`
}

func id(n int, size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(n*31 + i)
	}
	return b
}

func i64(v int64) *int64 { return &v }

// tempoTraces builds traces: trace i has a server root in "gateway"
// calling two client spans in "api"; trace 1 has an empty resource-spans
// entry and a timeout (504 / deadline message); trace 2 has no rs at all.
func tempoTraces() []tTrace[tSpan4] {
	var out []tTrace[tSpan4]
	for t := 0; t < 4; t++ {
		tid := id(100+t, 16)
		base := uint64(1_700_000_000_000_000_000 + t*1_000_000_000)
		root := tSpan4{SpanID: id(t*10, 8), Name: "GET /", Kind: 2, StartTimeUnixNano: base, DurationNano: 50_000_000, StatusCode: 1,
			Attrs: []tAttr{{Key: "k", Value: []string{"v"}}}, Events: []tEvent{{Name: "e"}}}
		c1 := tSpan4{SpanID: id(t*10+1, 8), ParentSpanID: root.SpanID, Name: "call", Kind: 3, StartTimeUnixNano: base + 1000, DurationNano: 20_000_001}
		c2 := tSpan4{SpanID: id(t*10+2, 8), ParentSpanID: root.SpanID, Name: "call", Kind: 3, StartTimeUnixNano: base + 30_000_000, DurationNano: 10_000_000,
			HttpStatusCode: i64(200)}
		tr := tTrace[tSpan4]{TraceID: tid, TraceIDText: hex.EncodeToString(tid), RootServiceName: "gateway", RootSpanName: "GET /"}
		switch t {
		case 1:
			c1.StatusCode, c1.StatusMessage = 2, "context deadline exceeded"
			c2.StatusCode, c2.HttpStatusCode = 2, i64(504)
			tr.ResourceSpans = []tResourceSpans[tSpan4]{
				{Resource: tResource{ServiceName: "gateway"}, ScopeSpans: []tScopeSpans[tSpan4]{{Spans: []tSpan4{root}}}},
				{Resource: tResource{ServiceName: "empty"}},
				{Resource: tResource{ServiceName: "api"}, ScopeSpans: []tScopeSpans[tSpan4]{{Spans: []tSpan4{c1}}, {Spans: []tSpan4{c2}}}},
			}
		case 2:
			tr.TraceIDText = "" // the reader falls back to the raw TraceID
		default:
			tr.ResourceSpans = []tResourceSpans[tSpan4]{
				{Resource: tResource{ServiceName: "gateway"}, ScopeSpans: []tScopeSpans[tSpan4]{{Spans: []tSpan4{root}}}},
				{Resource: tResource{ServiceName: "api"}, ScopeSpans: []tScopeSpans[tSpan4]{{Spans: []tSpan4{c1, c2}}}},
			}
		}
		out = append(out, tr)
	}
	return out
}

func writeParquet[T any](t testing.TB, rows []T, opts ...parquet.WriterOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf, opts...)
	for _, r := range rows {
		if _, err := w.Write([]T{r}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readBytes(t *testing.T, name string, b []byte, opt Options) ([]span.Span, *Stats) {
	t.Helper()
	var out []span.Span
	st, err := ReadStream(name, bytes.NewReader(b), opt, func(s *span.Span) { out = append(out, *s) })
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if st.Read != st.Used+st.Skipped {
		t.Fatalf("read %d != used %d + skipped %d", st.Read, st.Used, st.Skipped)
	}
	return out, st
}

func TestTempoVParquet4(t *testing.T) {
	// Two traces per row group, so that the reader crosses row groups.
	data := writeParquet(t, tempoTraces(), parquet.MaxRowsPerRowGroup(2))
	spans, st := readBytes(t, "data.parquet", data, Options{})
	if st.Formats["data.parquet"] != "parquet" {
		t.Fatalf("format %v", st.Formats)
	}
	if len(spans) != 9 || st.Skipped != 0 {
		t.Fatalf("got %d spans (skipped %d), want 9", len(spans), st.Skipped)
	}
	byHop := map[string][]span.Span{}
	for _, s := range spans {
		byHop[s.Hop] = append(byHop[s.Hop], s)
	}
	if len(byHop["gateway GET /"]) != 3 || len(byHop["api call (client)"]) != 6 {
		t.Fatalf("hops: %v", byHop)
	}
	// Trace 1: the timeout spans, and the rs entry with no spans skipped.
	var tr1 []span.Span
	for _, s := range spans {
		if s.TraceID == hex.EncodeToString(id(101, 16)) {
			tr1 = append(tr1, s)
		}
	}
	if len(tr1) != 3 {
		t.Fatalf("trace 1: %d spans", len(tr1))
	}
	root, c1, c2 := tr1[0], tr1[1], tr1[2]
	if root.ParentID != "" || root.Kind != "server" || root.Status != span.OK || root.Service != "gateway" || root.Duration != 50_000_000 {
		t.Errorf("root %+v", root)
	}
	if c1.ParentID != hex.EncodeToString(id(10, 8)) || c1.SpanID != hex.EncodeToString(id(11, 8)) || c1.Service != "api" ||
		!c1.Timeout || c1.Status != span.Error || c1.Duration != 20_000_001 || c1.Start != 1_700_000_001_000_001_000 {
		t.Errorf("c1 %+v", c1)
	}
	if c2.Code != 504 || !c2.Timeout || c2.Status != span.Error {
		t.Errorf("c2 %+v", c2)
	}
	// Trace 3 (no TraceIDText) falls back to the raw id.
	if spans[len(spans)-1].TraceID != hex.EncodeToString(id(103, 16)) {
		t.Errorf("trace id fallback: %q", spans[len(spans)-1].TraceID)
	}
	reqs, probs := span.Assemble(spans)
	if len(reqs) != 3 || probs.Orphans != 0 {
		t.Errorf("requests %d orphans %d", len(reqs), probs.Orphans)
	}
}

// A block without the optional columns and with an extra one still reads.
func TestTempoMissingAndExtraColumns(t *testing.T) {
	var rows []tTrace[tSpan4Lean]
	for _, tr := range tempoTraces() {
		lt := tTrace[tSpan4Lean]{TraceID: tr.TraceID, TraceIDText: tr.TraceIDText}
		for _, rs := range tr.ResourceSpans {
			lrs := tResourceSpans[tSpan4Lean]{Resource: rs.Resource}
			for _, ss := range rs.ScopeSpans {
				var lss tScopeSpans[tSpan4Lean]
				for _, s := range ss.Spans {
					lss.Spans = append(lss.Spans, tSpan4Lean{SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Name: s.Name, Kind: s.Kind,
						StartTimeUnixNano: s.StartTimeUnixNano, DurationNano: s.DurationNano, StatusCode: s.StatusCode, Extra: "x"})
				}
				lrs.ScopeSpans = append(lrs.ScopeSpans, lss)
			}
			lt.ResourceSpans = append(lt.ResourceSpans, lrs)
		}
		rows = append(rows, lt)
	}
	spans, _ := readBytes(t, "lean.parquet", writeParquet(t, rows), Options{})
	if len(spans) != 9 {
		t.Fatalf("got %d spans", len(spans))
	}
	for _, s := range spans {
		if s.Code != 0 || s.Timeout {
			t.Errorf("no code or message column, yet %+v", s)
		}
	}
	if spans[4].Status != span.Error || spans[4].Service != "api" {
		t.Errorf("status from StatusCode: %+v", spans[4])
	}
}

// The legacy vParquet (v1) layout: rs.ils.Spans with ID and Start/End.
func TestTempoVParquet1(t *testing.T) {
	type span1 struct {
		ID             []byte `parquet:","`
		ParentSpanID   []byte `parquet:","`
		Name           string `parquet:",dict"`
		Kind           int    `parquet:",delta"`
		StartUnixNanos uint64 `parquet:",delta"`
		EndUnixNanos   uint64 `parquet:",delta"`
		StatusCode     int    `parquet:",delta"`
	}
	type ils struct{ Spans []span1 }
	type rs struct {
		Resource struct{ ServiceName string }
		Ils      []ils `parquet:"ils"`
	}
	type trace struct {
		TraceID []byte
		Rs      []rs `parquet:"rs"`
	}
	tr := trace{TraceID: id(7, 16)}
	r := rs{Ils: []ils{{Spans: []span1{{ID: id(1, 8), Name: "op", Kind: 1, StartUnixNanos: 100, EndUnixNanos: 350}}}}}
	r.Resource.ServiceName = "svc"
	tr.Rs = []rs{r}
	spans, _ := readBytes(t, "v1.parquet", writeParquet(t, []trace{tr}), Options{})
	if len(spans) != 1 || spans[0].Duration != 250 || spans[0].Hop != "svc op" || spans[0].Kind != "internal" {
		t.Fatalf("got %+v", spans)
	}
}

func TestTempoFixture(t *testing.T) {
	// The block in testdata is the one TestTempoVParquet4 builds, kept as a
	// file so the command line and fuzzing can use it; -update-fixtures rewrites it.
	path := filepath.Join("testdata", "tempo-vparquet4.parquet")
	data := writeParquet(t, tempoTraces(), parquet.MaxRowsPerRowGroup(2))
	if *updateFixtures {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	st, err := Read([]string{path}, Options{}, func(*span.Span) { n++ })
	if err != nil || n != 9 || st.Skipped != 0 {
		t.Fatalf("read %s: %d spans, %v (run go test -run TestTempoFixture -update-fixtures)", path, n, err)
	}
}

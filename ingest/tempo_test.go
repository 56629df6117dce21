package ingest

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/ingest/internal/tempo"
	"github.com/tailscope/tailscope/span"
)

// The t4* and t3* types mirror Grafana Tempo's block schemas — field names,
// order, Go types and parquet tags of tempodb/encoding/vparquet4/schema.go
// and vparquet3/schema.go in grafana/tempo — so that parquet-go lays out
// the same column paths, physical types and repetition/definition levels
// as a real block. TestTempoSchemaMirror pins those levels to the
// constants Tempo declares. They are our own test writer of that layout,
// not Tempo's code; the t4Trace conversion below routes attributes the way
// Tempo's traceToParquet does (well-known keys to their own columns,
// meta.json's dedicated keys to spare columns, the rest to Attrs).

// updateFixtures rewrites the generated binary fixtures in testdata/.
var updateFixtures = flag.Bool("update-fixtures", false, "rewrite the generated Parquet/Arrow fixtures in testdata/")

type t4Attribute struct {
	Key              string    `parquet:",snappy,dict"`
	IsArray          bool      `parquet:",snappy"`
	Value            []string  `parquet:",snappy,dict,list"`
	ValueInt         []int64   `parquet:",snappy,list"`
	ValueDouble      []float64 `parquet:",snappy,list"`
	ValueBool        []bool    `parquet:",snappy,list"`
	ValueUnsupported *string   `parquet:",snappy,optional"`
}

type tDedicated struct {
	String01 *string `parquet:",snappy,optional,dict"`
	String02 *string `parquet:",snappy,optional,dict"`
	String03 *string `parquet:",snappy,optional,dict"`
	String04 *string `parquet:",snappy,optional,dict"`
	String05 *string `parquet:",snappy,optional,dict"`
	String06 *string `parquet:",snappy,optional,dict"`
	String07 *string `parquet:",snappy,optional,dict"`
	String08 *string `parquet:",snappy,optional,dict"`
	String09 *string `parquet:",snappy,optional,dict"`
	String10 *string `parquet:",snappy,optional,dict"`
}

type t4Event struct {
	TimeSinceStartNano     uint64        `parquet:",delta"`
	Name                   string        `parquet:",snappy,dict"`
	Attrs                  []t4Attribute `parquet:",list"`
	DroppedAttributesCount int32         `parquet:",snappy,delta"`
}

type t4Link struct {
	TraceID                []byte        `parquet:","`
	SpanID                 []byte        `parquet:","`
	TraceState             string        `parquet:",snappy"`
	Attrs                  []t4Attribute `parquet:",list"`
	DroppedAttributesCount int32         `parquet:",snappy,delta"`
}

type t4Span struct {
	SpanID                 []byte        `parquet:","`
	ParentSpanID           []byte        `parquet:","`
	ParentID               int32         `parquet:",delta"`
	NestedSetLeft          int32         `parquet:",delta"`
	NestedSetRight         int32         `parquet:",delta"`
	Name                   string        `parquet:",snappy,dict"`
	Kind                   int           `parquet:",delta"`
	TraceState             string        `parquet:",snappy"`
	StartTimeUnixNano      uint64        `parquet:",delta"`
	DurationNano           uint64        `parquet:",delta"`
	StatusCode             int           `parquet:",delta"`
	StatusMessage          string        `parquet:",snappy"`
	Attrs                  []t4Attribute `parquet:",list"`
	DroppedAttributesCount int32         `parquet:",snappy,delta"`
	Events                 []t4Event     `parquet:",list"`
	DroppedEventsCount     int32         `parquet:",snappy"`
	Links                  []t4Link      `parquet:",list"`
	DroppedLinksCount      int32         `parquet:",snappy"`
	HttpMethod             *string       `parquet:",snappy,optional,dict"`
	HttpUrl                *string       `parquet:",snappy,optional,dict"`
	HttpStatusCode         *int64        `parquet:",snappy,optional"`
	DedicatedAttributes    tDedicated    `parquet:""`
}

type t4Scope struct {
	Name                   string        `parquet:",snappy,dict"`
	Version                string        `parquet:",snappy,dict"`
	Attrs                  []t4Attribute `parquet:",list"`
	DroppedAttributesCount int32         `parquet:",snappy,delta"`
}

type t4ScopeSpans struct {
	Scope t4Scope  `parquet:""`
	Spans []t4Span `parquet:",list"`
}

type t4Resource struct {
	Attrs                  []t4Attribute `parquet:",list"`
	DroppedAttributesCount int32         `parquet:",snappy,delta"`
	ServiceName            string        `parquet:",snappy,dict"`
	Cluster                *string       `parquet:",snappy,optional,dict"`
	Namespace              *string       `parquet:",snappy,optional,dict"`
	Pod                    *string       `parquet:",snappy,optional,dict"`
	Container              *string       `parquet:",snappy,optional,dict"`
	K8sClusterName         *string       `parquet:",snappy,optional,dict"`
	K8sNamespaceName       *string       `parquet:",snappy,optional,dict"`
	K8sPodName             *string       `parquet:",snappy,optional,dict"`
	K8sContainerName       *string       `parquet:",snappy,optional,dict"`
	DedicatedAttributes    tDedicated    `parquet:""`
}

type t4ResourceSpans struct {
	Resource   t4Resource     `parquet:""`
	ScopeSpans []t4ScopeSpans `parquet:"ss,list"`
}

type tServiceStats struct {
	SpanCount  uint32 `parquet:",delta"`
	ErrorCount uint32 `parquet:",delta"`
}

type t4Trace struct {
	TraceID           []byte                   `parquet:""`
	TraceIDText       string                   `parquet:",snappy"`
	StartTimeUnixNano uint64                   `parquet:",delta"`
	EndTimeUnixNano   uint64                   `parquet:",delta"`
	DurationNano      uint64                   `parquet:",delta"`
	RootServiceName   string                   `parquet:",dict"`
	RootSpanName      string                   `parquet:",dict"`
	ServiceStats      map[string]tServiceStats `parquet:""`
	ResourceSpans     []t4ResourceSpans        `parquet:"rs,list"`
}

// vParquet3: scalar optional attribute values, protobuf event attribute
// values, links as bytes, a scope without attributes.
type t3Attribute struct {
	Key          string   `parquet:",snappy,dict"`
	Value        *string  `parquet:",dict,snappy,optional"`
	ValueInt     *int64   `parquet:",snappy,optional"`
	ValueDouble  *float64 `parquet:",snappy,optional"`
	ValueBool    *bool    `parquet:",snappy,optional"`
	ValueDropped string   `parquet:",snappy,optional"`
}

type t3EventAttribute struct {
	Key   string `parquet:",snappy,dict"`
	Value []byte `parquet:",snappy"`
}

type t3Event struct {
	TimeUnixNano           uint64             `parquet:",delta"`
	Name                   string             `parquet:",snappy"`
	Attrs                  []t3EventAttribute `parquet:",list"`
	DroppedAttributesCount int32              `parquet:",snappy,delta"`
}

type t3Span struct {
	SpanID                 []byte        `parquet:","`
	ParentSpanID           []byte        `parquet:","`
	ParentID               int32         `parquet:",delta"`
	NestedSetLeft          int32         `parquet:",delta"`
	NestedSetRight         int32         `parquet:",delta"`
	Name                   string        `parquet:",snappy,dict"`
	Kind                   int           `parquet:",delta"`
	TraceState             string        `parquet:",snappy"`
	StartTimeUnixNano      uint64        `parquet:",delta"`
	DurationNano           uint64        `parquet:",delta"`
	StatusCode             int           `parquet:",delta"`
	StatusMessage          string        `parquet:",snappy"`
	Attrs                  []t3Attribute `parquet:",list"`
	DroppedAttributesCount int32         `parquet:",snappy"`
	Events                 []t3Event     `parquet:",list"`
	DroppedEventsCount     int32         `parquet:",snappy"`
	Links                  []byte        `parquet:",snappy"`
	DroppedLinksCount      int32         `parquet:",snappy"`
	HttpMethod             *string       `parquet:",snappy,optional,dict"`
	HttpUrl                *string       `parquet:",snappy,optional,dict"`
	HttpStatusCode         *int64        `parquet:",snappy,optional"`
	DedicatedAttributes    tDedicated    `parquet:""`
}

type t3Scope struct {
	Name    string `parquet:",snappy,dict"`
	Version string `parquet:",snappy,dict"`
}

type t3ScopeSpans struct {
	Scope t3Scope  `parquet:""`
	Spans []t3Span `parquet:",list"`
}

type t3Resource struct {
	Attrs                  []t3Attribute `parquet:",list"`
	DroppedAttributesCount int32         `parquet:",snappy"`
	ServiceName            string        `parquet:",snappy,dict"`
	Cluster                *string       `parquet:",snappy,optional,dict"`
	Namespace              *string       `parquet:",snappy,optional,dict"`
	Pod                    *string       `parquet:",snappy,optional,dict"`
	Container              *string       `parquet:",snappy,optional,dict"`
	K8sClusterName         *string       `parquet:",snappy,optional,dict"`
	K8sNamespaceName       *string       `parquet:",snappy,optional,dict"`
	K8sPodName             *string       `parquet:",snappy,optional,dict"`
	K8sContainerName       *string       `parquet:",snappy,optional,dict"`
	DedicatedAttributes    tDedicated    `parquet:""`
}

type t3ResourceSpans struct {
	Resource   t3Resource     `parquet:""`
	ScopeSpans []t3ScopeSpans `parquet:"ss,list"`
}

type t3Trace struct {
	TraceID           []byte                   `parquet:""`
	TraceIDText       string                   `parquet:",snappy"`
	StartTimeUnixNano uint64                   `parquet:",delta"`
	EndTimeUnixNano   uint64                   `parquet:",delta"`
	DurationNano      uint64                   `parquet:",delta"`
	RootServiceName   string                   `parquet:",dict"`
	RootSpanName      string                   `parquet:",dict"`
	ServiceStats      map[string]tServiceStats `parquet:""`
	ResourceSpans     []t3ResourceSpans        `parquet:"rs,list"`
}

// TestTempoSchemaMirror pins the mirror types to Tempo's layout: the
// columns tailscope reads, with the physical type and the maximum
// repetition/definition levels that follow from Tempo's structs (and agree
// with the DefinitionLevel* constants of its schema.go: resource spans 1,
// resource attrs 2, span 3, span attrs and events 4).
func TestTempoSchemaMirror(t *testing.T) {
	const sp = "rs.list.element.ss.list.element.Spans.list.element."
	type col struct {
		path     string
		typ      parquet.Kind
		rep, def int
	}
	common := []col{
		{"TraceID", parquet.ByteArray, 0, 0},
		{"TraceIDText", parquet.ByteArray, 0, 0},
		{"rs.list.element.Resource.ServiceName", parquet.ByteArray, 1, 1},
		{"rs.list.element.Resource.Cluster", parquet.ByteArray, 1, 2},
		{"rs.list.element.Resource.Attrs.list.element.Key", parquet.ByteArray, 2, 2},
		{"rs.list.element.Resource.DedicatedAttributes.String01", parquet.ByteArray, 1, 2},
		{sp + "SpanID", parquet.ByteArray, 3, 3},
		{sp + "ParentSpanID", parquet.ByteArray, 3, 3},
		{sp + "ParentID", parquet.Int32, 3, 3},
		{sp + "Name", parquet.ByteArray, 3, 3},
		{sp + "Kind", parquet.Int64, 3, 3},
		{sp + "TraceState", parquet.ByteArray, 3, 3},
		{sp + "StartTimeUnixNano", parquet.Int64, 3, 3},
		{sp + "DurationNano", parquet.Int64, 3, 3},
		{sp + "StatusCode", parquet.Int64, 3, 3},
		{sp + "StatusMessage", parquet.ByteArray, 3, 3},
		{sp + "HttpMethod", parquet.ByteArray, 3, 4},
		{sp + "HttpStatusCode", parquet.Int64, 3, 4},
		{sp + "DedicatedAttributes.String01", parquet.ByteArray, 3, 4},
		{sp + "Attrs.list.element.Key", parquet.ByteArray, 4, 4},
		{sp + "Events.list.element.Name", parquet.ByteArray, 4, 4},
		{sp + "Events.list.element.Attrs.list.element.Key", parquet.ByteArray, 5, 5},
	}
	v4 := append([]col{
		{sp + "Attrs.list.element.Value.list.element", parquet.ByteArray, 5, 5},
		{sp + "Attrs.list.element.ValueInt.list.element", parquet.Int64, 5, 5},
		{sp + "Attrs.list.element.ValueDouble.list.element", parquet.Double, 5, 5},
		{sp + "Attrs.list.element.ValueBool.list.element", parquet.Boolean, 5, 5},
		{sp + "Events.list.element.Attrs.list.element.Value.list.element", parquet.ByteArray, 6, 6},
		{"rs.list.element.Resource.Attrs.list.element.Value.list.element", parquet.ByteArray, 3, 3},
	}, common...)
	v3 := append([]col{
		{sp + "Attrs.list.element.Value", parquet.ByteArray, 4, 5},
		{sp + "Attrs.list.element.ValueInt", parquet.Int64, 4, 5},
		{sp + "Attrs.list.element.ValueDouble", parquet.Double, 4, 5},
		{sp + "Attrs.list.element.ValueBool", parquet.Boolean, 4, 5},
		{sp + "Events.list.element.Attrs.list.element.Value", parquet.ByteArray, 5, 5},
		{"rs.list.element.Resource.Attrs.list.element.Value", parquet.ByteArray, 2, 3},
	}, common...)
	for name, c := range map[string]struct {
		schema *parquet.Schema
		cols   []col
	}{"vParquet4": {parquet.SchemaOf(t4Trace{}), v4}, "vParquet3": {parquet.SchemaOf(t3Trace{}), v3}} {
		for _, want := range c.cols {
			leaf, ok := tempo.LookupPath(c.schema, want.path)
			if !ok {
				t.Errorf("%s: no column %s", name, want.path)
				continue
			}
			if k := leaf.Node.Type().Kind(); k != want.typ || leaf.MaxRepetitionLevel != want.rep || leaf.MaxDefinitionLevel != want.def {
				t.Errorf("%s: %s is %s rep %d def %d, want %s rep %d def %d", name, want.path, k, leaf.MaxRepetitionLevel, leaf.MaxDefinitionLevel, want.typ, want.rep, want.def)
			}
		}
		if l := tempo.LayoutOf(c.schema); l != tempo.Layouts[0] {
			t.Errorf("%s: not recognised as a Tempo block", name)
		}
	}
	// Event attribute values of vParquet3 are plain bytes (protobuf), span
	// attribute values text: the reader tells them apart by annotation.
	s3 := parquet.SchemaOf(t3Trace{})
	ev, _ := tempo.LookupPath(s3, sp+"Events.list.element.Attrs.list.element.Value")
	at, _ := tempo.LookupPath(s3, sp+"Attrs.list.element.Value")
	if tempo.IsTextLeaf(ev) || !tempo.IsTextLeaf(at) {
		t.Errorf("annotations: event value text=%v, attribute value text=%v", tempo.IsTextLeaf(ev), tempo.IsTextLeaf(at))
	}
}

// A neutral model of test traces, written as a vParquet4 block, a
// vParquet3 block and OTLP JSON.
type tmAttr struct {
	k string
	v any // string, int64, float64, bool, []string (array), map[string]string (kvlist)
}

type tmEvent struct {
	name  string
	attrs []tmAttr
}

type tmSpan struct {
	id, parent  []byte
	name        string
	kind        int
	start, dur  uint64
	status      int
	msg, tstate string
	attrs       []tmAttr
	events      []tmEvent
}

type tmResource struct {
	attrs  []tmAttr
	scopes [][]tmSpan
}

type tmTrace struct {
	id []byte
	rs []tmResource
}

// tmMetaJSON is the meta.json of the test block: the resource attribute
// tier and the span attributes peer.service and error.type have dedicated
// columns (resource String01, span String01 and String02).
const tmMetaJSON = `{"format":"vParquet4","blockID":"7b3d1f2a-0c1e-4a51-9a50-3c1f0e1d2b3a","tenantID":"single-tenant",` +
	`"startTime":"2023-11-14T22:13:20Z","endTime":"2023-11-14T22:13:24Z","totalObjects":4,"size":1,"compactionLevel":0,` +
	`"encoding":"none","indexPageSize":0,"totalRecords":1,"dataEncoding":"","bloomShards":1,"footerSize":1,` +
	`"dedicatedColumns":[{"s":"resource","n":"tier"},{"n":"peer.service"},{"n":"error.type"}]}`

var (
	tmSpanDedicated     = map[string]int{"peer.service": 1, "error.type": 2}
	tmResourceDedicated = map[string]int{"tier": 1}
)

func id(n int, size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(n*31 + i)
	}
	return b
}

// tmTraces: trace 0 has a 64-bit id (its TraceIDText loses the leading
// zeros) and attributes of every kind and home; trace 1 has an empty
// resource-spans entry, a resource without scopes, a sampled span and a
// bare span between spans with attributes; trace 2 has no spans at all.
func tmTraces() []tmTrace {
	base := uint64(1_700_000_000_000_000_000)
	t0 := tmTrace{id: append(make([]byte, 8), id(7, 8)...)}
	root := tmSpan{id: id(1, 8), name: "GET /", kind: 2, start: base, dur: 50_000_000, status: 1,
		attrs: []tmAttr{{"http.method", "GET"}, {"http.status_code", int64(200)}, {"k", "v"}}}
	t0.rs = []tmResource{
		{attrs: []tmAttr{{"service.name", "gateway"}, {"tier", "edge"}, {"cluster", "c1"}}, scopes: [][]tmSpan{{root}}},
		{attrs: []tmAttr{{"service.name", "api"}, {"deployment.env", "prod"}}, scopes: [][]tmSpan{{
			{id: id(2, 8), parent: root.id, name: "call", kind: 3, start: base + 1000, dur: 20_000_001, status: 2,
				attrs: []tmAttr{{"peer.service", "db"}, {"http.response.status_code", int64(504)}, {"http.method", "POST"}}},
			{id: id(3, 8), parent: root.id, name: "call", kind: 3, start: base + 21_000_000, dur: 9_000_000, status: 1,
				attrs: []tmAttr{{"http.request.resend_count", int64(1)}, {"server.address", "db.local"}, {"http.status_code", int64(200)}}},
		}, {
			{id: id(4, 8), parent: root.id, name: "fetch", kind: 3, start: base + 2000, dur: 30_000_000, status: 2,
				attrs:  []tmAttr{{"tags", []string{"a", "b"}}, {"sampling.weight", float64(4)}, {"error", true}, {"obj", map[string]string{"a": "b"}}},
				events: []tmEvent{{name: "log", attrs: []tmAttr{{"exception.type", "Timeout"}}}, {name: "exception", attrs: []tmAttr{{"exception.escaped", false}, {"exception.type", "java.net.SocketTimeoutException"}}}}},
			{id: id(5, 8), parent: root.id, name: "q", kind: 1, start: base + 3000, dur: 1_000_000,
				attrs: []tmAttr{{"error.type", "timeout"}, {"retry.attempt", int64(3)}}},
			{id: id(6, 8), parent: root.id, name: "rpc", kind: 3, start: base + 4000, dur: 2_000_000, status: 2,
				attrs: []tmAttr{{"rpc.grpc.status_code", int64(4)}}},
		}}},
	}
	b1 := base + 1_000_000_000
	r1 := tmSpan{id: id(11, 8), name: "GET /", kind: 2, start: b1, dur: 40_000_000, tstate: "ot=th:8", msg: "fine"}
	t1 := tmTrace{id: id(101, 16), rs: []tmResource{
		{},
		{attrs: []tmAttr{{"service.name", "lonely"}}},
		{attrs: []tmAttr{{"service.name", "gateway"}, {"tier", "edge"}}, scopes: [][]tmSpan{{}, {r1,
			{id: id(12, 8), parent: r1.id, name: "bare", start: b1 + 10, dur: 5},
			{id: id(13, 8), parent: r1.id, name: "late", kind: 5, start: b1 + 20, dur: 7, status: 2, msg: "context deadline exceeded",
				events: []tmEvent{{name: "exception"}}},
		}}},
	}}
	return []tmTrace{t0, t1, {id: id(102, 16)}}
}

func ptr[T any](v T) *T { return &v }

func setDedicated(d *tDedicated, n int, v string) {
	reflect.ValueOf(d).Elem().FieldByName(fmt.Sprintf("String%02d", n)).Set(reflect.ValueOf(&v))
}

// tmResourceRoute places a resource attribute as Tempo does; it reports
// false when the attribute goes to the generic list.
func tmResourceRoute(a tmAttr, svc *string, cluster **string, d *tDedicated) bool {
	s, ok := a.v.(string)
	switch {
	case !ok:
		return false
	case a.k == "service.name":
		*svc = s
	case a.k == "cluster":
		*cluster = ptr(s)
	case tmResourceDedicated[a.k] > 0:
		setDedicated(d, tmResourceDedicated[a.k], s)
	default:
		return false
	}
	return true
}

// tmSpanRoute places a span attribute as Tempo does.
func tmSpanRoute(a tmAttr, method, url **string, code **int64, d *tDedicated) bool {
	switch v := a.v.(type) {
	case string:
		switch {
		case a.k == "http.method":
			*method = ptr(v)
		case a.k == "http.url":
			*url = ptr(v)
		case tmSpanDedicated[a.k] > 0:
			setDedicated(d, tmSpanDedicated[a.k], v)
		default:
			return false
		}
		return true
	case int64:
		if a.k == "http.status_code" {
			*code = ptr(v)
			return true
		}
	}
	return false
}

func t4Attr(a tmAttr) t4Attribute {
	p := t4Attribute{Key: a.k}
	switch v := a.v.(type) {
	case string:
		p.Value = []string{v}
	case int64:
		p.ValueInt = []int64{v}
	case float64:
		p.ValueDouble = []float64{v}
	case bool:
		p.ValueBool = []bool{v}
	case []string:
		p.IsArray, p.Value = true, v
	default:
		b, _ := json.Marshal(map[string]any{"kvlistValue": map[string]any{}})
		p.ValueUnsupported = ptr(string(b))
	}
	return p
}

func t3Attr(a tmAttr) t3Attribute {
	p := t3Attribute{Key: a.k}
	switch v := a.v.(type) {
	case string:
		p.Value = &v
	case int64:
		p.ValueInt = &v
	case float64:
		p.ValueDouble = &v
	case bool:
		p.ValueBool = &v
	default:
		b, _ := json.Marshal(v)
		p.ValueDropped = string(b)
	}
	return p
}

// protoAny encodes a string AnyValue as protobuf (field 1), as vParquet3
// stores event attribute values; other kinds get a field tailscope skips.
func protoAny(v any) []byte {
	s, ok := v.(string)
	if !ok {
		return []byte{0x10, 0x01} // bool_value = true
	}
	b := []byte{0x0a}
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func tmTraceMeta(tr tmTrace) (text string, start, end uint64, rootSvc, rootName string) {
	text = strings.TrimLeft(hex.EncodeToString(tr.id), "0")
	for _, rs := range tr.rs {
		var svc string
		for _, a := range rs.attrs {
			if a.k == "service.name" {
				svc = a.v.(string)
			}
		}
		for _, ss := range rs.scopes {
			for _, s := range ss {
				if start == 0 || s.start < start {
					start = s.start
				}
				end = max(end, s.start+s.dur)
				if len(s.parent) == 0 {
					rootSvc, rootName = svc, s.name
				}
			}
		}
	}
	return
}

func (tr tmTrace) v4() t4Trace {
	text, start, end, rs, rn := tmTraceMeta(tr)
	out := t4Trace{TraceID: tr.id, TraceIDText: text, StartTimeUnixNano: start, EndTimeUnixNano: end, DurationNano: end - start,
		RootServiceName: rs, RootSpanName: rn, ServiceStats: map[string]tServiceStats{}}
	for _, r := range tr.rs {
		var res t4Resource
		for _, a := range r.attrs {
			if !tmResourceRoute(a, &res.ServiceName, &res.Cluster, &res.DedicatedAttributes) {
				res.Attrs = append(res.Attrs, t4Attr(a))
			}
		}
		ors := t4ResourceSpans{Resource: res}
		for _, ss := range r.scopes {
			oss := t4ScopeSpans{Scope: t4Scope{Name: "lib", Version: "1.0"}}
			for _, s := range ss {
				o := t4Span{SpanID: s.id, ParentSpanID: s.parent, Name: s.name, Kind: s.kind, TraceState: s.tstate,
					StartTimeUnixNano: s.start, DurationNano: s.dur, StatusCode: s.status, StatusMessage: s.msg}
				for _, a := range s.attrs {
					if !tmSpanRoute(a, &o.HttpMethod, &o.HttpUrl, &o.HttpStatusCode, &o.DedicatedAttributes) {
						o.Attrs = append(o.Attrs, t4Attr(a))
					}
				}
				for _, e := range s.events {
					oe := t4Event{Name: e.name, TimeSinceStartNano: 5}
					for _, a := range e.attrs {
						oe.Attrs = append(oe.Attrs, t4Attr(a))
					}
					o.Events = append(o.Events, oe)
				}
				st := out.ServiceStats[res.ServiceName]
				st.SpanCount++
				if s.status == 2 {
					st.ErrorCount++
				}
				out.ServiceStats[res.ServiceName] = st
				oss.Spans = append(oss.Spans, o)
			}
			ors.ScopeSpans = append(ors.ScopeSpans, oss)
		}
		out.ResourceSpans = append(out.ResourceSpans, ors)
	}
	return out
}

func (tr tmTrace) v3() t3Trace {
	text, start, end, rs, rn := tmTraceMeta(tr)
	out := t3Trace{TraceID: tr.id, TraceIDText: text, StartTimeUnixNano: start, EndTimeUnixNano: end, DurationNano: end - start,
		RootServiceName: rs, RootSpanName: rn}
	for _, r := range tr.rs {
		var res t3Resource
		for _, a := range r.attrs {
			if !tmResourceRoute(a, &res.ServiceName, &res.Cluster, &res.DedicatedAttributes) {
				res.Attrs = append(res.Attrs, t3Attr(a))
			}
		}
		ors := t3ResourceSpans{Resource: res}
		for _, ss := range r.scopes {
			oss := t3ScopeSpans{Scope: t3Scope{Name: "lib"}}
			for _, s := range ss {
				o := t3Span{SpanID: s.id, ParentSpanID: s.parent, Name: s.name, Kind: s.kind, TraceState: s.tstate,
					StartTimeUnixNano: s.start, DurationNano: s.dur, StatusCode: s.status, StatusMessage: s.msg}
				for _, a := range s.attrs {
					if !tmSpanRoute(a, &o.HttpMethod, &o.HttpUrl, &o.HttpStatusCode, &o.DedicatedAttributes) {
						o.Attrs = append(o.Attrs, t3Attr(a))
					}
				}
				for _, e := range s.events {
					oe := t3Event{Name: e.name, TimeUnixNano: s.start + 5}
					for _, a := range e.attrs {
						oe.Attrs = append(oe.Attrs, t3EventAttribute{Key: a.k, Value: protoAny(a.v)})
					}
					o.Events = append(o.Events, oe)
				}
				oss.Spans = append(oss.Spans, o)
			}
			ors.ScopeSpans = append(ors.ScopeSpans, oss)
		}
		out.ResourceSpans = append(out.ResourceSpans, ors)
	}
	return out
}

// otlp renders the model as one OTLP JSON document.
func (tr tmTrace) otlp() string {
	anyValue := func(v any) map[string]any {
		switch v := v.(type) {
		case string:
			return map[string]any{"stringValue": v}
		case int64:
			return map[string]any{"intValue": strconv.FormatInt(v, 10)}
		case float64:
			return map[string]any{"doubleValue": v}
		case bool:
			return map[string]any{"boolValue": v}
		case []string:
			var vs []any
			for _, s := range v {
				vs = append(vs, map[string]any{"stringValue": s})
			}
			return map[string]any{"arrayValue": map[string]any{"values": vs}}
		}
		return map[string]any{"kvlistValue": map[string]any{"values": []any{}}}
	}
	attrs := func(as []tmAttr) []any {
		out := []any{}
		for _, a := range as {
			out = append(out, map[string]any{"key": a.k, "value": anyValue(a.v)})
		}
		return out
	}
	var rss []any
	for _, r := range tr.rs {
		var sss []any
		for _, ss := range r.scopes {
			var spans []any
			for _, s := range ss {
				var evs []any
				for _, e := range s.events {
					evs = append(evs, map[string]any{"name": e.name, "timeUnixNano": strconv.FormatUint(s.start+5, 10), "attributes": attrs(e.attrs)})
				}
				spans = append(spans, map[string]any{
					"traceId": hex.EncodeToString(tr.id), "spanId": hex.EncodeToString(s.id), "parentSpanId": hex.EncodeToString(s.parent),
					"traceState": s.tstate, "name": s.name, "kind": s.kind,
					"startTimeUnixNano": strconv.FormatUint(s.start, 10), "endTimeUnixNano": strconv.FormatUint(s.start+s.dur, 10),
					"attributes": attrs(s.attrs), "events": evs, "status": map[string]any{"code": s.status, "message": s.msg},
				})
			}
			sss = append(sss, map[string]any{"scope": map[string]any{"name": "lib"}, "spans": spans})
		}
		rss = append(rss, map[string]any{"resource": map[string]any{"attributes": attrs(r.attrs)}, "scopeSpans": sss})
	}
	b, _ := json.Marshal(map[string]any{"resourceSpans": rss})
	return string(b)
}

func tempoTraces() []t4Trace {
	var out []t4Trace
	for _, tr := range tmTraces() {
		out = append(out, tr.v4())
	}
	return out
}

func tempoTraces3() []t3Trace {
	var out []t3Trace
	for _, tr := range tmTraces() {
		out = append(out, tr.v3())
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

func readBytes(t *testing.T, name string, b []byte, opt record.Options) ([]span.Span, *record.Stats) {
	t.Helper()
	var out []span.Span
	st, err := ReadStream(name, bytes.NewReader(b), opt, func(s *span.Span) { out = append(out, *s) })
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if st.Read != st.Used+st.Skipped+st.Filtered {
		t.Fatalf("read %d != used %d + skipped %d", st.Read, st.Used, st.Skipped)
	}
	return out, st
}

// tBrief is the part of a span the Tempo tests compare.
func tBrief(sp span.Span) string {
	return fmt.Sprintf("%s %s<%s %s|%s|%s %d+%d %s to=%v code=%d att=%d peer=%s w=%g hop=%s",
		sp.TraceID, sp.SpanID, sp.ParentID, sp.Service, sp.Name, sp.Kind, sp.Start, sp.Duration, sp.Status, sp.Timeout, sp.Code, sp.Attempt, sp.Peer, sp.Weight, sp.Hop)
}

func tBriefs(spans []span.Span) string {
	var b []string
	for _, s := range spans {
		b = append(b, tBrief(s))
	}
	return strings.Join(b, "\n")
}

// writeBlock writes data as a Tempo block folder <dir>/single-tenant/<blockID>/
// with the siblings a real block has, and returns the block folder.
func writeBlock(t *testing.T, dir string, data []byte, meta string) string {
	t.Helper()
	blk := filepath.Join(dir, "single-tenant", "7b3d1f2a-0c1e-4a51-9a50-3c1f0e1d2b3a")
	if err := os.MkdirAll(blk, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"data.parquet": data, "bloom-0": {0, 1, 2, 3, 0xff}, "index": {0x50, 0x41, 0x52, 0x31, 9, 9}}
	if meta != "" {
		files["meta.json"] = []byte(meta)
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(blk, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return blk
}

func readPath(t *testing.T, path string, opt record.Options) ([]span.Span, *record.Stats) {
	t.Helper()
	var out []span.Span
	st, err := Read([]string{path}, opt, func(s *span.Span) { out = append(out, *s) })
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if st.Read != st.Used+st.Skipped+st.Filtered {
		t.Fatalf("read %d != used %d + skipped %d", st.Read, st.Used, st.Skipped)
	}
	return out, st
}

// TestTempoBlock reads the block (with its meta.json, so that dedicated
// columns are named) and checks each span against the model.
func TestTempoBlock(t *testing.T) {
	blk := writeBlock(t, t.TempDir(), writeParquet(t, tempoTraces(), parquet.MaxRowsPerRowGroup(2)), tmMetaJSON)
	spans, st := readPath(t, filepath.Join(blk, "data.parquet"), record.Options{})
	if st.Skipped != 0 || len(spans) != 9 {
		t.Fatalf("%d spans, skipped %v", len(spans), st.SkippedByReason)
	}
	t0 := hex.EncodeToString(append(make([]byte, 8), id(7, 8)...))
	t1 := hex.EncodeToString(id(101, 16))
	h := func(n int) string { return hex.EncodeToString(id(n, 8)) }
	const b = 1_700_000_000_000_000_000
	want := []string{
		fmt.Sprintf("%s %s< gateway|GET /|server %d+50000000 ok to=false code=200 att=0 peer= w=1 hop=gateway GET /", t0, h(1), b),
		fmt.Sprintf("%s %s<%s api|call|client %d+20000001 error to=true code=504 att=0 peer=db w=1 hop=api call (client)", t0, h(2), h(1), b+1000),
		fmt.Sprintf("%s %s<%s api|call|client %d+9000000 ok to=false code=200 att=2 peer=db.local w=1 hop=api call (client)", t0, h(3), h(1), b+21_000_000),
		fmt.Sprintf("%s %s<%s api|fetch|client %d+30000000 error to=true code=0 att=0 peer= w=4 hop=api fetch (client)", t0, h(4), h(1), b+2000),
		fmt.Sprintf("%s %s<%s api|q|internal %d+1000000 error to=true code=0 att=3 peer= w=1 hop=api q", t0, h(5), h(1), b+3000),
		fmt.Sprintf("%s %s<%s api|rpc|client %d+2000000 error to=true code=4 att=0 peer= w=1 hop=api rpc (client)", t0, h(6), h(1), b+4000),
		fmt.Sprintf("%s %s< gateway|GET /|server %d+40000000 unset to=false code=0 att=0 peer= w=2 hop=gateway GET /", t1, h(11), b+1_000_000_000),
		fmt.Sprintf("%s %s<%s gateway|bare| %d+5 unset to=false code=0 att=0 peer= w=1 hop=gateway bare", t1, h(12), h(11), b+1_000_000_010),
		fmt.Sprintf("%s %s<%s gateway|late|consumer %d+7 error to=true code=0 att=0 peer= w=1 hop=gateway late (consumer)", t1, h(13), h(11), b+1_000_000_020),
	}
	if got := tBriefs(spans); got != strings.Join(want, "\n") {
		t.Errorf("spans:\n got %s\nwant %s", strings.ReplaceAll(got, "\n", "\n     "), strings.Join(want, "\n     "))
	}
	reqs, probs := span.Assemble(spans)
	if len(reqs) != 2 || probs.Orphans != 0 {
		t.Errorf("requests %d orphans %d", len(reqs), probs.Orphans)
	}
}

// The same traces read identically from vParquet4, vParquet3 and OTLP
// JSON, under several --hop-by modes: Tempo's attribute homes (own
// columns, dedicated columns, generic lists) are all found.
func TestTempoMatchesOTLP(t *testing.T) {
	var doc strings.Builder
	for _, tr := range tmTraces() {
		doc.WriteString(tr.otlp() + "\n")
	}
	dir := t.TempDir()
	b4 := writeBlock(t, filepath.Join(dir, "v4"), writeParquet(t, tempoTraces()), tmMetaJSON)
	b3 := writeBlock(t, filepath.Join(dir, "v3"), writeParquet(t, tempoTraces3(), parquet.MaxRowsPerRowGroup(1)),
		strings.Replace(tmMetaJSON, "vParquet4", "vParquet3", 1))
	for _, hopBy := range []string{"", "service", "peer", "attr:tier", "attr:cluster", "attr:http.method", "attr:deployment.env", "attr:peer.service", "attr:k"} {
		t.Run(hopBy, func(t *testing.T) {
			opt := record.Options{HopBy: hopBy}
			want, wst := readBytes(t, "in.json", []byte(doc.String()), record.Options{HopBy: hopBy, Format: "otlp"})
			for _, blk := range []string{b4, b3} {
				got, st := readPath(t, filepath.Join(blk, "data.parquet"), opt)
				if g, w := tBriefs(got), tBriefs(want); g != w {
					t.Errorf("%s:\n got %s\nwant %s", blk, strings.ReplaceAll(g, "\n", "\n     "), strings.ReplaceAll(w, "\n", "\n     "))
				}
				if fmt.Sprint(st.SkippedByReason) != fmt.Sprint(wst.SkippedByReason) {
					t.Errorf("%s: skipped %v, OTLP %v", blk, st.SkippedByReason, wst.SkippedByReason)
				}
			}
		})
	}
}

// Without its meta.json, a block's dedicated columns cannot be named: the
// spans still read, without what those columns held.
func TestTempoWithoutMeta(t *testing.T) {
	spans, st := readBytes(t, "data.parquet", writeParquet(t, tempoTraces()), record.Options{})
	if st.Skipped != 0 || len(spans) != 9 {
		t.Fatalf("%d spans, skipped %v", len(spans), st.SkippedByReason)
	}
	if spans[1].Peer != "" || !spans[1].Timeout || spans[4].Timeout || spans[4].Attempt != 3 || spans[2].Peer != "db.local" {
		t.Errorf("without meta: %s\n%s\n%s", tBrief(spans[1]), tBrief(spans[2]), tBrief(spans[4]))
	}
}

// A lean block (optional columns missing, an extra one) still reads.
func TestTempoMissingAndExtraColumns(t *testing.T) {
	type leanSpan struct {
		SpanID            []byte `parquet:","`
		ParentSpanID      []byte `parquet:","`
		Name              string `parquet:",snappy,dict"`
		Kind              int    `parquet:",delta"`
		StartTimeUnixNano uint64 `parquet:",delta"`
		DurationNano      uint64 `parquet:",delta"`
		StatusCode        int    `parquet:",delta"`
		Extra             string `parquet:",snappy"` // no Tempo version has it
	}
	type leanSS struct {
		Spans []leanSpan `parquet:",list"`
	}
	type leanRes struct{ ServiceName string }
	type leanRS struct {
		Resource   leanRes
		ScopeSpans []leanSS `parquet:"ss,list"`
	}
	type leanTrace struct {
		TraceIDText   string
		ResourceSpans []leanRS `parquet:"rs,list"`
	}
	var rows []leanTrace
	for _, tr := range tempoTraces() {
		lt := leanTrace{TraceIDText: tr.TraceIDText}
		for _, rs := range tr.ResourceSpans {
			lrs := leanRS{Resource: leanRes{rs.Resource.ServiceName}}
			for _, ss := range rs.ScopeSpans {
				var lss leanSS
				for _, s := range ss.Spans {
					lss.Spans = append(lss.Spans, leanSpan{SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Name: s.Name, Kind: s.Kind,
						StartTimeUnixNano: s.StartTimeUnixNano, DurationNano: s.DurationNano, StatusCode: s.StatusCode, Extra: "x"})
				}
				lrs.ScopeSpans = append(lrs.ScopeSpans, lss)
			}
			lt.ResourceSpans = append(lt.ResourceSpans, lrs)
		}
		rows = append(rows, lt)
	}
	spans, _ := readBytes(t, "lean.parquet", writeParquet(t, rows), record.Options{})
	if len(spans) != 9 {
		t.Fatalf("got %d spans", len(spans))
	}
	for _, s := range spans {
		if s.Code != 0 || s.Attempt != 0 || s.Peer != "" {
			t.Errorf("no attribute columns, yet %s", tBrief(s))
		}
	}
	// TraceIDText alone: the trimmed leading zeros are restored.
	if spans[0].TraceID != hex.EncodeToString(tempoTraces()[0].TraceID) || spans[1].Status != span.Error || spans[1].Service != "api" {
		t.Errorf("from TraceIDText and StatusCode: %s", tBrief(spans[1]))
	}
}

// The legacy vParquet (v1) layout: rs.ils.Spans with ID and Start/End.
func TestTempoVParquet1(t *testing.T) {
	type attr1 struct {
		Key      string `parquet:",dict"`
		Value    *string
		ValueInt *int64
	}
	type span1 struct {
		ID             []byte `parquet:","`
		Name           string `parquet:",dict"`
		Kind           int    `parquet:",dict"`
		ParentSpanID   []byte `parquet:","`
		StartUnixNanos uint64 `parquet:",delta"`
		EndUnixNanos   uint64 `parquet:",delta"`
		StatusCode     int    `parquet:",delta"`
		Attrs          []attr1
		HttpStatusCode *int64 `parquet:",snappy,optional"`
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
	r := rs{Ils: []ils{{Spans: []span1{
		{ID: id(1, 8), Name: "op", Kind: 1, StartUnixNanos: 100, EndUnixNanos: 350, HttpStatusCode: ptr(int64(504)),
			Attrs: []attr1{{Key: "retry.attempt", ValueInt: ptr(int64(2))}, {Key: "peer.service", Value: ptr("x")}}},
		{ID: id(2, 8), Name: "op", StartUnixNanos: 400, EndUnixNanos: 300},
	}}}}
	r.Resource.ServiceName = "svc"
	tr.Rs = []rs{r}
	spans, st := readBytes(t, "v1.parquet", writeParquet(t, []trace{tr}), record.Options{})
	if len(spans) != 1 || spans[0].Duration != 250 || spans[0].Hop != "svc op" || spans[0].Kind != "internal" ||
		spans[0].Attempt != 2 || spans[0].Peer != "x" || !spans[0].Timeout || spans[0].Code != 504 {
		t.Fatalf("got %+v", spans)
	}
	if st.SkippedByReason[record.ReasonEndBeforeStart] != 1 {
		t.Errorf("skipped %v", st.SkippedByReason)
	}
}

// A bad attribute value costs the span only that value: the span is
// kept, and the value counted with its position.
func TestTempoBadAttribute(t *testing.T) {
	tr := tmTraces()[1]
	sp := &tr.rs[2].scopes[1][1]
	sp.attrs = []tmAttr{{"http.request.resend_count", int64(-1)}}
	spans, st := readBytes(t, "data.parquet", writeParquet(t, []t4Trace{tr.v4()}), record.Options{})
	if len(spans) != 3 || st.Skipped != 0 || st.Ignored != 1 {
		t.Fatalf("%d spans, skipped %v, ignored %v", len(spans), st.SkippedByReason, st.IgnoredByField)
	}
	if e := st.IgnoredExamples[0].Error(); !strings.Contains(e, "data.parquet: span 2: attempt: http.request.resend_count") {
		t.Errorf("error %q", e)
	}
}

// tempoFixtureTraces are the traces of testdata/tempo-vparquet4.parquet:
// those of TestTempoBlock without peer attributes, because the file also
// feeds export's round trips and the flat schema has no peer column yet.
func tempoFixtureTraces() []t4Trace {
	var out []t4Trace
	for _, tr := range tmTraces() {
		for _, rs := range tr.rs {
			for _, ss := range rs.scopes {
				for i := range ss {
					var keep []tmAttr
					for _, a := range ss[i].attrs {
						if a.k != "server.address" && a.k != "peer.service" {
							keep = append(keep, a)
						}
					}
					ss[i].attrs = keep
				}
			}
		}
		out = append(out, tr.v4())
	}
	return out
}

func TestTempoFixture(t *testing.T) {
	// The block in testdata is the one TestTempoBlock builds (see
	// tempoFixtureTraces), kept as a file so the command line, the
	// exporters and fuzzing can use it; -update-fixtures rewrites it.
	path := filepath.Join("testdata", "tempo-vparquet4.parquet")
	data := writeParquet(t, tempoFixtureTraces(), parquet.MaxRowsPerRowGroup(2))
	if *updateFixtures {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := readBytes(t, path, old, record.Options{})
	want, _ := readBytes(t, path, data, record.Options{})
	if tBriefs(got) != tBriefs(want) {
		t.Fatalf("%s is stale (run go test -run TestTempoFixture -update-fixtures)", path)
	}
}

// Pointed at a local Tempo store (tenant folder with a live block, a
// compacted block and the tenant index), tailscope reads the live block's
// data.parquet, with dedicated columns named by its meta.json, and notes
// what it passed over; files outside blocks are still read, and so are
// files that are no part of a block inside a block's folder (a log someone
// put there): every file is read or listed as passed over, with why.
func TestTempoBlockDirectory(t *testing.T) {
	dir := t.TempDir()
	data := writeParquet(t, tempoTraces())
	blk := writeBlock(t, dir, data, tmMetaJSON)
	old := filepath.Join(dir, "single-tenant", "0a0a0a0a-0000-4000-8000-000000000000")
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	for n, b := range map[string][]byte{"data.parquet": data, "meta.compacted.json": []byte(tmMetaJSON), "bloom-0": {1}} {
		if err := os.WriteFile(filepath.Join(old, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Join(dir, "other.jsonl")
	inBlock := filepath.Join(blk, "extra-spans.jsonl")
	inOld := filepath.Join(old, "copied.jsonl")
	line := `{"hop":"x","duration_ms":5}` + "\n"
	for p, b := range map[string]string{filepath.Join(dir, "single-tenant", "index.json.gz"): "\x1f\x8b", other: line, inBlock: line, inOld: line} {
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, root := range []string{dir, filepath.Join(dir, "single-tenant"), blk} {
		spans, st := readPath(t, root, record.Options{})
		wantFiles := []string{filepath.Join(blk, "data.parquet"), inBlock}
		wantPassed := 3 // meta.json, bloom-0, index
		if root != blk {
			wantFiles = []string{inOld, filepath.Join(blk, "data.parquet"), inBlock}
			wantPassed += 4 // the compacted block's data, meta and bloom filter; the tenant index
		}
		if root == dir {
			wantFiles = append([]string{other}, wantFiles...)
		}
		if fmt.Sprint(st.Files) != fmt.Sprint(wantFiles) || st.Skipped != 0 {
			t.Errorf("%s: files %v, skipped %v", root, st.Files, st.SkippedByReason)
		}
		if len(spans) != 9+len(wantFiles)-1 {
			t.Errorf("%s: %d spans", root, len(spans))
		}
		var peer bool
		for _, sp := range spans {
			peer = peer || sp.Peer == "db"
		}
		if !peer {
			t.Errorf("%s: the dedicated peer.service column not read", root)
		}
		strict := 0
		for _, p := range st.Passed {
			if p.Strict {
				strict++
				if p.File != filepath.Join(old, "data.parquet") || !strings.Contains(p.Reason, "compacted") {
					t.Errorf("%s: %s passed over as %q (strict)", root, p.File, p.Reason)
				}
			}
		}
		if len(st.Passed) != wantPassed || strict != map[bool]int{true: 0, false: 1}[root == blk] {
			t.Errorf("%s: passed %+v", root, st.Passed)
		}
		notes := strings.Join(st.Notes, "\n")
		wantNotes := 1
		if root != blk {
			wantNotes = 3
			if !strings.Contains(notes, "a compacted Tempo block") || !strings.Contains(notes, "tenant index") {
				t.Errorf("%s: notes %q", root, notes)
			}
		}
		if len(st.Notes) != wantNotes || !strings.Contains(notes, blk+": a Tempo block: read data.parquet, passed over 3 bookkeeping files") {
			t.Errorf("%s: notes %q", root, notes)
		}
	}
}

// A block's spans carry the attributes OTLP JSON of the same traces
// gives (resource ones first), wherever Tempo kept them: its own
// resource and span columns, the dedicated columns, the generic lists;
// arrays and maps are left out. vParquet4 and vParquet3 alike, borrowed or
// not.
func TestTempoAttrsMatchOTLP(t *testing.T) {
	var doc strings.Builder
	for _, tr := range tmTraces() {
		doc.WriteString(tr.otlp() + "\n")
	}
	want, _ := readBytes(t, "in.json", []byte(doc.String()), record.Options{Format: "otlp"})
	dir := t.TempDir()
	b4 := writeBlock(t, filepath.Join(dir, "v4"), writeParquet(t, tempoTraces(), parquet.MaxRowsPerRowGroup(2)), tmMetaJSON)
	b3 := writeBlock(t, filepath.Join(dir, "v3"), writeParquet(t, tempoTraces3(), parquet.MaxRowsPerRowGroup(1)),
		strings.Replace(tmMetaJSON, "vParquet4", "vParquet3", 1))
	// As a set per span: the order within the resource's attributes, and
	// within the span's, is the order of Tempo's columns.
	set := func(sp span.Span) string {
		var own []string
		for _, a := range sp.Attrs {
			if strings.HasPrefix(a.Key, "otel.scope.") {
				continue
			}
			own = append(own, a.Key+"="+a.Value)
		}
		slices.Sort(own)
		return fmt.Sprint(own)
	}
	for _, blk := range []string{b4, b3} {
		for _, borrow := range []bool{false, true} {
			var got []span.Span
			if _, err := Read([]string{filepath.Join(blk, "data.parquet")}, record.Options{Borrowed: borrow}, func(sp *span.Span) { got = append(got, cloneSpan(sp)) }); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d spans, OTLP %d", len(got), len(want))
			}
			for i := range want {
				if g, w := set(got[i]), set(want[i]); g != w {
					t.Errorf("%s span %d (borrowed %v):\n got %s\nwant %s", blk, i, borrow, g, w)
				}
			}
			if testing.Verbose() && !borrow {
				for _, sp := range got {
					t.Logf("%s: %q", sp.Name, sp.Attrs)
				}
			}
			// The resource's attributes come first.
			if a := got[1].Attrs; len(a) == 0 || a[0].Key != "deployment.env" || a[0].Value != "prod" {
				t.Errorf("span 1 attributes %q: the resource's first", a)
			}
			if a := got[0].Attrs; !slices.Contains(a, span.Attr{Key: "cluster", Value: "c1"}) || !slices.Contains(a, span.Attr{Key: "tier", Value: "edge"}) ||
				!slices.Contains(a, span.Attr{Key: "http.method", Value: "GET"}) || slices.ContainsFunc(a, func(x span.Attr) bool { return x.Key == "service.name" }) {
				t.Errorf("span 0 attributes %q", a)
			}
		}
	}
}

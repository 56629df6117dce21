package ingest

import (
	"flag"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/tempo"
)

// The t4* and t3* types mirror Grafana Tempo's block schemas — field names,
// order, Go types and parquet tags of tempodb/encoding/vparquet4/schema.go
// and vparquet3/schema.go in grafana/tempo — so that parquet-go lays out
// the same column paths, physical types and repetition/definition levels
// as a real block. TestTempoSchemaMirror pins those levels to the
// constants Tempo declares. They are our own test writer of that layout,
// not Tempo's code; the t4Trace conversion (tempo_model_test.go) routes attributes the way
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

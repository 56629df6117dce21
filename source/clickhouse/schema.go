package clickhouse

import (
	"fmt"
	"sort"
	"strings"
)

// The fields a span is read from, each a column of the table (a Schema
// names them). The required ones must exist; an optional one that is
// missing (or mapped to "") is left out, and a note says so.
const (
	FieldStart         = "start"          // DateTime64, DateTime, or integer ns since the epoch
	FieldDuration      = "duration"       // integer ns
	FieldTraceID       = "trace_id"       // hex text
	FieldSpanID        = "span_id"        // hex text
	FieldParentID      = "parent_id"      // hex text, empty for a root
	FieldName          = "name"           // text
	FieldService       = "service"        // text
	FieldKind          = "kind"           // text (Server, SPAN_KIND_SERVER, server) or OTLP's number
	FieldStatus        = "status"         // text (Ok, Error, Unset, STATUS_CODE_…) or OTLP's number
	FieldStatusMessage = "status_message" // text
	FieldTraceState    = "trace_state"    // text (W3C tracestate: sampling weights)
	FieldResource      = "resource_attrs" // Map(String, T): the resource's attributes
	FieldAttrs         = "span_attrs"     // Map(String, T): the span's attributes
	FieldScopeName     = "scope_name"     // text
	FieldScopeVersion  = "scope_version"  // text
	FieldEventNames    = "event_names"    // Array(String): the events' names
	FieldEventAttrs    = "event_attrs"    // Array(Map(String, T)): the events' attributes
)

// fields lists every field, required first, in the order messages name them.
var fields = []struct {
	name     string
	required bool
}{
	{FieldStart, true}, {FieldDuration, true}, {FieldTraceID, true}, {FieldSpanID, true},
	{FieldName, true}, {FieldService, true}, {FieldStatus, true},
	{FieldParentID, false}, {FieldKind, false}, {FieldStatusMessage, false}, {FieldTraceState, false},
	{FieldResource, false}, {FieldAttrs, false}, {FieldScopeName, false}, {FieldScopeVersion, false},
	{FieldEventNames, false}, {FieldEventAttrs, false},
}

func knownField(f string) bool {
	for _, x := range fields {
		if x.name == f {
			return true
		}
	}
	return false
}

// FieldNames are the fields a Schema maps, required first.
func FieldNames() []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.name
	}
	return out
}

// Schema maps the fields to a table's columns.
type Schema struct {
	// Name is what schema= calls it.
	Name string
	// Columns maps each field to its column ("" or absent: none).
	Columns map[string]string
	// Order is the ORDER BY of the query when the table has these
	// columns: a prefix of the table's sorting key lets ClickHouse read in
	// order instead of sorting the window. The rest of the order (start,
	// trace id, span id) is added after it, so that it is total.
	Order []string
}

func (s Schema) clone() Schema {
	c := s
	c.Columns = make(map[string]string, len(s.Columns))
	for k, v := range s.Columns {
		c.Columns[k] = v
	}
	c.Order = append([]string(nil), s.Order...)
	return c
}

// DefaultSchema is the schema of a URL without schema=.
const DefaultSchema = "otel"

// Schemas are the table layouts known by name. "otel" is the
// OpenTelemetry Collector clickhouseexporter's otel_traces
// (internal/sqltemplates/traces_table.sql of the exporter, v0.165.1:
// Timestamp DateTime64(9), Duration UInt64 ns, the attributes as
// Map(LowCardinality(String), String), events as a Nested column, ordered
// by ServiceName, SpanName, toDateTime(Timestamp)). Other layouts map
// their columns with col.FIELD=COLUMN (docs/clickhouse.md).
var Schemas = map[string]Schema{
	"otel": {
		Name: "otel",
		Columns: map[string]string{
			FieldStart: "Timestamp", FieldDuration: "Duration", FieldTraceID: "TraceId", FieldSpanID: "SpanId",
			FieldParentID: "ParentSpanId", FieldName: "SpanName", FieldService: "ServiceName", FieldKind: "SpanKind",
			FieldStatus: "StatusCode", FieldStatusMessage: "StatusMessage", FieldTraceState: "TraceState",
			FieldResource: "ResourceAttributes", FieldAttrs: "SpanAttributes", FieldScopeName: "ScopeName",
			FieldScopeVersion: "ScopeVersion", FieldEventNames: "Events.Name", FieldEventAttrs: "Events.Attributes",
		},
		Order: []string{"ServiceName", "SpanName", "toDateTime(Timestamp)"},
	},
}

// SchemaNames are the names of Schemas, sorted.
func SchemaNames() []string {
	var out []string
	for k := range Schemas {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// quoteIdent is a name as a ClickHouse identifier: a Nested column's
// dotted name stays one identifier (`Events.Name`).
func quoteIdent(s string) string {
	return "`" + strings.NewReplacer("\\", "\\\\", "`", "\\`").Replace(s) + "`"
}

// quoteString is s as a ClickHouse string literal.
func quoteString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case 0:
			b.WriteString(`\0`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// baseType is t without LowCardinality(…) and Nullable(…).
func baseType(t string) string {
	for {
		switch {
		case strings.HasPrefix(t, "LowCardinality(") && strings.HasSuffix(t, ")"):
			t = t[len("LowCardinality(") : len(t)-1]
		case strings.HasPrefix(t, "Nullable(") && strings.HasSuffix(t, ")"):
			t = t[len("Nullable(") : len(t)-1]
		default:
			return t
		}
	}
}

func isInt(t string) bool {
	t = baseType(t)
	return strings.HasPrefix(t, "Int") || strings.HasPrefix(t, "UInt")
}

func isText(t string) bool {
	t = baseType(t)
	return t == "String" || strings.HasPrefix(t, "FixedString(") || strings.HasPrefix(t, "Enum")
}

// wantType says what type a field's column must have, for messages.
var wantType = map[string]string{
	FieldStart: "DateTime64, DateTime or an integer of ns", FieldDuration: "an integer of ns",
	FieldTraceID: "String", FieldSpanID: "String", FieldParentID: "String", FieldName: "String",
	FieldService: "String", FieldKind: "String or an integer", FieldStatus: "String or an integer",
	FieldStatusMessage: "String", FieldTraceState: "String", FieldResource: "Map(String, …)",
	FieldAttrs: "Map(String, …)", FieldScopeName: "String", FieldScopeVersion: "String",
	FieldEventNames: "Array(String)", FieldEventAttrs: "Array(Map(String, …))",
}

// expr is the SQL that reads field f from column c of type t as the row
// decoder wants it (see row), or "" when the type does not fit.
func expr(f, c, t string) string {
	q := quoteIdent(c)
	b := baseType(t)
	text := func() string {
		if b == "String" {
			return q
		}
		if isText(t) || isInt(t) {
			return "toString(" + q + ")"
		}
		return ""
	}
	switch f {
	case FieldStart:
		switch {
		case strings.HasPrefix(b, "DateTime64"):
			return "toUnixTimestamp64Nano(" + q + ")"
		case strings.HasPrefix(b, "DateTime"):
			return "toInt64(toUnixTimestamp(" + q + ")) * 1000000000"
		case isInt(t):
			return "toInt64(" + q + ")"
		}
	case FieldDuration:
		if isInt(t) {
			return "toInt64(" + q + ")"
		}
	case FieldKind, FieldStatus:
		return text()
	case FieldTraceID, FieldSpanID, FieldParentID, FieldName, FieldService, FieldStatusMessage,
		FieldTraceState, FieldScopeName, FieldScopeVersion:
		if isText(t) {
			return text()
		}
	case FieldResource, FieldAttrs:
		if strings.HasPrefix(b, "Map(") {
			// keys and values as two arrays, so that their order stays
			// (a JSON object would not keep it for the decoder)
			return "arrayMap(x -> toString(x), mapKeys(" + q + "))" + pairSep + "arrayMap(x -> toString(x), mapValues(" + q + "))"
		}
	case FieldEventNames:
		if strings.HasPrefix(b, "Array(") {
			return "arrayMap(x -> toString(x), " + q + ")"
		}
	case FieldEventAttrs:
		if strings.HasPrefix(b, "Array(Map(") {
			return q
		}
	}
	return ""
}

// pairSep separates the two expressions of a Map field's keys and values.
const pairSep = "\x00"

// startCond is the window's test on the start column c of type t, for
// [since, until) in Unix ns.
func startCond(c, t string, since, until int64) string {
	q := quoteIdent(c)
	b := baseType(t)
	switch {
	case strings.HasPrefix(b, "DateTime64"):
		return fmt.Sprintf("%s >= fromUnixTimestamp64Nano(toInt64(%d)) AND %s < fromUnixTimestamp64Nano(toInt64(%d))", q, since, q, until)
	case strings.HasPrefix(b, "DateTime"):
		// A DateTime holds seconds: the second the window starts in
		// through the one it ends in; the readers cut to the ns.
		return fmt.Sprintf("%s >= toDateTime(%d) AND %s <= toDateTime(%d)", q, floorDiv(since, 1e9), q, floorDiv(until, 1e9))
	}
	return fmt.Sprintf("%s >= %d AND %s < %d", q, since, q, until)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

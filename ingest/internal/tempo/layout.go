package tempo

import (
	"fmt"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/pqguard"
)

// Grafana Tempo stores traces in Parquet blocks: a block is a folder
// <tenant>/<blockID>/ holding data.parquet, meta.json (format, time range,
// dedicated columns), bloom-N filters and an index; data.parquet has one
// row per trace, the spans nested as resource spans → scope spans → spans.
// This reader was checked against the schemas in grafana/tempo
// tempodb/encoding/{vparquet,vparquet2,vparquet3,vparquet4,vparquet5}/schema.go.
//
// vParquet2 to vParquet5 share the span columns tailscope needs, under
//
//	rs.list.element.ss.list.element.Spans.list.element.{SpanID, ParentSpanID
//	    (BYTE_ARRAY, empty for a root), Name, Kind (INT64, the OTLP enum),
//	    TraceState, StartTimeUnixNano, DurationNano (INT64 of uint64 ns),
//	    StatusCode (INT64: 0 unset, 1 ok, 2 error), StatusMessage,
//	    HttpStatusCode (optional INT64), Attrs, Events, DedicatedAttributes}
//
// with the service at rs.list.element.Resource.ServiceName and the trace id
// as raw bytes in TraceID (TraceIDText is the same id in hex with its
// leading zeros trimmed, so it is only a fallback). The first vParquet used
// rs.ils.Spans.* with ID, StartUnixNanos and EndUnixNanos.
//
// Span attributes are read so that attempts, peers, timeouts and
// --hop-by attr:KEY work as they do for OTLP (the same traceRecord rules
// apply). Tempo moves some attributes out of the generic lists, so they are
// looked for where Tempo put them:
//
//   - http.status_code (int), http.method, http.url: span columns
//     HttpStatusCode, HttpMethod, HttpUrl;
//   - service.name, cluster, namespace, pod, container, k8s.*.name: resource
//     columns (ServiceName, Cluster, …);
//   - attributes named in meta.json's dedicatedColumns: spare columns
//     DedicatedAttributes.String01… (and Int01… in later vParquet4/5), the
//     n-th attribute of a scope and type taking the n-th spare column, read
//     when the block's meta.json sits beside data.parquet;
//   - everything else: the generic key/value list Attrs, whose layout
//     changed: vParquet2/3 have one optional Value / ValueInt / ValueDouble /
//     ValueBool per attribute, vParquet4/5 a list in each
//     (Value.list.element …), several elements for an array.
//
// Exception events (Events.list.element.Name = "exception") are read for an
// exception.type or exception.message naming a timeout; vParquet2/3 store
// event attribute values as protobuf-encoded AnyValue bytes.
//
// Columns are looked up by path, so extra columns are ignored and missing
// optional ones are absent; a column whose nesting is not the expected one
// (for instance a dedicated column configured as an array) is left out
// rather than misread.

type tempoLayout struct {
	span, resource string // column path prefixes
}

var Layouts = []*tempoLayout{
	{span: "rs.list.element.ss.list.element.Spans.list.element.", resource: "rs.list.element.Resource."},
	{span: "rs.ils.Spans.", resource: "rs.Resource."},
}

// tempoLayoutOf recognises a Tempo block by its span columns.
func LayoutOf(s *parquet.Schema) *tempoLayout {
	for _, l := range Layouts {
		for _, c := range []string{"SpanID", "ID", "StartTimeUnixNano", "StartUnixNanos"} {
			if _, ok := LookupPath(s, l.span+c); ok {
				return l
			}
		}
	}
	return nil
}

func LookupPath(s *parquet.Schema, path string) (parquet.LeafColumn, bool) {
	return s.Lookup(strings.Split(path, ".")...)
}

// tcol is one projected column, read slot by slot: a slot's values are
// taken where the cursor buffered them, the value after a group (the next
// slot's first) left there for the next take or group.
type tcol struct {
	path string
	leaf parquet.LeafColumn
	cur  *pqguard.Cursor
	// own and arena hold a group that runs past the cursor's buffer: its
	// values copied, and the bytes of its byte arrays (copied there
	// rather than cloned one by one, an allocation each).
	own   []parquet.Value
	arena []byte
}

func (c *tcol) open(chunks []parquet.ColumnChunk) {
	c.cur = pqguard.NewCursor(chunks[c.leaf.ColumnIndex])
}

func (c *tcol) fail() error {
	if c.cur.Err != nil {
		return fmt.Errorf("column %s: %v", c.path, c.cur.Err)
	}
	return fmt.Errorf("column %s ends early (corrupt block)", c.path)
}

// take returns the next value, valid until the next call on c.
func (c *tcol) take() (parquet.Value, error) {
	if b := c.cur.Buffered(); len(b) > 0 {
		c.cur.Advance(1)
		return b[0], nil
	}
	v, ok := c.cur.Next()
	if !ok {
		return v, c.fail()
	}
	return v, nil
}

// group returns the values of the next slot at repetition level rep: its
// first value and every following value that repeats deeper, valid until
// the next call on c. A group that ends inside the cursor's buffer is a
// view of it (no copy); one that reaches the buffer's end is copied out,
// as the next values overwrite the buffer, and so are the bytes it points
// to, which may belong to the page the cursor leaves. The cursor reads on
// exactly when the value after the group is not buffered yet, so a
// corrupt page fails at the same slot whichever way a group is taken.
func (c *tcol) group(rep int) ([]parquet.Value, error) {
	buf := c.cur.Buffered()
	if len(buf) == 0 {
		if !c.cur.Fill() {
			return nil, c.fail()
		}
		buf = c.cur.Buffered()
	}
	j := 1
	for j < len(buf) && int(buf[j].RepetitionLevel()) > rep {
		j++
	}
	if j < len(buf) {
		c.cur.Advance(j)
		return buf[:j:j], nil
	}
	c.arena = c.arena[:0]
	dst := c.own[:0]
	for {
		for _, v := range buf[:j] {
			dst = append(dst, c.keep(v))
		}
		c.cur.Advance(j)
		if j < len(buf) {
			break
		}
		if !c.cur.Fill() {
			if c.cur.Err != nil {
				c.own = dst
				return dst, c.fail()
			}
			break
		}
		buf = c.cur.Buffered()
		j = 0
		for j < len(buf) && int(buf[j].RepetitionLevel()) > rep {
			j++
		}
	}
	c.own = dst
	return dst, nil
}

// keep copies v out of its page: the bytes of a byte array into c.arena.
// When an append moves the arena, the values kept before it keep the old
// array, which nothing writes to again.
func (c *tcol) keep(v parquet.Value) parquet.Value {
	if v.IsNull() {
		return v
	}
	var mk func([]byte) parquet.Value
	switch v.Kind() {
	case parquet.ByteArray:
		mk = parquet.ByteArrayValue
	case parquet.FixedLenByteArray:
		mk = parquet.FixedLenByteArrayValue
	default:
		return v // no bytes outside the value
	}
	b := v.ByteArray()
	n := len(c.arena)
	c.arena = append(c.arena, b...)
	return mk(c.arena[n:len(c.arena):len(c.arena)]).Level(v.RepetitionLevel(), v.DefinitionLevel(), v.Column())
}

// exhausted reports whether every value of the row group was used.
func (c *tcol) exhausted() bool {
	return !c.cur.Fill()
}

// split cuts the values of one slot into its list elements: an element
// starts at each value whose repetition level is at most rep.
func split(vals []parquet.Value, rep int, out [][]parquet.Value) [][]parquet.Value {
	out = out[:0]
	start := 0
	for i := 1; i <= len(vals); i++ {
		if i == len(vals) || vals[i].RepetitionLevel() <= rep {
			out = append(out, vals[start:i])
			start = i
		}
	}
	return out
}

package ingest

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
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

var tempoLayouts = []*tempoLayout{
	{span: "rs.list.element.ss.list.element.Spans.list.element.", resource: "rs.list.element.Resource."},
	{span: "rs.ils.Spans.", resource: "rs.Resource."},
}

// tempoLayoutOf recognises a Tempo block by its span columns.
func tempoLayoutOf(s *parquet.Schema) *tempoLayout {
	for _, l := range tempoLayouts {
		for _, c := range []string{"SpanID", "ID", "StartTimeUnixNano", "StartUnixNanos"} {
			if _, ok := lookupPath(s, l.span+c); ok {
				return l
			}
		}
	}
	return nil
}

func lookupPath(s *parquet.Schema, path string) (parquet.LeafColumn, bool) {
	return s.Lookup(strings.Split(path, ".")...)
}

// tcol is one projected column, read slot by slot with one value of
// lookahead, so that the values of a nested list can be gathered.
type tcol struct {
	path string
	leaf parquet.LeafColumn
	cur  *record.Cursor
	peek parquet.Value
	has  bool
}

func (c *tcol) open(chunks []parquet.ColumnChunk) {
	c.cur, c.has = record.NewCursor(chunks[c.leaf.ColumnIndex]), false
}

func (c *tcol) fail() error {
	if c.cur.Err != nil {
		return fmt.Errorf("column %s: %v", c.path, c.cur.Err)
	}
	return fmt.Errorf("column %s ends early (corrupt block)", c.path)
}

// take returns the next value, valid until the next call on c.
func (c *tcol) take() (parquet.Value, error) {
	if c.has {
		c.has = false
		return c.peek, nil
	}
	v, ok := c.cur.Next()
	if !ok {
		return v, c.fail()
	}
	return v, nil
}

// group returns the values of the next slot at repetition level rep: its
// first value and every following value that repeats deeper. The values
// are copies (they outlive the page they came from).
func (c *tcol) group(rep int, dst []parquet.Value) ([]parquet.Value, error) {
	v, err := c.take()
	if err != nil {
		return dst, err
	}
	dst = append(dst[:0], v.Clone())
	for {
		v, ok := c.cur.Next()
		if !ok {
			if c.cur.Err != nil {
				return dst, c.fail()
			}
			return dst, nil
		}
		if v.RepetitionLevel() <= rep {
			c.peek, c.has = v, true
			return dst, nil
		}
		dst = append(dst, v.Clone())
	}
}

// exhausted reports whether every value of the row group was used.
func (c *tcol) exhausted() bool {
	if c.has {
		return false
	}
	_, ok := c.cur.Next()
	return !ok
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

// Value kinds of Tempo's generic attribute columns.
const (
	tkString = iota
	tkInt
	tkDouble
	tkBool
	tkProto // vParquet2/3 event attributes: a protobuf AnyValue
	tkCount
)

var tkNames = [tkCount]string{"Value", "ValueInt", "ValueDouble", "ValueBool", "Value"}

// tkv is a Tempo key/value list (Attribute) below a slot whose own
// repetition level is rep: keys repeat at rep+1, values at rep+1 (one
// optional value per attribute) or rep+2 (a list per attribute).
type tkv struct {
	rep    int
	key    *tcol
	vals   [tkCount]*tcol
	keyG   []parquet.Value
	valG   [tkCount][]parquet.Value
	splitK [][]parquet.Value
	splitV [tkCount][][]parquet.Value
}

// findKV looks up the Attribute list at prefix (e.g. "...Spans.list.element.Attrs")
// for a slot at repetition level rep. It returns nil when the block has
// no such list, or one nested differently. A Value column of plain bytes
// (no string annotation) is vParquet2/3's protobuf-encoded event value.
func findKV(s *parquet.Schema, prefix string, rep int) *tkv {
	for _, elem := range []string{".list.element.", "."} {
		leaf, ok := lookupPath(s, prefix+elem+"Key")
		if !ok || leaf.MaxRepetitionLevel != rep+1 {
			continue
		}
		kv := &tkv{rep: rep, key: &tcol{path: prefix + elem + "Key", leaf: leaf}}
		for k, name := range tkNames[:tkProto] {
			for _, sub := range []string{".list.element", ""} {
				p := prefix + elem + name + sub
				lf, ok := lookupPath(s, p)
				if ok && (lf.MaxRepetitionLevel == rep+1 || lf.MaxRepetitionLevel == rep+2) {
					if k == tkString && !isTextLeaf(lf) {
						k = tkProto
					}
					kv.vals[k] = &tcol{path: p, leaf: lf}
					break
				}
			}
		}
		return kv
	}
	return nil
}

// isTextLeaf reports whether a byte-array column is annotated as text.
func isTextLeaf(leaf parquet.LeafColumn) bool {
	typ := leaf.Node.Type()
	if lt := typ.LogicalType(); lt != nil {
		if _, ok := lt.Value.(*format.StringType); ok {
			return true
		}
	}
	if ct := typ.ConvertedType(); ct != nil && *ct == deprecated.UTF8 {
		return true
	}
	return false
}

func (kv *tkv) cols() []*tcol {
	if kv == nil {
		return nil
	}
	out := []*tcol{kv.key}
	for _, c := range kv.vals {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// read gathers the lists of the next slot at repetition level rep (the
// slot that holds the list, or an ancestor of it).
func (kv *tkv) read(rep int) error {
	var err error
	if kv.keyG, err = kv.key.group(rep, kv.keyG); err != nil {
		return err
	}
	for k, c := range kv.vals {
		if c != nil {
			if kv.valG[k], err = c.group(rep, kv.valG[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// each calls f for every attribute of the gathered keys and values, which
// belong to slots at repetition level rep (kv.rep, or deeper for a list
// inside a list, like the attributes of each event). An attribute whose
// value is not one scalar (an array, a kvlist Tempo kept as JSON) comes
// with kind -1.
func (kv *tkv) each(keys []parquet.Value, vals *[tkCount][]parquet.Value, rep int, f func(key []byte, kind int, v parquet.Value) error) error {
	if len(keys) == 0 || (len(keys) == 1 && keys[0].DefinitionLevel() < kv.key.leaf.MaxDefinitionLevel) {
		return nil // no attributes
	}
	kv.splitK = split(keys, rep+1, kv.splitK)
	for k, c := range kv.vals {
		if c == nil {
			continue
		}
		kv.splitV[k] = split(vals[k], rep+1, kv.splitV[k])
		if len(kv.splitV[k]) != len(kv.splitK) {
			return fmt.Errorf("column %s: %d values for %d attribute keys (corrupt block)", c.path, len(kv.splitV[k]), len(kv.splitK))
		}
	}
	for i, kg := range kv.splitK {
		kind, n := -1, 0
		var val parquet.Value
		for k, c := range kv.vals {
			if c == nil {
				continue
			}
			for _, x := range kv.splitV[k][i] {
				if x.DefinitionLevel() == c.leaf.MaxDefinitionLevel {
					if n == 0 {
						kind, val = k, x
					}
					n++
				}
			}
		}
		if n != 1 {
			kind = -1
		}
		if err := f(kg[0].ByteArray(), kind, val); err != nil {
			return err
		}
	}
	return nil
}

// tkvText renders a scalar attribute value as traceRecord.addAttr takes it.
func tkvText(kind int, v parquet.Value, scratch []byte) (text []byte, str, ok bool) {
	switch kind {
	case tkString:
		return v.ByteArray(), true, true
	case tkInt:
		return strconv.AppendInt(scratch[:0], v.Int64(), 10), false, true
	case tkDouble:
		return strconv.AppendFloat(scratch[:0], v.Double(), 'g', -1, 64), false, true
	case tkBool:
		return strconv.AppendBool(scratch[:0], v.Boolean()), false, true
	case tkProto:
		if s, ok := protoAnyString(v.ByteArray()); ok {
			return s, true, true
		}
	}
	return nil, false, false
}

// protoAnyString reads the string_value (field 1) of a protobuf-encoded
// OTLP AnyValue, as vParquet2/3 store event attribute values.
func protoAnyString(b []byte) ([]byte, bool) {
	if len(b) < 1 || b[0] != 0x0a { // field 1, wire type 2 (bytes)
		return nil, false
	}
	n, w := binary.Uvarint(b[1:])
	if w <= 0 || n > uint64(len(b)-1-w) {
		return nil, false
	}
	return b[1+w : 1+w+int(n)], true
}

// tattr is a column that holds one attribute's value for each slot.
type tattr struct {
	key string
	col *tcol
}

// tempoMeta is the part of a block's meta.json tailscope uses.
type tempoMeta struct {
	Format    string `json:"format"`
	Dedicated []struct {
		Scope string `json:"s"`
		Name  string `json:"n"`
		Type  string `json:"t"`
	} `json:"dedicatedColumns"`
}

// readTempoMeta reads the meta.json beside a block's data.parquet, when
// the input is a plain file that has one. A missing or unreadable meta
// only means that dedicated attribute columns cannot be named.
func readTempoMeta(src *record.Source) *tempoMeta {
	if src.File == nil {
		return nil
	}
	f, err := os.Open(filepath.Join(filepath.Dir(src.Name), "meta.json"))
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4<<20))
	if err != nil {
		return nil
	}
	var m tempoMeta
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return &m
}

// dedicatedColumns maps meta.json's dedicated columns of one scope to the
// spare columns that hold them: per type, the n-th attribute listed takes
// the n-th spare column (String01…, Int01…), as Tempo assigns them.
func (m *tempoMeta) dedicatedColumns(scope string) map[string]string {
	out := map[string]string{}
	if m == nil {
		return out
	}
	next := map[string]int{}
	for _, d := range m.Dedicated {
		sc, typ := d.Scope, d.Type
		if sc == "" {
			sc = "span"
		}
		if typ == "" {
			typ = "string"
		}
		if sc != scope {
			continue
		}
		next[typ]++
		switch typ {
		case "string":
			out[d.Name] = fmt.Sprintf("DedicatedAttributes.String%02d", next[typ])
		case "int":
			out[d.Name] = fmt.Sprintf("DedicatedAttributes.Int%02d", next[typ])
		}
	}
	return out
}

// Well-known attributes Tempo keeps in columns of their own.
var (
	tempoSpanColumns     = map[string]string{"http.status_code": "HttpStatusCode", "http.method": "HttpMethod", "http.url": "HttpUrl"}
	tempoResourceColumns = map[string]string{
		"service.name": "ServiceName", "cluster": "Cluster", "namespace": "Namespace", "pod": "Pod", "container": "Container",
		"k8s.cluster.name": "K8sClusterName", "k8s.namespace.name": "K8sNamespaceName", "k8s.pod.name": "K8sPodName",
		"k8s.container.name": "K8sContainerName",
	}
)

// tempoCol indices of the span's own columns.
const (
	tcSpanID = iota
	tcParent
	tcName
	tcKind
	tcStart
	tcDur
	tcEnd
	tcStatus
	tcMessage
	tcTraceState
	tcCount
)

var tempoColNames = [tcCount][]string{
	tcSpanID:     {"SpanID", "ID"},
	tcParent:     {"ParentSpanID"},
	tcName:       {"Name"},
	tcKind:       {"Kind"},
	tcStart:      {"StartTimeUnixNano", "StartUnixNanos"},
	tcDur:        {"DurationNano", "DurationNanos"},
	tcEnd:        {"EndTimeUnixNano", "EndUnixNanos"},
	tcStatus:     {"StatusCode"},
	tcMessage:    {"StatusMessage"},
	tcTraceState: {"TraceState"},
}

// tempoReader holds the projection of one block.
type tempoReader struct {
	src     *record.Source
	hopAttr string
	cols    [tcCount]*tcol
	anchor  int
	rs      int // repetition level of a span slot
	spanDef int // definition level at which a span is present
	rr      int // repetition level of a resource slot

	trID    *tcol
	trText  bool
	svc     *tcol
	resCols []tattr // resource columns holding attributes (Pod, K8sPodName, dedicated…)
	resKV   *tkv    // resource Attrs, the generic list
	spanCol []tattr // span columns holding attributes
	spanKV  *tkv
	evName  *tcol
	evKV    *tkv
	all     []*tcol

	intern record.Interner
	// attrIntern holds attribute keys and values, apart from intern (see
	// jsonWalker.attrIntern); resAttrs are the attributes of the current
	// resource slot, attrBuf the borrowed spans' Attrs (Options.Borrowed).
	attrIntern record.Interner
	resAttrs   []span.Attr
	attrBuf    []span.Attr
	scratch    []byte
	evSplit    [][]parquet.Value
	evKeys     [][]parquet.Value
	evVals     [tkCount][][]parquet.Value
	evNameG    []parquet.Value
	evOne      [tkCount][]parquet.Value
}

func decodeTempo(src *record.Source, pf *parquet.File, l *tempoLayout) error {
	src.SetDefaultHopBy("service+name")
	s := pf.Schema()
	t := &tempoReader{src: src, hopAttr: src.Options().HopAttr(), anchor: -1}
	for i, alts := range tempoColNames {
		for _, n := range alts {
			if leaf, ok := lookupPath(s, l.span+n); ok {
				t.cols[i] = &tcol{path: l.span + n, leaf: leaf}
				break
			}
		}
		if t.cols[i] != nil && t.anchor < 0 && (i == tcSpanID || i == tcStart || i == tcDur || i == tcEnd) {
			t.anchor = i
		}
	}
	if t.cols[tcDur] == nil && (t.cols[tcEnd] == nil || t.cols[tcStart] == nil) {
		return fmt.Errorf("Tempo block without span durations: no %sDurationNano, nor start and end columns", l.span)
	}
	if t.anchor < 0 {
		t.anchor = tcDur
	}
	al := t.cols[t.anchor].leaf
	t.rs = al.MaxRepetitionLevel
	// Every span column must repeat exactly like the anchor, or its values
	// would not line up span by span; a column that does not is ignored.
	for i, c := range t.cols {
		if c != nil && c.leaf.MaxRepetitionLevel != t.rs {
			t.cols[i] = nil
		}
	}
	// A span is present in a slot when the anchor's definition level
	// reaches the span element.
	t.spanDef = al.MaxDefinitionLevel
	if al.Node.Optional() {
		t.spanDef--
	}
	spanScalar := func(key, path string) {
		if leaf, ok := lookupPath(s, path); ok && leaf.MaxRepetitionLevel == t.rs {
			t.spanCol = append(t.spanCol, tattr{key: key, col: &tcol{path: path, leaf: leaf}})
		}
	}
	// Every attribute column, for span.Span.Attrs (attribution) as well
	// as for the rules and --hop-by attr:KEY.
	for key, c := range tempoSpanColumns {
		spanScalar(key, l.span+c)
	}
	meta := readTempoMeta(src)
	for key, c := range meta.dedicatedColumns("span") {
		spanScalar(key, l.span+c)
	}
	sortAttrs(t.spanCol)
	t.spanKV = findKV(s, l.span+"Attrs", t.rs)
	if leaf, ok := lookupPath(s, l.span+"Events.list.element.Name"); ok && leaf.MaxRepetitionLevel == t.rs+1 {
		t.evName = &tcol{path: l.span + "Events.list.element.Name", leaf: leaf}
		t.evKV = findKV(s, l.span+"Events.list.element.Attrs", t.rs+1)
	}

	// Service and other resource columns: one value per resource slot.
	if leaf, ok := lookupPath(s, l.resource+"ServiceName"); ok && leaf.MaxRepetitionLevel >= 1 && leaf.MaxRepetitionLevel < t.rs {
		t.svc = &tcol{path: l.resource + "ServiceName", leaf: leaf}
		t.rr = leaf.MaxRepetitionLevel
	}
	if t.svc != nil {
		// The resource's attributes: the columns Tempo gives the
		// well-known ones (the service is the span's Service), the
		// dedicated ones, and the generic list.
		resScalar := func(key, path string) {
			if leaf, ok := lookupPath(s, path); ok && leaf.MaxRepetitionLevel == t.rr {
				t.resCols = append(t.resCols, tattr{key: key, col: &tcol{path: path, leaf: leaf}})
			}
		}
		for key, c := range tempoResourceColumns {
			if c != "ServiceName" {
				resScalar(key, l.resource+c)
			}
		}
		for key, c := range meta.dedicatedColumns("resource") {
			resScalar(key, l.resource+c)
		}
		sortAttrs(t.resCols)
		t.resKV = findKV(s, l.resource+"Attrs", t.rr)
	}
	// Trace id: one value per row, raw bytes preferred.
	if leaf, ok := s.Lookup("TraceID"); ok && leaf.MaxRepetitionLevel == 0 {
		t.trID = &tcol{path: "TraceID", leaf: leaf}
	} else if leaf, ok := s.Lookup("TraceIDText"); ok && leaf.MaxRepetitionLevel == 0 {
		t.trID, t.trText = &tcol{path: "TraceIDText", leaf: leaf}, true
	}

	for _, c := range t.cols {
		if c != nil {
			t.all = append(t.all, c)
		}
	}
	for _, a := range append(t.spanCol, t.resCols...) {
		t.all = append(t.all, a.col)
	}
	for _, c := range []*tcol{t.svc, t.trID, t.evName} {
		if c != nil {
			t.all = append(t.all, c)
		}
	}
	t.all = append(append(append(t.all, t.spanKV.cols()...), t.resKV.cols()...), t.evKV.cols()...)

	var index int64
	for gi, rg := range pf.RowGroups() {
		if err := t.rowGroup(rg, &index); err != nil {
			return fmt.Errorf("row group %d: %v", gi+1, err)
		}
	}
	return nil
}

func sortAttrs(a []tattr) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].key < a[j-1].key; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

func (t *tempoReader) rowGroup(rg parquet.RowGroup, index *int64) error {
	chunks := rg.ColumnChunks()
	for _, c := range t.all {
		c.open(chunks)
	}
	defer func() {
		for _, c := range t.all {
			c.cur.Close()
		}
	}()
	var vals [tcCount]parquet.Value
	var traceID, service, resHop string
	var resHopSet bool
	var rec record.TraceRecord
	for {
		av, ok := t.cols[t.anchor].cur.Next()
		if !ok {
			if err := t.cols[t.anchor].cur.Err; err != nil {
				return fmt.Errorf("column %s: %v", t.cols[t.anchor].path, err)
			}
			break
		}
		rep := av.RepetitionLevel()
		if rep == 0 && t.trID != nil {
			v, err := t.trID.take()
			if err != nil {
				return err
			}
			switch {
			case v.IsNull():
				traceID = ""
			case t.trText:
				traceID = record.NormID(v.ByteArray(), 32)
			default:
				t.scratch = hex.AppendEncode(t.scratch[:0], v.ByteArray())
				traceID = record.NormID(t.scratch, 32)
			}
		}
		if t.svc != nil && rep <= t.rr {
			v, err := t.svc.take()
			if err != nil {
				return err
			}
			service = ""
			if !v.IsNull() {
				service = t.intern.Get(v.ByteArray())
			}
			if resHop, resHopSet, err = t.resource(); err != nil {
				return err
			}
		}
		rec.Reset()
		// Read every column's share of this slot, whether it holds a span
		// or not, so that all columns stay in step.
		for i, c := range t.cols {
			switch {
			case i == t.anchor:
				vals[i] = av
			case c == nil:
				vals[i] = parquet.Value{}
			default:
				v, err := c.take()
				if err != nil {
					return err
				}
				vals[i] = v
			}
		}
		var attrErr error
		for _, a := range t.spanCol {
			v, err := a.col.take()
			if err != nil {
				return err
			}
			if v.IsNull() || attrErr != nil {
				continue
			}
			kind := tkString
			if v.Kind() == parquet.Int32 || v.Kind() == parquet.Int64 {
				kind = tkInt
			}
			text, str, _ := tkvText(kind, v, t.scratch)
			attrErr = t.addAttr(&rec, a.key, text, str)
		}
		if t.spanKV != nil {
			if err := t.spanKV.read(t.rs); err != nil {
				return err
			}
		}
		if t.evName != nil {
			var err error
			if t.evNameG, err = t.evName.group(t.rs, t.evNameG); err != nil {
				return err
			}
			if t.evKV != nil {
				if err := t.evKV.read(t.rs); err != nil {
					return err
				}
			}
		}
		if av.DefinitionLevel() < t.spanDef {
			continue // a trace or resource with no spans in this slot
		}
		*index++
		if t.spanKV != nil && attrErr == nil {
			attrErr = t.spanKV.each(t.spanKV.keyG, &t.spanKV.valG, t.rs, func(key []byte, kind int, v parquet.Value) error {
				text, str, ok := tkvText(kind, v, t.scratch)
				if !ok {
					return nil
				}
				return t.addAttr(&rec, string(key), text, str)
			})
		}
		if t.evName != nil && attrErr == nil {
			attrErr = t.events(&rec)
		}
		if attrErr != nil {
			// An attribute or event that cannot be read costs the
			// span only that value.
			rec.Ignore("attributes", attrErr)
		}
		if reason, detail := t.span(&rec, &vals); reason != "" {
			t.src.Skip(0, *index, reason, detail)
			continue
		}
		rec.Span.TraceID, rec.Span.Service = traceID, service
		if !rec.HopSet && resHopSet {
			rec.Hop, rec.HopSet = resHop, true
		}
		rec.Finish(&t.intern)
		t.setAttrs(&rec)
		t.src.EmitSoft(&rec.Span, 0, *index, rec.Soft)
	}
	for _, c := range t.all {
		if !c.exhausted() {
			return fmt.Errorf("column %s has more values than spans (corrupt block)", c.path)
		}
	}
	return nil
}

// addAttr applies one span attribute with the rules every trace format
// shares; "error" is the OpenTracing boolean, as in OTLP.
func (t *tempoReader) addAttr(rec *record.TraceRecord, key string, text []byte, str bool) error {
	if key == "error" {
		if b, err := record.ParseBool(text); err == nil && b {
			rec.ErrFlag = true
		}
		return nil
	}
	rec.AddAttr(key, text, str, t.hopAttr)
	rec.KeepAttr(&t.attrIntern, key, text)
	return nil
}

// setAttrs makes the span's Attrs its resource's attributes, then its
// own: a slice of the span's own, or, when spans are borrowed, the
// reader's buffer, valid until the next span. The strings are interned,
// never views of Parquet pages.
func (t *tempoReader) setAttrs(rec *record.TraceRecord) {
	n := len(t.resAttrs) + len(rec.Attrs)
	if n == 0 {
		rec.Span.Attrs = nil
		return
	}
	var out []span.Attr
	if t.src.Options().Borrowed {
		out = t.attrBuf[:0]
	} else {
		out = make([]span.Attr, 0, n)
	}
	out = append(append(out, t.resAttrs...), rec.Attrs...)
	if t.src.Options().Borrowed {
		t.attrBuf = out
	}
	rec.Span.Attrs = out
}

// resource reads the resource columns of a new resource slot into
// t.resAttrs and returns its --hop-by attr:KEY value, when it has one.
func (t *tempoReader) resource() (hop string, set bool, err error) {
	t.resAttrs = t.resAttrs[:0]
	keep := func(key string, text []byte) {
		if t.hopAttr != "" && !set && key == t.hopAttr {
			hop, set = string(text), true
		}
		if len(text) > 0 && record.AttrKept(key) {
			t.resAttrs = append(t.resAttrs, span.Attr{Key: t.attrIntern.Get([]byte(key)), Value: t.attrIntern.Get(text)})
		}
	}
	for _, a := range t.resCols {
		v, err := a.col.take()
		if err != nil {
			return "", false, err
		}
		if v.IsNull() {
			continue
		}
		kind := tkString
		if v.Kind() == parquet.Int32 || v.Kind() == parquet.Int64 {
			kind = tkInt
		}
		text, _, _ := tkvText(kind, v, t.scratch)
		keep(a.key, text)
	}
	if t.resKV == nil {
		return hop, set, nil
	}
	if err := t.resKV.read(t.rr); err != nil {
		return "", false, err
	}
	err = t.resKV.each(t.resKV.keyG, &t.resKV.valG, t.rr, func(key []byte, kind int, v parquet.Value) error {
		if text, _, ok := tkvText(kind, v, t.scratch); ok {
			keep(string(key), text)
		}
		return nil
	})
	return hop, set, err
}

// events looks for an exception event naming a timeout, as OTLP's reader
// does.
func (t *tempoReader) events(rec *record.TraceRecord) error {
	names := t.evNameG
	if len(names) == 0 || (len(names) == 1 && names[0].DefinitionLevel() < t.evName.leaf.MaxDefinitionLevel) {
		return nil
	}
	t.evSplit = split(names, t.rs+1, t.evSplit)
	if t.evKV == nil {
		return nil
	}
	kv := t.evKV
	t.evKeys = split(kv.keyG, t.rs+1, t.evKeys)
	if len(t.evKeys) != len(t.evSplit) {
		return fmt.Errorf("column %s: attributes for %d events, want %d (corrupt block)", kv.key.path, len(t.evKeys), len(t.evSplit))
	}
	for k, c := range kv.vals {
		if c != nil {
			t.evVals[k] = split(kv.valG[k], t.rs+1, t.evVals[k])
			if len(t.evVals[k]) != len(t.evSplit) {
				return fmt.Errorf("column %s: values for %d events, want %d (corrupt block)", c.path, len(t.evVals[k]), len(t.evSplit))
			}
		}
	}
	for i, ev := range t.evSplit {
		if string(ev[0].ByteArray()) != "exception" {
			continue
		}
		for k := range t.evOne {
			t.evOne[k] = nil
			if kv.vals[k] != nil {
				t.evOne[k] = t.evVals[k][i]
			}
		}
		err := kv.each(t.evKeys[i], &t.evOne, t.rs+1, func(key []byte, kind int, v parquet.Value) error {
			text, _, ok := tkvText(kind, v, t.scratch)
			if ok {
				rec.ExceptionAttr(string(key), text)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// span fills rec from the span's own columns.
func (t *tempoReader) span(rec *record.TraceRecord, vals *[tcCount]parquet.Value) (reason, detail string) {
	sp := &rec.Span
	if v := vals[tcSpanID]; !v.IsNull() {
		sp.SpanID = hexID(v, &t.scratch)
	}
	if v := vals[tcParent]; !v.IsNull() {
		sp.ParentID = hexID(v, &t.scratch)
	}
	if v := vals[tcName]; !v.IsNull() {
		sp.Name = t.intern.Get(v.ByteArray())
	}
	if v := vals[tcKind]; !v.IsNull() {
		switch n := v.Int64(); n {
		case 1, 2, 3, 4, 5:
			sp.Kind = record.NormKind(strconv.AppendInt(t.scratch[:0], n, 10))
		}
	}
	if v := vals[tcStatus]; !v.IsNull() {
		switch v.Int64() {
		case 1:
			rec.Status, rec.StatusSet = span.OK, true
		case 2:
			rec.Status, rec.StatusSet = span.Error, true
		}
	}
	if v := vals[tcMessage]; !v.IsNull() && len(v.ByteArray()) > 0 {
		rec.Message = string(v.ByteArray())
	}
	if v := vals[tcTraceState]; !v.IsNull() && len(v.ByteArray()) > 0 {
		rec.TraceState = string(v.ByteArray())
	}
	start, hasStart := vals[tcStart].Int64(), !vals[tcStart].IsNull()
	switch {
	case !vals[tcDur].IsNull():
		if !hasStart || start == 0 {
			return record.ReasonNoStart, "no StartTimeUnixNano"
		}
		sp.Start, sp.Duration = start, vals[tcDur].Int64()
		if sp.Duration < 0 {
			return record.ReasonBadValue, fmt.Sprintf("DurationNano %d is out of range", uint64(sp.Duration))
		}
	case !vals[tcEnd].IsNull():
		end := vals[tcEnd].Int64()
		switch {
		case !hasStart || start == 0:
			return record.ReasonNoStart, "no start time"
		case end < start:
			return record.ReasonEndBeforeStart, fmt.Sprintf("end %d < start %d", end, start)
		}
		sp.Start, sp.Duration = start, end-start
	default:
		return record.ReasonNoDuration, "no DurationNano"
	}
	return "", ""
}

// hexID renders a binary span id as lowercase hex, the spelling every
// other reader uses; an id already stored as text is kept.
func hexID(v parquet.Value, scratch *[]byte) string {
	b := v.ByteArray()
	if len(b) == 0 {
		return ""
	}
	if v.Kind() == parquet.ByteArray && isHexText(b) {
		return record.NormID(b, 16)
	}
	*scratch = hex.AppendEncode((*scratch)[:0], b)
	return record.NormID(*scratch, 16)
}

func isHexText(b []byte) bool {
	if len(b) < 16 {
		return false // 8 raw bytes could be anything; 16+ hex chars is text
	}
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// tempoBlockFiles narrows the files found under a directory when some
// folders are Grafana Tempo blocks, so that pointing tailscope at a block,
// a tenant or a whole local Tempo store reads spans and nothing else:
//
//   - a folder holding meta.json and data.parquet is a block: data.parquet
//     holds its spans; meta.json, the bloom-N filters, the index and the
//     flushed marker are Tempo's bookkeeping;
//   - a folder holding meta.compacted.json and data.parquet is a block that
//     compaction replaced: its traces are also in the block that replaced
//     it, so reading both would count them twice; its data.parquet is not
//     read (nor its bookkeeping);
//   - a tenant folder's index.json(.gz), beside block folders, lists blocks.
//
// Only those files are passed over, each with its reason: any other file
// in such a folder (a log someone put there) is read like any file. Each
// folder passed over in part gives one note.
func tempoBlockFiles(found []string) (keep []string, passed []record.PassedFile, notes []string) {
	names := map[string]map[string]bool{}
	for _, f := range found {
		d := filepath.Dir(f)
		if names[d] == nil {
			names[d] = map[string]bool{}
		}
		names[d][filepath.Base(f)] = true
	}
	live := func(d string) bool { return names[d]["meta.json"] && names[d]["data.parquet"] }
	compacted := func(d string) bool {
		return names[d]["meta.compacted.json"] && names[d]["data.parquet"] && !names[d]["meta.json"]
	}
	tenant := map[string]bool{}
	for d := range names {
		if live(d) || compacted(d) {
			tenant[filepath.Dir(d)] = true
		}
	}
	count := map[string]int{}
	var order []string
	for _, f := range found {
		d, b := filepath.Dir(f), filepath.Base(f)
		var reason string
		strict := false
		switch {
		case (live(d) || compacted(d)) && tempoBookkeeping(b):
			reason = "Tempo block bookkeeping (meta, bloom filter, index)"
		case compacted(d) && b == "data.parquet":
			reason = "a compacted Tempo block (meta.compacted.json): its traces are in the block that replaced it"
			strict = true
		case tenant[d] && (b == "index.json.gz" || b == "index.json"):
			reason = "Tempo's tenant index"
		default:
			keep = append(keep, f)
			continue
		}
		passed = append(passed, record.PassedFile{File: f, Reason: reason, Strict: strict})
		if count[d] == 0 {
			order = append(order, d)
		}
		count[d]++
	}
	for _, d := range order {
		switch {
		case compacted(d):
			notes = append(notes, fmt.Sprintf("%s: a compacted Tempo block (meta.compacted.json): passed over, its traces are in the block that replaced it", d))
		case live(d):
			notes = append(notes, fmt.Sprintf("%s: a Tempo block: read data.parquet, passed over %d bookkeeping files (meta.json, bloom filters, index)", d, count[d]))
		default:
			notes = append(notes, fmt.Sprintf("%s: passed over Tempo's tenant index (index.json)", d))
		}
	}
	return keep, passed, notes
}

// tempoBookkeeping reports whether a file name is one Tempo writes beside a
// block's data: its meta, bloom filter shards, index and markers.
func tempoBookkeeping(name string) bool {
	switch name {
	case "meta.json", "meta.compacted.json", "index", "flushed", "nocompact.flg":
		return true
	}
	if n, ok := strings.CutPrefix(name, "bloom-"); ok && n != "" {
		_, err := strconv.Atoi(n)
		return err == nil
	}
	return false
}

package tempo

import (
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/pool"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

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
	branch  record.Branch // the worker's share of Source.Fork (parallel only)
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

	// out, when set, collects the row group's spans and skips for the
	// goroutine that delivers them in order (parallel.go).
	out *chunkOut
}

// Decode reads the spans of a block's data.parquet, whose layout is l:
// its row groups on all cores (Options.Paths.Workers caps them) when it has several
// (parallel.go), else here.
func Decode(src *record.Source, pf *parquet.File, l *tempoLayout) error {
	src.SetDefaultHopBy("service+name")
	meta := readTempoMeta(src)
	t, err := newReader(src, pf.Schema(), l, meta)
	if err != nil {
		return err
	}
	rgs := pf.RowGroups()
	// The anchor column holds a value per span, and one per empty list
	// above it (rare): its count is a close estimate of the spans.
	var spans int64
	for _, rg := range rgs {
		spans += rg.ColumnChunks()[t.cols[t.anchor].leaf.ColumnIndex].NumValues()
	}
	src.Expect(spans, false)
	if workers := min(src.Options().Paths.WorkersOr(pool.Workers()), len(rgs)); workers > 1 {
		return decodeParallel(src, pf, l, meta, t, workers)
	}
	var index int64
	for gi, rg := range rgs {
		if err := t.rowGroup(rg, &index); err != nil {
			return fmt.Errorf("row group %d: %v", gi+1, err)
		}
	}
	return nil
}

// newReader plans the projection of a block: the columns read and how
// they nest. Each decoding goroutine has a reader of its own.
func newReader(src *record.Source, s *parquet.Schema, l *tempoLayout, meta *tempoMeta) (*tempoReader, error) {
	t := &tempoReader{src: src, hopAttr: src.Options().HopAttr(), anchor: -1}
	for i, alts := range tempoColNames {
		for _, n := range alts {
			if leaf, ok := LookupPath(s, l.span+n); ok {
				t.cols[i] = &tcol{path: l.span + n, leaf: leaf}
				break
			}
		}
		if t.cols[i] != nil && t.anchor < 0 && (i == tcSpanID || i == tcStart || i == tcDur || i == tcEnd) {
			t.anchor = i
		}
	}
	if t.cols[tcDur] == nil && (t.cols[tcEnd] == nil || t.cols[tcStart] == nil) {
		return nil, fmt.Errorf("a Tempo block without span durations: no %sDurationNano, nor start and end columns", l.span)
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
		if leaf, ok := LookupPath(s, path); ok && leaf.MaxRepetitionLevel == t.rs {
			t.spanCol = append(t.spanCol, tattr{key: key, col: &tcol{path: path, leaf: leaf}})
		}
	}
	// Every attribute column, for span.Span.Attrs (attribution) as well
	// as for the rules and --hop-by attr:KEY.
	for key, c := range tempoSpanColumns {
		spanScalar(key, l.span+c)
	}
	for key, c := range meta.dedicatedColumns("span") {
		spanScalar(key, l.span+c)
	}
	sortAttrs(t.spanCol)
	t.spanKV = findKV(s, l.span+"Attrs", t.rs)
	if leaf, ok := LookupPath(s, l.span+"Events.list.element.Name"); ok && leaf.MaxRepetitionLevel == t.rs+1 {
		t.evName = &tcol{path: l.span + "Events.list.element.Name", leaf: leaf}
		t.evKV = findKV(s, l.span+"Events.list.element.Attrs", t.rs+1)
	}

	// Service and other resource columns: one value per resource slot.
	if leaf, ok := LookupPath(s, l.resource+"ServiceName"); ok && leaf.MaxRepetitionLevel >= 1 && leaf.MaxRepetitionLevel < t.rs {
		t.svc = &tcol{path: l.resource + "ServiceName", leaf: leaf}
		t.rr = leaf.MaxRepetitionLevel
	}
	if t.svc != nil {
		// The resource's attributes: the columns Tempo gives the
		// well-known ones (the service is the span's Service), the
		// dedicated ones, and the generic list.
		resScalar := func(key, path string) {
			if leaf, ok := LookupPath(s, path); ok && leaf.MaxRepetitionLevel == t.rr {
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
	return t, nil
}

func sortAttrs(a []tattr) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].key < a[j-1].key; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// rowGroup reads the spans of one row group in order. The anchor column
// (a span column present in every slot) drives the walk: each of its
// values is one slot of the nested lists, a span or an empty list above
// one, and its repetition level says whether a trace or a resource starts
// there.
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
		var err error
		rep := av.RepetitionLevel()
		if rep == 0 && t.trID != nil {
			if traceID, err = t.traceID(); err != nil {
				return err
			}
		}
		if t.svc != nil && rep <= t.rr {
			if service, resHop, resHopSet, err = t.resourceSlot(); err != nil {
				return err
			}
		}
		rec.Reset()
		attrErr, err := t.slot(&rec, av, &vals)
		if err != nil {
			return err
		}
		if av.DefinitionLevel() < t.spanDef {
			continue // a trace or resource with no spans in this slot
		}
		*index++
		if attrErr == nil {
			attrErr = t.slotAttrs(&rec)
		}
		if attrErr != nil {
			// An attribute or event that cannot be read costs the
			// span only that value.
			rec.Ignore("attributes", attrErr)
		}
		if reason, detail := t.span(&rec, &vals); reason != "" {
			if !t.skip(*index, reason, detail) {
				return errStopped
			}
			continue
		}
		rec.Span.TraceID, rec.Span.Service = traceID, service
		if !rec.HopSet && resHopSet {
			rec.Hop, rec.HopSet = resHop, true
		}
		rec.Finish(&t.intern)
		t.setAttrs(&rec)
		if !t.emit(&rec, *index) {
			return errStopped
		}
	}
	for _, c := range t.all {
		if !c.exhausted() {
			return fmt.Errorf("column %s has more values than spans (corrupt block)", c.path)
		}
	}
	return nil
}

// traceID reads the id of the trace starting at this slot: raw bytes
// written as hex, or text normalized as the other formats' ids are.
func (t *tempoReader) traceID() (string, error) {
	v, err := t.trID.take()
	switch {
	case err != nil:
		return "", err
	case v.IsNull():
		return "", nil
	case t.trText:
		return record.NormID(v.ByteArray(), 32), nil
	case len(v.ByteArray()) == 0:
		return "", nil
	}
	return hexOf(v.ByteArray(), 32, &t.scratch), nil
}

// resourceSlot reads the resource starting at this slot: its service and
// what resource reads (its attributes and the hop they name).
func (t *tempoReader) resourceSlot() (service, hop string, hopSet bool, err error) {
	v, err := t.svc.take()
	if err != nil {
		return "", "", false, err
	}
	if !v.IsNull() {
		service = t.intern.Get(v.ByteArray())
	}
	hop, hopSet, err = t.resource()
	return service, hop, hopSet, err
}

// slot reads every column's share of this slot, whether it holds a span
// or not, so that all columns stay in step: the span's own columns into
// vals (av being the anchor's value), the span attribute columns into rec,
// and the groups of the attribute and event lists for slotAttrs. attrErr
// is the first span attribute that could not be read (the span goes on
// without the rest); err ends the row group.
func (t *tempoReader) slot(rec *record.TraceRecord, av parquet.Value, vals *[tcCount]parquet.Value) (attrErr, err error) {
	for i, c := range t.cols {
		switch {
		case i == t.anchor:
			vals[i] = av
		case c == nil:
			vals[i] = parquet.Value{}
		default:
			v, err := c.take()
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
	}
	for _, a := range t.spanCol {
		v, err := a.col.take()
		if err != nil {
			return nil, err
		}
		if v.IsNull() || attrErr != nil {
			continue
		}
		kind := tkString
		if v.Kind() == parquet.Int32 || v.Kind() == parquet.Int64 {
			kind = tkInt
		}
		text, str, _ := tkvText(kind, v, t.scratch)
		attrErr = t.addAttr(rec, a.key, text, str)
	}
	if t.spanKV != nil {
		if err := t.spanKV.read(t.rs); err != nil {
			return nil, err
		}
	}
	if t.evName != nil {
		if t.evNameG, err = t.evName.group(t.rs); err != nil {
			return nil, err
		}
		if t.evKV != nil {
			if err := t.evKV.read(t.rs); err != nil {
				return nil, err
			}
		}
	}
	return attrErr, nil
}

// slotAttrs applies the span's generic attribute list and its events, as
// slot read them; it returns the first that could not be read.
func (t *tempoReader) slotAttrs(rec *record.TraceRecord) error {
	if t.spanKV != nil {
		err := t.spanKV.each(t.spanKV.keyG, &t.spanKV.valG, t.rs, func(key []byte, kind int, v parquet.Value) error {
			text, str, ok := tkvText(kind, v, t.scratch)
			if !ok {
				return nil
			}
			return t.addAttrBytes(rec, key, text, str)
		})
		if err != nil {
			return err
		}
	}
	if t.evName != nil {
		return t.events(rec)
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

// addAttrBytes is addAttr for a key read from a page: the key is the
// interned string (no string built per attribute), kept as it is for
// span.Span.Attrs. A key the interner changed (invalid UTF-8, made
// U+FFFD) goes the general way, with its bytes as they are.
func (t *tempoReader) addAttrBytes(rec *record.TraceRecord, kb []byte, text []byte, str bool) error {
	key := t.attrIntern.Get(kb)
	if key != string(kb) {
		return t.addAttr(rec, string(kb), text, str)
	}
	if key == "error" {
		return t.addAttr(rec, key, text, str)
	}
	rec.AddAttr(key, text, str, t.hopAttr)
	if record.AttrKept(key) {
		rec.Attrs = append(rec.Attrs, span.Attr{Key: key, Value: t.attrIntern.Get(text)})
	}
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
	// Interned keys and values (attrIntern): attribution may hold them
	// and find them by address (span.Span.StableAttrs).
	rec.Span.Attrs, rec.Span.StableAttrs = out, true
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
	// keepBytes is keep for a key read from a page, interned rather than
	// built; one the interner changed (invalid UTF-8) goes through keep
	// as it is.
	keepBytes := func(kb []byte, text []byte) {
		key := t.attrIntern.Get(kb)
		if key != string(kb) {
			keep(string(kb), text)
			return
		}
		if t.hopAttr != "" && !set && key == t.hopAttr {
			hop, set = string(text), true
		}
		if len(text) > 0 && record.AttrKept(key) {
			t.resAttrs = append(t.resAttrs, span.Attr{Key: key, Value: t.attrIntern.Get(text)})
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
			keepBytes(key, text)
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
	return hexOf(b, 16, scratch)
}

// hexOf is record.NormID(hex of b, width) without its checks and copies:
// the hex of raw bytes is lowercase hex digits already, so what NormID
// does to it is pad it with zeros to width and take all zeros for no id.
func hexOf(b []byte, width int, scratch *[]byte) string {
	zero := true
	for _, c := range b {
		if c != 0 {
			zero = false
			break
		}
	}
	if zero {
		return ""
	}
	s := (*scratch)[:0]
	for n := 2 * len(b); n < width; n++ {
		s = append(s, '0')
	}
	s = hex.AppendEncode(s, b)
	*scratch = s
	return string(s)
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

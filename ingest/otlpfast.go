package ingest

// The fast path of OTLP JSON.
//
// The general OTLP reader (otlp.go) walks a document token by token with
// the streaming tokenizer, copies each span out, and reads it member by
// member with callbacks that allocate a key string per member: some forty
// allocations and two copies per span. Almost every span a collector
// writes has the same plain shape (hex ids, plain strings, numeric kind,
// string times, attributes of one scalar value each), and so do almost all
// documents: the file exporter writes one TracesData per line.
//
// So the reader tries two fast paths before the general one:
//
//   - otlpFastLine: at the start of a line that starts with '{', it takes
//     the whole line from the buffer (a line is one document in the file
//     exporter's output) and reads it in one pass over the bytes — the
//     structure resourceSpans → resource, scopeSpans → scope, spans, and
//     each span in place — into records, without copying a span or
//     allocating per member. Only once the whole line has been read
//     without meeting anything unusual are its spans emitted, through the
//     same otlpEmit as the general path, and the line consumed; otherwise
//     nothing has happened, and the general walker reads the line from
//     the same position and state.
//   - otlpFastSpan: the general walker, reading a span it has copied out
//     (one big document, a pretty-printed file), reads it with the same
//     one-pass span decoder before falling back to otlpSpan.
//
// "Unusual" is anything whose handling the general path decides: an
// escaped string, a value of an unexpected type, a duplicated member, a
// span the general path would skip or keep with a value it could not
// read, a status or attribute in a form other than the canonical one, an
// element that is not an object, a wrapper, a record over --max-record,
// trailing data, any syntax the two tokenizers might judge differently.
// The fast paths never decide an error, a skip or a position: they only
// produce, for the inputs they accept, the records the general path
// produces, and the helpers that set a record's fields (addAttr, otlpKind,
// otlpStatus, otlpEvents, otlpReadResource, otlpScope, otlpEmit) are the
// general path's own. The differential tests (otlpfast_test.go) and
// FuzzOTLPFast read every input both ways and compare spans, attributes,
// skips, positions and counts.

import (
	"bufio"
	"bytes"
	"io"
	"math"
	"unicode/utf8"
	"unsafe"

	"github.com/tailscope/tailscope/span"
)

// otlpFastEnabled turns the fast paths on; the differential tests turn
// it off to read the same input with the general path alone.
var otlpFastEnabled = true

// otlpWorkers is the number of goroutines that parse lines
// (otlpparallel.go): all cores, or what a test sets in otlpWorkersSet.
func otlpWorkers() int {
	if otlpWorkersSet > 0 {
		return otlpWorkersSet
	}
	return jsonlWorkers()
}

var otlpWorkersSet int

// otlpLineBuffer is the read buffer of the OTLP reader: a line up to this
// size can be read in place by the fast path (a collector batch of a few
// thousand spans is one to four MB); a longer one is read by the general
// walker, which streams.
var otlpLineBuffer = 8 << 20

// otlpFastDepth bounds the nesting of a value the fast path skips; deeper
// values are left to the general path (its scanner stops at maxDepth).
const otlpFastDepth = 256

// bstr is b as a string without a copy: valid while b is unchanged.
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func fastWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// fastValue reads the value at b[i] (after whitespace): a plain string's
// content, a scalar's literal, an object's or array's raw text; end is the
// index after it. ok is false for anything either tokenizer of the general
// path might judge otherwise: an escaped or malformed string, a scalar
// not followed by a delimiter, a literal other than true/false/null,
// brackets that do not match, nesting past otlpFastDepth.
func fastValue(b []byte, i int) (k kind, v []byte, end int, ok bool) {
	if i >= len(b) {
		return 0, nil, 0, false
	}
	switch c := b[i]; {
	case c == '"':
		j, ok := plainString(b, i+1)
		if !ok {
			return 0, nil, 0, false
		}
		return kString, b[i+1 : j], j + 1, true
	case c == '{' || c == '[':
		e, ok := fastSkipNested(b, i)
		if !ok {
			return 0, nil, 0, false
		}
		if c == '{' {
			return kObject, b[i:e], e, true
		}
		return kArray, b[i:e], e, true
	case c == '-' || (c >= '0' && c <= '9'):
		j := i + 1
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
			j++
		}
		k, v, end = kNumber, b[i:j], j
	case c == 't' && hasLit(b, i, "true"):
		k, v, end = kBool, b[i:i+4], i+4
	case c == 'f' && hasLit(b, i, "false"):
		k, v, end = kBool, b[i:i+5], i+5
	case c == 'n' && hasLit(b, i, "null"):
		k, v, end = kNull, b[i:i+4], i+4
	default:
		return 0, nil, 0, false
	}
	// A scalar ends where the general path's tokenizers both end it.
	if end < len(b) {
		switch b[end] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
		default:
			return 0, nil, 0, false
		}
	}
	return k, v, end, true
}

// fastSkipNested finds the end of the object or array at b[i], checking
// what both general tokenizers check (balance, matching brackets, strings)
// and more: any escape or control character in a string gives up.
func fastSkipNested(b []byte, i int) (int, bool) {
	var stack [otlpFastDepth]byte
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '{', '[':
			if depth == len(stack) {
				return 0, false
			}
			stack[depth] = c
			depth++
			i++
		case '}', ']':
			if depth == 0 || (c == '}') != (stack[depth-1] == '{') {
				return 0, false
			}
			depth--
			i++
			if depth == 0 {
				return i, true
			}
		case '"':
			j, ok := plainString(b, i+1)
			if !ok {
				return 0, false
			}
			i = j + 1
		default:
			i++
		}
	}
	return 0, false
}

// fastMembers calls f for each member of the object at b[i], its key as
// bytes of b and at the index of its value; end is the index after the
// object. f returns false to give up.
func fastMembers(b []byte, i int, f func(key []byte, k kind, v []byte, at int) bool) (end int, ok bool) {
	return fastObject(b, i, func(key []byte, at int) int {
		k, v, e, ok := fastValue(b, at)
		if !ok || !f(key, k, v, at) {
			return -1
		}
		return e
	})
}

// fastObject is fastMembers for a caller that reads each value itself: f
// gets the index of the value's first byte and returns the index after
// it, or -1 to give up. A nested value is then read once, in place, not
// delimited first and walked again.
func fastObject(b []byte, i int, f func(key []byte, at int) int) (end int, ok bool) {
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	i = fastWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		j, ok := plainString(b, i+1)
		if !ok {
			return 0, false
		}
		key := b[i+1 : j]
		i = fastWS(b, j+1)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		e := f(key, fastWS(b, i+1))
		if e < 0 {
			return 0, false
		}
		i = fastWS(b, e)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = fastWS(b, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// fastSkip is fastObject's reading of a value its caller passes over.
func fastSkip(b []byte, at int) int {
	_, _, e, ok := fastValue(b, at)
	if !ok {
		return -1
	}
	return e
}

// fastElems calls f for each element of the array at b[i] with the index
// of the element's first byte; f returns the index after the element, or
// -1 to give up.
func fastElems(b []byte, i int, f func(at int) int) (end int, ok bool) {
	if i >= len(b) || b[i] != '[' {
		return 0, false
	}
	i = fastWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		e := f(i)
		if e < 0 {
			return 0, false
		}
		i = fastWS(b, e)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = fastWS(b, i+1)
		case ']':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// The members of a span the fast path reads, for the duplicate check.
const (
	osTrace = 1 << iota
	osSpan
	osParent
	osName
	osKind
	osStart
	osEnd
	osState
	osAttrs
	osStatus
	osEvents
)

// otlpFastSpan reads the span object at b[i] into rec (reset first) and
// returns the index after it; ok is false when the general path must read
// it (rec is then undefined). With borrow, ids and attributes may alias b.
func (w *jsonWalker) otlpFastSpan(b []byte, i int, rec *traceRecord, borrow bool) (int, bool) {
	rec.reset()
	sp := &rec.sp
	var startNs, endNs int64
	var seen uint32
	e, ok := fastObject(b, i, func(key []byte, at int) int {
		var f uint32
		switch bstr(key) {
		case "traceId", "trace_id":
			f = osTrace
		case "spanId", "span_id":
			f = osSpan
		case "parentSpanId", "parent_span_id":
			f = osParent
		case "name":
			f = osName
		case "kind":
			f = osKind
		case "startTimeUnixNano", "start_time_unix_nano":
			f = osStart
		case "endTimeUnixNano", "end_time_unix_nano":
			f = osEnd
		case "traceState", "trace_state":
			f = osState
		case "attributes":
			f = osAttrs
			if at < len(b) && b[at] == '[' {
				if seen&f != 0 {
					return -1 // a repeated member: the general path's order rules
				}
				seen |= f
				return w.otlpFastAttrs(b, at, rec, borrow)
			}
		case "status":
			f = osStatus
		case "events":
			f = osEvents
		default:
			return fastSkip(b, at) // passed over by the general path too
		}
		k, v, vend, ok := fastValue(b, at)
		if !ok {
			return -1
		}
		if k == kNull {
			return vend // the general path passes a null member over
		}
		if seen&f != 0 {
			return -1 // a repeated member: the general path's order rules
		}
		seen |= f
		switch f {
		case osTrace, osSpan, osParent:
			if k != kString {
				return -1
			}
			width := 16
			if f == osTrace {
				width = 32
			}
			id := otlpFastID(v, width, borrow)
			switch f {
			case osTrace:
				sp.TraceID = id
			case osSpan:
				sp.SpanID = id
			default:
				sp.ParentID = id
			}
		case osName:
			if k != kString && k != kNumber && k != kBool {
				return -1
			}
			sp.Name = w.intern.get(v)
		case osKind:
			if k == kNumber && len(v) == 1 && v[0] >= '0' && v[0] <= '5' {
				sp.Kind = [...]string{"", "internal", "server", "client", "producer", "consumer"}[v[0]-'0']
				return vend
			}
			kd, err := otlpKind(k, v)
			if err != nil {
				return -1
			}
			sp.Kind = kd
		case osStart, osEnd:
			if k != kString && k != kNumber {
				return -1
			}
			n, ok := fastNanos(v)
			if !ok {
				return -1
			}
			if f == osStart {
				startNs = n
			} else {
				endNs = n
			}
		case osState:
			if k != kString {
				return -1
			}
			rec.traceState = string(v)
		case osAttrs: // not an array (an array was read above)
			return -1
		case osStatus:
			if k != kObject || !fastStatus(v, rec) {
				return -1
			}
		case osEvents:
			if k != kArray {
				return -1
			}
			if j := fastWS(v, 1); v[j] != ']' && otlpEvents(v, rec) != nil {
				return -1
			}
		}
		return vend
	})
	// The general path skips a span without both times, with a zero time,
	// or ending before it starts; those are its to report.
	if !ok || seen&(osStart|osEnd) != osStart|osEnd || startNs == 0 || endNs == 0 || endNs < startNs {
		return 0, false
	}
	sp.Start, sp.Duration = startNs, endNs-startNs
	return e, true
}

// otlpFastID is normID for the usual id, lowercase hex of the full width and
// not all zero: aliasing v with borrow, a copy otherwise.
func otlpFastID(v []byte, width int, borrow bool) string {
	if len(v) != width {
		return normID(v, width)
	}
	var bad, nonzero byte
	for _, c := range v {
		bad |= notLowerHex[c]
		nonzero |= c ^ '0'
	}
	if bad != 0 {
		return normID(v, width)
	}
	if nonzero == 0 {
		return ""
	}
	if borrow {
		return bstr(v)
	}
	return string(v)
}

// notLowerHex is 1 for the bytes that are not lowercase hex digits.
var notLowerHex = func() (t [256]byte) {
	for c := range t {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			t[c] = 1
		}
	}
	return t
}()

// fastNanos is parseUnixNano for plain digits (1 to 19, within int64).
func fastNanos(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}

// fastStatus reads the usual status ({} or {"code":0|1|2}) and leaves any
// other to otlpStatus, the general path's reader; ok is false when that
// reports a problem.
func fastStatus(v []byte, rec *traceRecord) bool {
	i := fastWS(v, 1)
	if v[i] == '}' {
		return true
	}
	if hasLit(v, i, `"code":`) {
		j := i + len(`"code":`)
		if j+1 < len(v) && v[j] >= '0' && v[j] <= '2' {
			if e := fastWS(v, j+1); e == len(v)-1 && v[e] == '}' {
				rec.status, rec.statusSet = span.Status(v[j]-'0'), true
				return true
			}
		}
	}
	return otlpStatus(v, rec) == nil
}

// otlpFastKVs walks the KeyValue list at b[i] when it has the usual shape
// — each element {"key": plain string, "value": {one member}} — calling f
// with each attribute the general path gives (otlpAttribute): a non-empty
// key with a scalar value, its text, and whether it was a string. It
// returns the index after the list, or -1.
func otlpFastKVs(b []byte, i int, f func(key, text []byte, str bool)) int {
	end, ok := fastElems(b, i, func(at int) int {
		var key, text []byte
		var hasKey, hasVal, str, found bool
		e, ok := fastObject(b, at, func(mk []byte, vat int) int {
			switch bstr(mk) {
			case "key":
				k, v, e, ok := fastValue(b, vat)
				if !ok || k != kString || hasKey {
					return -1
				}
				key, hasKey = v, true
				return e
			case "value":
				if hasVal {
					return -1
				}
				hasVal = true
				members := 0
				e, ok := fastObject(b, vat, func(vk []byte, at int) int {
					members++
					k, v, e, ok := fastValue(b, at)
					if !ok || members > 1 {
						return -1
					}
					switch bstr(vk) {
					case "stringValue", "string_value":
						text, str, found = v, true, k == kString
					case "intValue", "int_value", "doubleValue", "double_value", "boolValue", "bool_value":
						text, str, found = v, false, k == kString || k == kNumber || k == kBool
					}
					return e
				})
				if !ok {
					return -1
				}
				return e
			}
			return -1
		})
		if !ok || !hasKey || !hasVal {
			return -1
		}
		if len(key) > 0 && found {
			f(key, text, str)
		}
		return e
	})
	if !ok {
		return -1
	}
	return end
}

// otlpFastAttrs reads a span's attributes at b[i] as otlpSpan's callback
// does: each scalar given to keepAttr and addAttr (error to the error
// flag). It returns the index after the list, or -1.
func (w *jsonWalker) otlpFastAttrs(b []byte, i int, rec *traceRecord, borrow bool) int {
	return otlpFastKVs(b, i, func(key, text []byte, str bool) {
		w.fastKeepAttr(rec, key, text, borrow)
		// addAttr may keep the key (a value it could not read is recorded
		// under it), as the general path's own string.
		ak := w.attrIntern.get(key)
		if !utf8.Valid(key) {
			ak = string(key)
		}
		if ak == "error" {
			if b, err := parseBool(text); err == nil && b {
				rec.errFlag = true
			}
			return
		}
		rec.addAttr(ak, text, str, w.hopAttr)
	})
}

// otlpFastResource reads the Resource object at b[i] into res as
// otlpReadResource does, when its attributes have the usual shape; -1
// when otlpReadResource must (res is then undefined).
func (w *jsonWalker) otlpFastResource(b []byte, i int, res *otlpResource) int {
	e, ok := fastObject(b, i, func(key []byte, at int) int {
		if bstr(key) != "attributes" || at >= len(b) || b[at] != '[' {
			return fastSkip(b, at) // passed over by otlpReadResource too
		}
		return otlpFastKVs(b, at, func(ak, av []byte, _ bool) {
			if bstr(ak) == "service.name" {
				res.service = w.intern.get(av)
			}
			if w.hopAttr != "" && bstr(ak) == w.hopAttr {
				res.hop, res.hopSet = string(av), true
			}
			if attrKept(bstr(ak)) {
				res.attrs = append(res.attrs, span.Attr{Key: w.attrIntern.get(ak), Value: w.attrIntern.get(av)})
			}
		})
	})
	if !ok {
		return -1
	}
	return e
}

// otlpFastScope is otlpScope for the scope object at b[i] when its members
// are plain; end is -1 when otlpScope must read it.
func (w *jsonWalker) otlpFastScope(b []byte, i int) (attrs []span.Attr, end int) {
	e, ok := fastObject(b, i, func(key []byte, at int) int {
		k, v, e, ok := fastValue(b, at)
		if !ok {
			return -1
		}
		if k != kString || len(v) == 0 {
			return e
		}
		switch bstr(key) {
		case "name":
			attrs = append(attrs, span.Attr{Key: "otel.scope.name", Value: w.attrIntern.get(v)})
		case "version":
			attrs = append(attrs, span.Attr{Key: "otel.scope.version", Value: w.attrIntern.get(v)})
		}
		return e
	})
	if !ok {
		return nil, -1
	}
	return attrs, e
}

// fastKeepAttr is keepAttr, aliasing the key and value with borrow (when
// they are valid UTF-8, as the interner would return them).
func (w *jsonWalker) fastKeepAttr(rec *traceRecord, key, v []byte, borrow bool) {
	if !attrKept(bstr(key)) {
		return
	}
	if borrow && utf8.Valid(key) && utf8.Valid(v) {
		rec.attrs = append(rec.attrs, span.Attr{Key: w.attrIntern.get(key), Value: bstr(v)})
		return
	}
	rec.keepAttr(&w.attrIntern, bstr(key), v)
}

// otlpFastRecord is a span read by otlpFastLine, waiting for the line to
// be read whole.
type otlpFastRecord struct {
	rec   traceRecord
	res   int // its resource, in otlpFastState.res
	scope []span.Attr
	at    pos
	late  bool // read before its resource: emitted after the resource's other spans
}

// otlpFastState is what otlpFastLine reuses from line to line.
type otlpFastState struct {
	recs []otlpFastRecord
	res  []otlpResource
	// br is the walker's reader: src.R, or a larger buffer over it once a
	// line did not fit (see peekLine).
	br *bufio.Reader
}

// decodeOTLPFast is decodeOTLP with the fast paths.
func decodeOTLPFast(src *Source) error {
	w := newWalker(src)
	st := &otlpFastState{br: src.R}
	return w.run(func() error {
		c, err := w.top()
		if err == nil && c == '{' && w.s.off == w.s.lineStart && w.otlpFastLine(st) {
			return nil
		}
		return w.otlpTop()
	})
}

// peekLine returns the line at the reader's position, with its newline,
// without consuming it; false when it is longer than otlpLineBuffer or
// the reader failed (the general walker reports that). The first line
// longer than the reader's buffer puts a larger buffer over it (the
// walker reads through it from then on: nothing is lost or reordered).
func (w *jsonWalker) peekLine(st *otlpFastState) ([]byte, bool) {
	scanned := 0
	for {
		br := st.br
		buf, _ := br.Peek(br.Buffered())
		if len(buf) > scanned {
			if i := bytes.IndexByte(buf[scanned:], '\n'); i >= 0 {
				return buf[:scanned+i+1], true
			}
			scanned = len(buf)
		}
		if len(buf) == br.Size() {
			if br.Size() >= otlpLineBuffer {
				return nil, false
			}
			st.br = bufio.NewReaderSize(br, otlpLineBuffer)
			w.s.br = st.br
			continue
		}
		if more, err := br.Peek(len(buf) + 1); err != nil {
			if err == io.EOF && len(more) == len(buf) && len(buf) > 0 {
				return buf, true // the last line, without a newline
			}
			return nil, false
		}
	}
}

// consumeLine moves the walker past the n bytes of a line peekLine gave.
func (w *jsonWalker) consumeLine(st *otlpFastState, line []byte) {
	st.br.Discard(len(line))
	w.s.off += int64(len(line))
	if line[len(line)-1] == '\n' {
		w.s.line++
		w.s.lineStart = w.s.off
	}
}

// otlpFastLine reads the line at the reader's position (a line start whose
// first byte is '{') when the fast path can read it whole, emits its
// spans and consumes it. It reports false, having consumed and emitted
// nothing, when the general walker must read it.
func (w *jsonWalker) otlpFastLine(st *otlpFastState) bool {
	line, ok := w.peekLine(st)
	if !ok {
		return false
	}
	st.recs, st.res = st.recs[:0], st.res[:0]
	n, ok := w.otlpFastDecode(st, line, w.here())
	if !ok {
		return false
	}
	w.otlpFastCommit(st, 0, n)
	w.consumeLine(st, line)
	return true
}

// otlpFastDecode reads line, which starts at base, into records appended to
// st.recs (from its length; their resources to st.res) and reports how
// many, or false when the general path must read the line (st is then as
// it was, but for the contents of unused records).
func (w *jsonWalker) otlpFastDecode(st *otlpFastState, line []byte, base pos) (int, bool) {
	n0, r0 := len(st.recs), len(st.res)
	n := n0
	st.recs = st.recs[:cap(st.recs)]
	defer func() { st.recs = st.recs[:n] }()
	borrow := w.src.opt.Borrowed
	maxRec := w.src.opt.MaxRecord
	found := false
	e, ok := fastObject(line, 0, func(key []byte, at int) int {
		switch bstr(key) {
		case "resourceSpans", "resource_spans", "batches":
		case "result", "trace":
			return -1 // wrappers: the general path
		default:
			return fastSkip(line, at)
		}
		found = true
		end, ok := fastElems(line, at, func(ri int) int {
			st.res = append(st.res, otlpResource{})
			r := len(st.res) - 1
			end, ok := fastObject(line, ri, func(rk []byte, at int) int {
				switch bstr(rk) {
				case "resource":
					if st.res[r].seen {
						return -1
					}
					if e := w.otlpFastResource(line, at, &st.res[r]); e >= 0 {
						st.res[r].seen = true
						return e
					}
					st.res[r] = otlpResource{}
					k, rv, e, ok := fastValue(line, at)
					if !ok || k != kObject || len(rv) > maxRec || st.res[r].seen || w.otlpReadResource(rv, &st.res[r]) != nil {
						return -1
					}
					st.res[r].seen = true
					return e
				case "scopeSpans", "scope_spans", "instrumentationLibrarySpans", "instrumentation_library_spans":
				default:
					return fastSkip(line, at)
				}
				end, ok := fastElems(line, at, func(si int) int {
					var scope []span.Attr
					scopeSeen, spansSeen := false, false
					end, ok := fastObject(line, si, func(sk []byte, at int) int {
						switch bstr(sk) {
						case "scope", "instrumentationLibrary", "instrumentation_library":
							_, sv, e, ok := fastValue(line, at)
							if !ok || scopeSeen || spansSeen || len(sv) > maxRec {
								return -1
							}
							scopeSeen = true
							if scope, _ = w.otlpFastScope(line, at); scope == nil {
								scope = w.otlpScope(sv)
							}
							return e
						case "spans":
						default:
							return fastSkip(line, at)
						}
						if spansSeen {
							return -1
						}
						spansSeen = true
						end, ok := fastElems(line, at, func(pi int) int {
							if n == len(st.recs) {
								st.recs = append(st.recs, otlpFastRecord{})
							}
							fr := &st.recs[n]
							pe, ok := w.otlpFastSpan(line, pi, &fr.rec, borrow)
							if !ok || pe-pi > maxRec {
								return -1
							}
							fr.res, fr.scope, fr.late = r, scope, !st.res[r].seen
							fr.at = pos{base.off + int64(pi), base.line}
							n++
							return pe
						})
						if !ok {
							return -1
						}
						return end
					})
					if !ok {
						return -1
					}
					return end
				})
				if !ok {
					return -1
				}
				return end
			})
			if !ok {
				return -1
			}
			return end
		})
		if !ok {
			return -1
		}
		return end
	})
	if !ok || !found || fastWS(line, e) != len(line) {
		n = n0
		st.res = st.res[:r0]
		return 0, false
	}
	return n - n0, true
}

// otlpFastCommit emits the n records of a line from st.recs[from:] in the
// general path's order (the spans a resource's "resource" follows come
// after its other spans), each with the index it was read at.
func (w *jsonWalker) otlpFastCommit(st *otlpFastState, from, n int) {
	for i := from; i < from+n; {
		r := st.recs[i].res
		j := i
		for j < from+n && st.recs[j].res == r {
			j++
		}
		for _, late := range [2]bool{false, true} {
			for k := i; k < j; k++ {
				if fr := &st.recs[k]; fr.late == late {
					w.otlpEmit(&fr.rec, &st.res[r], fr.scope, w.index+int64(k-from)+1, fr.at)
				}
			}
		}
		i = j
	}
	w.index += int64(n)
}

package tracejson

// The fast path of Jaeger's query JSON.
//
// The general reader (jaeger.go) copies each trace of data[] out with the
// streaming tokenizer and reads it with the scanner: the processes into a
// map, then each span member by member, with a key string per member, a
// copy per tag value and a map per trace. The fast path reads the trace in
// place in the read buffer, in one pass with the helpers of fastjson.go:
// its spans into reused records (each remembering its processID), its
// processes into a reused list; only when the whole trace has been read
// without meeting anything unusual are the processes resolved and the
// spans emitted, through the general path's own helpers (setAttrs, finish,
// emit) and positions, and the trace consumed; otherwise nothing has
// happened and jaegerTraceValue reads it.
//
// "Unusual" is what zipkinfast.go says it is, and here also: a tag that is
// not a well-formed {key, type, value}, a process that is not an object
// or has a bad tag, references that are not objects, members repeated
// under either spelling (traceID, traceId), spans or processes of a type
// the general path reports, a bare trace outside data[] or an array (left
// to jaegerObject whole). TestJaegerFastSame and FuzzJaegerFast read
// inputs both ways and compare.

import (
	"strings"
	"unicode/utf8"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// jaegerFastEnabled turns the fast path on; the differential tests turn
// it off to read the same input with the general path alone.
var jaegerFastEnabled = true

// jaegerFast is the state of the fast path, reused from trace to trace.
type jaegerFast struct {
	recs  []jaegerFastRecord
	n     int // records of the trace read so far
	procs []jaegerFastProc
	np    int // processes of the trace read so far
}

// jaegerFastRecord is a span read in place, waiting for its trace to be
// read whole.
type jaegerFastRecord struct {
	rec    record.TraceRecord
	off    int    // where the span starts in the trace
	procID []byte // its processID (in the buffer), when a string
	hasID  bool
	own    jaegerProcess // an embedded process
	hasOwn bool
}

// jaegerFastProc is one member of a trace's processes.
type jaegerFastProc struct {
	id []byte // in the buffer
	p  jaegerProcess
}

// jaegerTraceElem reads one element of data[] or of a top-level array:
// in place when it can, else with jaegerTraceValue.
func (w *jsonWalker) jaegerTraceElem() error {
	if !jaegerFastEnabled {
		return w.jaegerTraceValue()
	}
	c, err := w.next()
	if err != nil || c != '{' {
		return w.jaegerTraceValue()
	}
	if w.jaeger == nil {
		w.jaeger = &jaegerFast{}
	}
	jf := w.jaeger
	at := w.here()
	b, n := w.fastInPlace(true, func(b []byte) int { return w.jaegerFastTrace(jf, b) })
	if n < 0 {
		return w.jaegerTraceValue()
	}
	lc := newLineCounter(b[:n], at)
	for i := range jf.n {
		fr := &jf.recs[i]
		w.index++
		p := lc.pos(fr.off)
		var proc *jaegerProcess
		switch {
		case fr.hasOwn:
			proc = &fr.own
		case fr.hasID:
			proc = jf.process(fr.procID)
		}
		sp := &fr.rec.Span
		var res []span.Attr
		if proc != nil {
			res = proc.attrs
		}
		w.setAttrs(sp, res, nil, fr.rec.Attrs)
		if proc != nil {
			sp.Service = proc.service
			if !fr.rec.HopSet && proc.hopSet {
				fr.rec.Hop, fr.rec.HopSet = proc.hop, true
			}
		}
		fr.rec.Finish(&w.intern)
		w.emit(&fr.rec, w.index, p)
	}
	w.s.consume(b, n)
	if fastTaken != nil {
		fastTaken("jaeger", jf.n)
	}
	return nil
}

// process is the trace's process id (the last of that id, as the general
// path's map keeps), or nil.
func (jf *jaegerFast) process(id []byte) *jaegerProcess {
	for i := jf.np - 1; i >= 0; i-- {
		if string(jf.procs[i].id) == string(id) {
			return &jf.procs[i].p
		}
	}
	return nil
}

// jaegerFastTrace reads the trace object at b[0] into jf and returns its
// length, or -1.
func (w *jsonWalker) jaegerFastTrace(jf *jaegerFast, b []byte) int {
	jf.n, jf.np = 0, 0
	borrow := w.src.Options().Borrowed
	var seen uint8
	e, ok := fastObject(b, 0, func(key []byte, at int) int {
		var f uint8
		switch bstr(key) {
		case "spans":
			f = 1
		case "processes":
			f = 2
		default:
			return fastSkip(b, at)
		}
		if seen&f != 0 || at >= len(b) {
			return -1
		}
		seen |= f
		if b[at] == 'n' {
			return fastSkip(b, at) // null: no spans, no processes
		}
		if f == 2 {
			e, ok := fastObject(b, at, func(id []byte, pat int) int {
				if jf.np == len(jf.procs) {
					jf.procs = append(jf.procs, jaegerFastProc{})
				}
				fp := &jf.procs[jf.np]
				fp.id = id
				e := w.jaegerFastProcess(b, pat, &fp.p)
				if e >= 0 {
					jf.np++
				}
				return e
			})
			if !ok {
				return -1
			}
			return e
		}
		e, ok := fastElems(b, at, func(sat int) int {
			if jf.n == len(jf.recs) {
				jf.recs = append(jf.recs, jaegerFastRecord{})
			}
			fr := &jf.recs[jf.n]
			e, ok := w.jaegerFastSpan(b, sat, fr, borrow)
			if !ok {
				return -1
			}
			fr.off = sat
			jf.n++
			return e
		})
		if !ok {
			return -1
		}
		return e
	})
	if !ok || e > w.src.Options().MaxRecord {
		return -1
	}
	return e
}

// jaegerFastProcess reads the process object at b[i] into p as
// jaegerProcess does, when its tags read cleanly; it returns the index
// after it, or -1.
func (w *jsonWalker) jaegerFastProcess(b []byte, i int, p *jaegerProcess) int {
	*p = jaegerProcess{attrs: p.attrs[:0]}
	var seen uint8
	e, ok := fastObject(b, i, func(key []byte, at int) int {
		switch bstr(key) {
		case "serviceName":
			k, v, e, ok := fastValue(b, at)
			if !ok || seen&1 != 0 {
				return -1
			}
			seen |= 1
			if k == jsonscan.KString {
				p.service = w.intern.Get(v)
			}
			return e
		case "tags":
			if seen&2 != 0 {
				return -1
			}
			seen |= 2
			if at < len(b) && b[at] == '[' {
				return jaegerFastTags(b, at, func(tk, tv []byte, _, bin bool) {
					if w.hopAttr != "" && bstr(tk) == w.hopAttr {
						p.hop, p.hopSet = string(tv), true
					}
					if !bin && record.KeepValue(bstr(tk), tv) {
						p.attrs = append(p.attrs, span.Attr{Key: w.attrIntern.Get(tk), Value: w.attrIntern.Get(tv)})
					}
				})
			}
		}
		return fastSkip(b, at)
	})
	if !ok {
		return -1
	}
	return e
}

// jaegerFastTags walks the tag list at b[i] as jaegerTags does, when every
// tag is a well-formed {key, type, value} (jaegerTags would report no
// problem), calling f with each tag it would give; it returns the index
// after the list, or -1.
func jaegerFastTags(b []byte, i int, f func(key, v []byte, str, bin bool)) int {
	end, ok := fastElems(b, i, func(at int) int {
		var key, val []byte
		var vk jsonscan.JSONKind
		var seen uint8
		bin := false
		e, ok := fastObject(b, at, func(mk []byte, vat int) int {
			k, v, e, ok := fastValue(b, vat)
			if !ok {
				return -1
			}
			var m uint8
			switch bstr(mk) {
			case "key":
				if k != jsonscan.KString {
					return -1
				}
				m, key = 1, v
			case "value":
				m, val, vk = 2, v, k
			case "type":
				m, bin = 4, k == jsonscan.KString && strings.EqualFold(bstr(v), "binary")
			default:
				return e
			}
			if seen&m != 0 {
				return -1 // a repeated member: the general path's order rules
			}
			seen |= m
			return e
		})
		if !ok {
			return -1
		}
		if seen&2 != 0 && len(key) > 0 && vk != jsonscan.KObject && vk != jsonscan.KArray && vk != jsonscan.KNull {
			f(key, val, vk == jsonscan.KString, bin)
		}
		return e
	})
	if !ok {
		return -1
	}
	return end
}

// The members of a span the fast path reads, for the duplicate check.
const (
	jsTrace = 1 << iota
	jsSpan
	jsParent
	jsName
	jsRefs
	jsStart
	jsDur
	jsProc
	jsTags
)

// jaegerFastSpan reads the span object at b[i] as jaegerSpan does, into fr
// (reset first), and returns the index after it; ok is false when the
// general path must read it. With borrow, ids and attribute values may
// alias b. The process, sp.Attrs and the service are left to the caller.
func (w *jsonWalker) jaegerFastSpan(b []byte, i int, fr *jaegerFastRecord, borrow bool) (int, bool) {
	rec := &fr.rec
	rec.Reset()
	fr.procID, fr.hasID, fr.hasOwn = nil, false, false
	sp := &rec.Span
	var seen uint32
	var parent string
	var refs []byte
	e, ok := fastObject(b, i, func(key []byte, at int) int {
		var f uint32
		switch bstr(key) {
		case "traceID", "traceId":
			f = jsTrace
		case "spanID", "spanId":
			f = jsSpan
		case "parentSpanID", "parentSpanId":
			f = jsParent
		case "operationName":
			f = jsName
		case "references":
			f = jsRefs
		case "startTime":
			f = jsStart
		case "duration":
			f = jsDur
		case "processID", "processId", "process":
			f = jsProc
		case "tags":
			f = jsTags
			if at < len(b) && b[at] == '[' {
				if seen&f != 0 {
					return -1
				}
				seen |= f
				return w.jaegerFastSpanTags(b, at, rec, borrow)
			}
		default:
			return fastSkip(b, at) // passed over by the general path too
		}
		k, v, vend, ok := fastSpanMember(b, at, &seen, f)
		if !ok {
			return vend
		}
		switch f {
		case jsTrace, jsSpan, jsParent:
			if k != jsonscan.KString {
				return -1
			}
			switch f {
			case jsTrace:
				sp.TraceID = fastHexID(v, 32, borrow)
			case jsSpan:
				sp.SpanID = fastHexID(v, 16, borrow)
			default:
				parent = fastHexID(v, 16, borrow)
			}
		case jsName:
			if k != jsonscan.KString && k != jsonscan.KNumber && k != jsonscan.KBool {
				return -1
			}
			sp.Name = w.intern.Get(v)
		case jsRefs:
			if k != jsonscan.KArray {
				return -1
			}
			refs = v
		case jsStart, jsDur:
			if k != jsonscan.KNumber && k != jsonscan.KString {
				return -1
			}
			n, ok := fastMicros(v)
			if !ok {
				return -1
			}
			if f == jsStart {
				sp.Start = n
			} else {
				sp.Duration = n
			}
		case jsProc:
			switch {
			case bstr(key) == "process":
				if k == jsonscan.KObject {
					if w.jaegerFastProcess(b, at, &fr.own) < 0 {
						return -1
					}
					fr.hasOwn = true
				}
			case k == jsonscan.KString:
				fr.procID, fr.hasID = v, true
			}
		case jsTags: // not an array (an array was read above)
			return -1
		}
		return vend
	})
	if !ok || seen&jsDur == 0 {
		return 0, false // the general path skips a span without a duration
	}
	sp.ParentID = parent
	if refs != nil {
		child, follows, ok := jaegerFastParent(refs, borrow)
		if !ok {
			return 0, false
		}
		switch {
		case child != "":
			sp.ParentID = child
		case parent == "":
			sp.ParentID = follows
		}
	}
	return e, true
}

// jaegerFastSpanTags reads a span's tags at b[i] as jaegerSpan's callback
// does; it returns the index after them, or -1.
func (w *jsonWalker) jaegerFastSpanTags(b []byte, i int, rec *record.TraceRecord, borrow bool) int {
	return jaegerFastTags(b, i, func(tk, tv []byte, str, bin bool) {
		if !bin {
			w.fastKeepAttr(rec, tk, tv, borrow)
		}
		switch bstr(tk) {
		case "error":
			if b, e := record.ParseBool(tv); e == nil && b {
				rec.ErrFlag = true
			}
			return
		case "span.kind":
			rec.Span.Kind = record.NormKind(tv)
			return
		}
		// addAttr may keep the key (a value it could not read is recorded
		// under it), as the general path's own string.
		ak := w.attrIntern.Get(tk)
		if !utf8.Valid(tk) {
			ak = string(tk)
		}
		rec.AddAttr(ak, tv, str, w.hopAttr)
	})
}

// jaegerFastParent is jaegerParent for references that are all objects
// of plain members; ok is false when jaegerParent must read them.
func jaegerFastParent(refs []byte, borrow bool) (child, follows string, ok bool) {
	_, ok = fastElems(refs, 0, func(at int) int {
		var typ []byte
		var id string
		e, ok := fastMembers(refs, at, func(key []byte, k jsonscan.JSONKind, v []byte, _ int) bool {
			switch bstr(key) {
			case "refType", "ref_type":
				typ = v
			case "spanID", "spanId":
				if k == jsonscan.KString {
					id = fastHexID(v, 16, borrow)
				}
			}
			return true
		})
		if !ok {
			return -1
		}
		t := bstr(typ)
		if t != "CHILD_OF" && t != "FOLLOWS_FROM" {
			t = strings.ToUpper(t)
		}
		switch t {
		case "CHILD_OF", "":
			if child == "" {
				child = id
			}
		case "FOLLOWS_FROM":
			if follows == "" {
				follows = id
			}
		}
		return e
	})
	return child, follows, ok
}

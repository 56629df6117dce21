package tracejson

// The fast path of Zipkin v2 JSON.
//
// The general reader (zipkin.go) copies each element of the outer array
// out with the streaming tokenizer and reads it with the scanner, member
// by member, allocating a key string per member and a record per span.
// Almost every span an exporter writes has one plain shape (hex ids,
// plain strings, µs as integers, endpoints and tags of scalars), so the
// reader first tries each element in place, in the read buffer: a span
// object, or an array of spans (one trace, GET /api/v2/traces), read in
// one pass with the helpers of fastjson.go into reused records. Only when
// the whole element has been read without meeting anything unusual are
// its spans emitted, through the general path's own helpers (setAttrs,
// finish, emit) and positions, and the element consumed; otherwise
// nothing has happened and zipkinElem reads it.
//
// "Unusual" is anything whose handling the general path decides: an
// escaped string, a value of an unexpected type, a duplicated member, a
// span it would skip (no duration) or keep with a value it could not read
// (a kind it does not know, a timestamp that is not plain digits, a tag
// that is an object), an element that is not an object or array, one
// over --max-record. The fields are set by the same helpers the general
// path calls (addAttr, keepAttr's rules, setPeer, normKind, normID,
// zipkinEndpointAttrs), so the spans are the same; TestZipkinFastSame and
// FuzzZipkinFast read inputs both ways and compare spans, attributes,
// skips, positions and counts.

import (
	"unicode/utf8"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// zipkinFastEnabled turns the fast path on; the differential tests turn
// it off to read the same input with the general path alone.
var zipkinFastEnabled = true

// fastTaken, when set (by tests), is told how many spans each fast path
// read in place.
var fastTaken func(format string, spans int)

// zipkinFast is the state of the fast path, reused from element to
// element.
type zipkinFast struct {
	w    *jsonWalker
	recs []zipkinFastRecord
	n    int // records of the element read so far
}

// zipkinFastRecord is a span read in place, waiting for its element to be
// read whole.
type zipkinFastRecord struct {
	rec   record.TraceRecord
	local []span.Attr // the local endpoint's attributes
	off   int         // where the span starts in the element
}

func (z *zipkinFast) top() error {
	c, err := z.w.top()
	if err != nil {
		return err // io.EOF at the end of the input
	}
	if c == '[' {
		return z.w.array("top-level array", z.elem)
	}
	return z.elem()
}

// elem is zipkinElem, trying the element in place first.
func (z *zipkinFast) elem() error {
	w := z.w
	c, err := w.next()
	if err != nil || (c != '{' && c != '[') {
		return w.zipkinElem()
	}
	at := w.here()
	b, n := w.fastInPlace(c == '[', z.decode)
	if n < 0 {
		return w.zipkinElem()
	}
	lc := newLineCounter(b[:n], at)
	for i := range z.n {
		fr := &z.recs[i]
		w.index++
		p := at
		if c == '[' {
			p = lc.pos(fr.off)
		}
		w.setAttrs(&fr.rec.Span, fr.local, nil, fr.rec.Attrs)
		fr.rec.Finish(&w.intern)
		w.emit(&fr.rec, w.index, p)
	}
	w.s.consume(b, n)
	if fastTaken != nil {
		fastTaken("zipkin", z.n)
	}
	return nil
}

// decode reads the element at b[0] (a span, or an array of spans) into
// z.recs and returns its length, or -1.
func (z *zipkinFast) decode(b []byte) int {
	z.n = 0
	borrow := z.w.src.Options().Borrowed
	next := func(at int) int {
		if z.n == len(z.recs) {
			z.recs = append(z.recs, zipkinFastRecord{})
		}
		fr := &z.recs[z.n]
		e, ok := z.w.zipkinFastSpan(b, at, fr, borrow)
		if !ok {
			return -1
		}
		fr.off = at
		z.n++
		return e
	}
	var e int
	if b[0] == '{' {
		e = next(0)
	} else {
		end, ok := fastElems(b, 0, next)
		if !ok {
			return -1
		}
		e = end
	}
	if e < 0 || e > z.w.src.Options().MaxRecord {
		return -1
	}
	return e
}

// The members of a span the fast path reads, for the duplicate check.
const (
	zsTrace = 1 << iota
	zsID
	zsParent
	zsName
	zsKind
	zsStart
	zsDur
	zsLocal
	zsRemote
	zsTags
	zsShared
)

// zipkinFastSpan reads the span object at b[i] as zipkinRecord does, into
// fr (reset first), and returns the index after it; ok is false when the
// general path must read it. With borrow, ids and attribute values may
// alias b. sp.Attrs is left to the caller (setAttrs, at the emit).
func (w *jsonWalker) zipkinFastSpan(b []byte, i int, fr *zipkinFastRecord, borrow bool) (int, bool) {
	rec := &fr.rec
	rec.Reset()
	fr.local = fr.local[:0]
	sp := &rec.Span
	var seen uint32
	var shared bool
	e, ok := fastObject(b, i, func(key []byte, at int) int {
		var f uint32
		switch bstr(key) {
		case "traceId":
			f = zsTrace
		case "id":
			f = zsID
		case "parentId":
			f = zsParent
		case "name":
			f = zsName
		case "kind":
			f = zsKind
		case "timestamp":
			f = zsStart
		case "duration":
			f = zsDur
		case "localEndpoint":
			f = zsLocal
		case "remoteEndpoint":
			f = zsRemote
		case "tags":
			f = zsTags
		case "shared":
			f = zsShared
		default:
			return fastSkip(b, at) // passed over by the general path too
		}
		k, v, vend, ok := fastSpanMember(b, at, &seen, f)
		if !ok {
			return vend
		}
		switch f {
		case zsTrace:
			if k != jsonscan.KString {
				return -1
			}
			sp.TraceID = fastHexID(v, 32, borrow)
		case zsID, zsParent:
			if k != jsonscan.KString {
				return -1
			}
			if f == zsID {
				sp.SpanID = fastHexID(v, 16, borrow)
			} else {
				sp.ParentID = fastHexID(v, 16, borrow)
			}
		case zsName:
			if k != jsonscan.KString && k != jsonscan.KNumber && k != jsonscan.KBool {
				return -1
			}
			sp.Name = w.intern.Get(v)
		case zsKind:
			if k != jsonscan.KString {
				return -1
			}
			if sp.Kind = zipkinKind(v); sp.Kind == "" {
				return -1
			}
		case zsStart, zsDur:
			if k != jsonscan.KNumber && k != jsonscan.KString {
				return -1
			}
			n, ok := fastMicros(v)
			if !ok {
				return -1
			}
			if f == zsStart {
				sp.Start = n
			} else {
				sp.Duration = n
			}
		case zsLocal, zsRemote:
			if k != jsonscan.KObject || !w.zipkinFastEndpoint(v, f == zsLocal, fr, borrow) {
				return -1
			}
		case zsTags:
			if k != jsonscan.KObject || !w.zipkinFastTags(v, rec, borrow) {
				return -1
			}
		case zsShared:
			shared = k == jsonscan.KBool && string(v) == "true"
		}
		return vend
	})
	if !ok || seen&zsDur == 0 {
		return 0, false // the general path skips a span without a duration
	}
	if shared && sp.SpanID != "" {
		sp.ParentID = sp.SpanID
		sp.SpanID += zipkinSharedSuffix
	}
	return e, true
}

// zipkinKind is the span kinds zipkinRecord accepts, "" for the others.
func zipkinKind(v []byte) string {
	switch bstr(v) {
	case "CLIENT":
		return "client"
	case "SERVER":
		return "server"
	case "PRODUCER":
		return "producer"
	case "CONSUMER":
		return "consumer"
	}
	switch s := record.NormKind(v); s {
	case "client", "server", "producer", "consumer":
		return s
	}
	return ""
}

// peerServiceKey is the attribute a remote endpoint's service name is
// kept as.
var peerServiceKey = []byte("peer.service")

// zipkinFastEndpoint reads an endpoint object (v, whole) as zipkinRecord
// does: the local one's service name and address to fr.local, the remote
// one's service as the peer and its address to the span's attributes.
func (w *jsonWalker) zipkinFastEndpoint(v []byte, local bool, fr *zipkinFastRecord, borrow bool) bool {
	rec := &fr.rec
	var ip4, ip6, port []byte
	_, ok := fastMembers(v, 0, func(ek []byte, k jsonscan.JSONKind, ev []byte, _ int) bool {
		switch {
		case len(ev) == 0:
		case bstr(ek) == "serviceName" && k == jsonscan.KString:
			if local {
				rec.Span.Service = w.intern.Get(ev)
			} else {
				rec.SetPeer(ev, 0)
				w.fastKeepAttr(rec, peerServiceKey, ev, borrow)
			}
		case bstr(ek) == "ipv4" && k == jsonscan.KString:
			ip4 = ev
		case bstr(ek) == "ipv6" && k == jsonscan.KString:
			ip6 = ev
		case bstr(ek) == "port" && (k == jsonscan.KNumber || k == jsonscan.KString) && bstr(ev) != "0":
			port = ev
		}
		return true
	})
	if !ok {
		return false
	}
	if ip4 == nil {
		ip4 = ip6
	}
	// zipkinEndpointAttrs's attributes, their keys as constants.
	dst, ipKey, portKey := &rec.Attrs, "net.peer.ip", "net.peer.port"
	if local {
		dst, ipKey, portKey = &fr.local, "net.host.ip", "net.host.port"
	}
	if len(ip4) > 0 {
		*dst = append(*dst, span.Attr{Key: ipKey, Value: w.attrIntern.Get(ip4)})
	}
	if len(port) > 0 {
		*dst = append(*dst, span.Attr{Key: portKey, Value: w.attrIntern.Get(port)})
	}
	return true
}

// zipkinFastTags reads the tags object (v, whole) as zipkinRecord does,
// when every value is a scalar.
func (w *jsonWalker) zipkinFastTags(v []byte, rec *record.TraceRecord, borrow bool) bool {
	_, ok := fastMembers(v, 0, func(tk []byte, k jsonscan.JSONKind, tv []byte, _ int) bool {
		if k == jsonscan.KObject || k == jsonscan.KArray {
			return false // the general path records it as a value it could not read
		}
		w.fastKeepAttr(rec, tk, tv, borrow)
		if bstr(tk) == "error" {
			w.zipkinErrorTag(rec, tv)
			return true
		}
		// addAttr may keep the key (a value it could not read is recorded
		// under it), as the general path's own string.
		ak := w.attrIntern.Get(tk)
		if !utf8.Valid(tk) {
			ak = string(tk)
		}
		rec.AddAttr(ak, tv, k == jsonscan.KString, w.hopAttr)
		return true
	})
	return ok
}

package analyze

import (
	"encoding/binary"
	"strings"
	"unsafe"

	"github.com/tailscope/tailscope/secret"
	"github.com/tailscope/tailscope/span"
)

// The trace sample's storage while the read adds to it.
//
// A span.Span is 240 bytes, nine strings and a slice among them, and the
// sample holds up to its limit of them through the read (100,000 by
// default: 23 MB, allocated at once when the sample fills), beside the
// pages, digests and attempt times of the read. The heap's goal is twice
// what is live at a collection, so every byte the sample holds during
// the read is two of peak heap: on a million flat spans the sample was 40%
// of what was live, and the process peaked above DuckDB's per-hop query.
// Its strings are few distinct values (services, names, kinds, hops,
// peers, error texts: what the readers intern) and its ids one allocation
// a span already: a row keeps those as 4-byte indexes into a table of
// the distinct strings, and the routing attributes (routingKeys) as
// the index of their set, 104 bytes in all with one pointer (the ids) for
// the collector to follow instead of eleven. The spans are built once the
// read is over (Accum.Spans, Accum.Kept), at the sample's length.

// sampleRow is one span of the sample (see sampleRows.span).
type sampleRow struct {
	// ids is the trace id, the span id and the parent id, in that order,
	// in one allocation; tl and sl are the first two's lengths.
	ids                             string
	tl, sl                          uint32
	start, duration, timeoutInForce int64
	code, attempt                   int64
	weight                          float64
	// str indexes sampleRows.strs: Service, Name, Kind, Hop, Peer,
	// CodeText.
	str [6]uint32
	// attrs indexes sampleRows.sets (0: none).
	attrs  uint32
	status span.Status
	flags  uint8 // rowTimeout, …
}

// sampleRow.flags: the span's booleans.
const (
	rowTimeout = 1 << iota
	rowAttemptSet
	rowDuplicate
	rowStableAttrs
)

// flag is bit when b, else 0.
func flag(b bool, bit uint8) uint8 {
	if b {
		return bit
	}
	return 0
}

// sampleRows is the sample as rows, and the tables they index.
type sampleRows struct {
	rows []sampleRow
	// strs are the distinct strings the rows name (strs[0] is ""), each
	// at the index index gives it; cache is a direct-mapped front to
	// index by the string's address (readers hand out the same interned
	// string again and again: a hit costs a compare of two equal
	// pointers).
	strs  []string
	index map[string]uint32
	cache [256]struct {
		s string
		i uint32
	}
	// sets are the distinct attribute sets (sets[0] is nil), each at the
	// index setIndex gives the key of its strings' indexes.
	sets     [][]span.Attr
	setIndex map[string]uint32
	key      []byte
	// built is how many strings and sets the tables held when last built
	// from the rows (see compact).
	built int
}

// str returns s's index, adding s to the table when new; a new s is
// copied when borrowed (its bytes may be the reader's buffer).
func (t *sampleRows) str(s string, borrowed bool) uint32 {
	if s == "" {
		return 0
	}
	c := &t.cache[(uintptr(unsafe.Pointer(unsafe.StringData(s)))>>3^uintptr(len(s)))&255]
	if c.s == s {
		return c.i
	}
	i, ok := t.index[s]
	if !ok {
		if t.index == nil {
			t.index = map[string]uint32{}
			t.strs = append(t.strs[:0], "")
		}
		if borrowed {
			s = strings.Clone(s)
		}
		i = uint32(len(t.strs))
		t.strs = append(t.strs, s)
		t.index[s] = i
	}
	if !borrowed {
		// A borrowed s's address may hold other bytes next time: only
		// stable strings are looked up by address.
		c.s, c.i = s, i
	}
	return i
}

// set returns the index of the attribute set as (0 when empty); with
// routing, only those whose key the endpoint mapping reads (routingKeys),
// their values scrubbed of credentials (package secret), else as given (a
// span of the sample already). New texts are copied when borrowed (a
// reader's, unless it says they are stable: span.Span.StableAttrs).
func (t *sampleRows) set(as []span.Attr, routing, borrowed bool) uint32 {
	t.key = t.key[:0]
	for _, a := range as {
		v := a.Value
		if routing {
			if !routingKeys[a.Key] {
				continue
			}
			v = secret.Scrub(v)
		}
		t.key = binary.LittleEndian.AppendUint32(t.key, t.str(a.Key, borrowed))
		t.key = binary.LittleEndian.AppendUint32(t.key, t.str(v, borrowed))
	}
	if len(t.key) == 0 {
		return 0
	}
	if i, ok := t.setIndex[string(t.key)]; ok {
		return i
	}
	if t.setIndex == nil {
		t.setIndex = map[string]uint32{}
		t.sets = append(t.sets[:0], nil)
	}
	set := make([]span.Attr, 0, len(t.key)/8)
	for k := 0; k < len(t.key); k += 8 {
		set = append(set, span.Attr{Key: t.strs[binary.LittleEndian.Uint32(t.key[k:])], Value: t.strs[binary.LittleEndian.Uint32(t.key[k+4:])]})
	}
	i := uint32(len(t.sets))
	t.sets = append(t.sets, set)
	t.setIndex[string(t.key)] = i
	return i
}

// row makes sp's row, with ids its three ids in one string and attrs the
// index of its attribute set.
func (t *sampleRows) row(sp *span.Span, ids string, attrs uint32) sampleRow {
	return sampleRow{
		ids: ids, tl: uint32(len(sp.TraceID)), sl: uint32(len(sp.SpanID)),
		start: sp.Start, duration: sp.Duration, timeoutInForce: sp.TimeoutInForce,
		code: int64(sp.Code), attempt: int64(sp.Attempt), weight: sp.Weight,
		str: [6]uint32{t.str(sp.Service, false), t.str(sp.Name, false), t.str(sp.Kind, false),
			t.str(sp.Hop, false), t.str(sp.Peer, false), t.str(sp.CodeText, false)},
		attrs:  attrs,
		status: sp.Status,
		flags: flag(sp.Timeout, rowTimeout) | flag(sp.AttemptSet, rowAttemptSet) |
			flag(sp.Duplicate, rowDuplicate) | flag(sp.StableAttrs, rowStableAttrs),
	}
}

// span builds row r's span.
func (t *sampleRows) span(r *sampleRow) span.Span {
	ids := r.ids
	sp := span.Span{
		TraceID: ids[:r.tl], SpanID: ids[r.tl : r.tl+r.sl], ParentID: ids[r.tl+r.sl:],
		Service: t.text(r.str[0]), Name: t.text(r.str[1]), Kind: t.text(r.str[2]),
		Hop: t.text(r.str[3]), Peer: t.text(r.str[4]),
		Start: r.start, Duration: r.duration,
		Status: r.status, Timeout: r.flags&rowTimeout != 0, Code: int(r.code), CodeText: t.text(r.str[5]),
		Attempt: int(r.attempt), AttemptSet: r.flags&rowAttemptSet != 0, TimeoutInForce: r.timeoutInForce,
		Weight: r.weight, Duplicate: r.flags&rowDuplicate != 0, StableAttrs: r.flags&rowStableAttrs != 0,
	}
	if r.attrs != 0 {
		sp.Attrs = t.sets[r.attrs]
	}
	return sp
}

// text is the string at index i ("" at 0, whether or not the table has
// begun).
func (t *sampleRows) text(i uint32) string {
	if i == 0 {
		return ""
	}
	return t.strs[i]
}

// compact rebuilds the tables from the rows once they have doubled since
// last built: a log whose names or routes hold ids would otherwise keep
// every string a dropped span named. Linear in the strings added overall.
func (t *sampleRows) compact() {
	n := len(t.strs) + len(t.sets)
	if n < 4096 || n < 2*t.built {
		return
	}
	old := *t
	*t = sampleRows{rows: old.rows}
	for i := range t.rows {
		r := &t.rows[i]
		for k, s := range r.str {
			r.str[k] = t.str(old.text(s), false)
		}
		if r.attrs != 0 {
			r.attrs = t.set(old.sets[r.attrs], false, false)
		}
	}
	t.built = len(t.strs) + len(t.sets)
}

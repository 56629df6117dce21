package ingest

import (
	"unicode/utf8"
	"unsafe"

	"github.com/tailscope/tailscope/span"
)

// Attributes of flat records (span.Span.Attrs).
//
// Attribution (issue 13) compares a hop's slow and failed attempts with the
// rest over every attribute the spans carry, so the flat readers keep every
// scalar they meet that no span field took, and the analysis decides which
// keys are worth comparing. What each format gives is in docs/DESIGN.md
// (ingest). Nothing here may cost a line that has no such value: an empty
// attrSet is a few slice headers, and done on it returns nil.
//
// Values are kept as text. Whether a value aliases the reader's buffers or
// is a string of its own follows Options.Borrowed, exactly like the ids: a
// borrowed record gathers views of the input (valid until the reader's
// next span) in a slice it reuses, so capturing costs no allocation per
// span; an owned record interns keys and values (a log repeats a few pods,
// zones and versions millions of times) and gives each span its own slice,
// cut from a shared chunk.

// Tiers order a span's attributes as span.Span.Attrs documents them:
// resource attributes, then the span's own, then the other fields of a
// flat record.
const (
	tierResource uint8 = iota
	tierSpan
	tierField
)

// attrSet gathers one record's attributes.
type attrSet struct {
	list []span.Attr
	tier []uint8 // the tier of each entry of list
	// borrow: values may alias the input (Options.Borrowed).
	borrow bool
	// in interns keys, and values when they must be owned; made on first
	// use, so that readers of logs without attributes never pay for it.
	in *interner
	// chunk is where owned spans' slices are cut from.
	chunk []span.Attr
	// key is scratch for dotted keys of nested objects.
	key []byte
}

// reset empties the set for the next record, keeping its buffers.
func (a *attrSet) reset() {
	a.list, a.tier = a.list[:0], a.tier[:0]
}

func (a *attrSet) interner() *interner {
	if a.in == nil {
		a.in = &interner{}
	}
	return a.in
}

// keyOf returns the string of an attribute key: keys repeat on every
// line, so they are interned whether or not the record borrows.
func (a *attrSet) keyOf(k []byte) string { return a.interner().get(k) }

// add appends one attribute. v is the value's text; alias says whether
// it may be kept as a view (the record borrows and v lies in a buffer that
// outlives the span's emit). Empty keys and values say nothing and are
// left out, and so are the keys that restate the service, kind or outcome
// (attrKept: the trace formats leave them out too, so the same span gives
// the same Attrs in every format); text that is not valid UTF-8 is
// repaired (a copy).
func (a *attrSet) add(tier uint8, key string, v []byte, alias bool) {
	if len(v) == 0 || len(v) > maxAttrValue || !attrKept(key) {
		return
	}
	var val string
	switch {
	case alias && a.borrow && utf8.Valid(v):
		val = unsafe.String(unsafe.SliceData(v), len(v))
	case len(v) <= maxInternValue:
		// Owned, or not in a buffer that lives long enough (an
		// unescaped string, a number's text): interned, so a value seen
		// before costs nothing.
		val = a.interner().get(v)
	default:
		val = validText(v) // long values are rarely repeated
	}
	a.list = append(a.list, span.Attr{Key: key, Value: val})
	a.tier = append(a.tier, tier)
}

// done returns the attributes in tier order (stable within a tier), or
// nil when there are none: the reused list when the record borrows, else
// a slice of the span's own.
func (a *attrSet) done() []span.Attr {
	n := len(a.list)
	if n == 0 {
		return nil
	}
	// Insertion sort by tier: lists are short and almost always in order
	// already (one comparison per entry then).
	for i := 1; i < n; i++ {
		for j := i; j > 0 && a.tier[j] < a.tier[j-1]; j-- {
			a.tier[j], a.tier[j-1] = a.tier[j-1], a.tier[j]
			a.list[j], a.list[j-1] = a.list[j-1], a.list[j]
		}
	}
	if a.borrow {
		return a.list[:n:n]
	}
	return a.own(a.list)
}

// maxAttrValue bounds a value kept as an attribute: a longer one (a
// payload, a stack trace, a padded line) is never a value that many
// spans share, which is all attribution looks for, and keeping it would
// cost memory per span. maxInternValue bounds the values interned, so
// that the interner's table stays small whatever the log.
const (
	maxAttrValue   = 1024
	maxInternValue = 128
)

// attrChunk is how many attributes an owned chunk holds: a chunk is one
// allocation for the spans of a few hundred lines.
const attrChunk = 512

// own copies l into a slice no later record reuses.
func (a *attrSet) own(l []span.Attr) []span.Attr {
	if cap(a.chunk)-len(a.chunk) < len(l) {
		a.chunk = make([]span.Attr, 0, max(attrChunk, len(l)))
	}
	s := len(a.chunk)
	a.chunk = append(a.chunk, l...)
	return a.chunk[s:len(a.chunk):len(a.chunk)]
}

// inBuf reports whether v lies inside buf.
func inBuf(v, buf []byte) bool {
	if len(v) == 0 || len(buf) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(v))), uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return p >= lo && p+uintptr(len(v)) <= lo+uintptr(len(buf))
}

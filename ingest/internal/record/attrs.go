package record

import (
	"unicode/utf8"
	"unsafe"

	"github.com/tailscope/tailscope/span"
)

// Attributes of flat records (span.Span.Attrs).
//
// Attribution (analyze/attribution.go) compares a hop's slow and failed attempts with the
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
	TierResource uint8 = iota
	TierSpan
	TierField
)

// AttrSet gathers one record's attributes.
type AttrSet struct {
	List []span.Attr
	Tier []uint8 // the tier of each entry of list
	// Borrow: values may alias the input (Options.Borrowed).
	Borrow bool
	// In interns keys, and values when they must be owned; made on first
	// use, so that readers of logs without attributes never pay for it.
	In *Interner
	// Chunk is where owned spans' slices are cut from.
	Chunk []span.Attr
	// Key is scratch for dotted keys of nested objects.
	Key []byte
}

// Reset empties the set for the next record, keeping its buffers.
func (a *AttrSet) Reset() {
	a.List, a.Tier = a.List[:0], a.Tier[:0]
}

func (a *AttrSet) interner() *Interner {
	if a.In == nil {
		a.In = &Interner{}
	}
	return a.In
}

// KeyOf returns the string of an attribute key: keys repeat on every
// line, so they are interned whether or not the record borrows.
func (a *AttrSet) KeyOf(k []byte) string { return a.interner().Get(k) }

// Add appends one attribute. v is the value's text; alias says whether
// it may be kept as a view (the record borrows and v lies in a buffer that
// outlives the span's emit). Empty keys and values say nothing and are
// left out, and so are the keys that restate the service, kind or outcome
// (attrKept: the trace formats leave them out too, so the same span gives
// the same Attrs in every format); text that is not valid UTF-8 is
// repaired (a copy).
// KeepValue reports whether an attribute goes into span.Span.Attrs: a key
// attribution uses (AttrKept) with a value that is not empty and not over
// MaxAttrValue. Every reader asks it, so that Attrs hold the same kind of
// values whatever the format.
func KeepValue(key string, v []byte) bool {
	return len(v) > 0 && len(v) <= MaxAttrValue && AttrKept(key)
}

func (a *AttrSet) Add(tier uint8, key string, v []byte, alias bool) {
	if !KeepValue(key, v) {
		return
	}
	var val string
	switch {
	case alias && a.Borrow && utf8.Valid(v):
		val = unsafe.String(unsafe.SliceData(v), len(v))
	case len(v) <= MaxInternValue:
		// Owned, or not in a buffer that lives long enough (an
		// unescaped string, a number's text): interned, so a value seen
		// before costs nothing.
		val = a.interner().Get(v)
	default:
		val = ValidText(v) // long values are rarely repeated
	}
	a.List = append(a.List, span.Attr{Key: key, Value: val})
	a.Tier = append(a.Tier, tier)
}

// Done returns the attributes in tier order (stable within a tier), or
// nil when there are none: the reused list when the record borrows, else
// a slice of the span's own.
func (a *AttrSet) Done() []span.Attr {
	n := len(a.List)
	if n == 0 {
		return nil
	}
	// Insertion sort by tier: lists are short and almost always in order
	// already (one comparison per entry then).
	for i := 1; i < n; i++ {
		for j := i; j > 0 && a.Tier[j] < a.Tier[j-1]; j-- {
			a.Tier[j], a.Tier[j-1] = a.Tier[j-1], a.Tier[j]
			a.List[j], a.List[j-1] = a.List[j-1], a.List[j]
		}
	}
	if a.Borrow {
		return a.List[:n:n]
	}
	return a.own(a.List)
}

// maxAttrValue bounds a value kept as an attribute: a longer one (a
// payload, a stack trace, a padded line) is never a value that many
// spans share, which is all attribution looks for, and keeping it would
// cost memory per span. maxInternValue bounds the values interned, so
// that the interner's table stays small whatever the log.
const (
	MaxAttrValue   = 1024
	MaxInternValue = 128
)

// attrChunk is how many attributes an owned chunk holds: a chunk is one
// allocation for the spans of a few hundred lines.
const attrChunk = 512

// own copies l into a slice no later record reuses.
func (a *AttrSet) own(l []span.Attr) []span.Attr {
	if cap(a.Chunk)-len(a.Chunk) < len(l) {
		a.Chunk = make([]span.Attr, 0, max(attrChunk, len(l)))
	}
	s := len(a.Chunk)
	a.Chunk = append(a.Chunk, l...)
	return a.Chunk[s:len(a.Chunk):len(a.Chunk)]
}

// InBuf reports whether v lies inside buf.
func InBuf(v, buf []byte) bool {
	if len(v) == 0 || len(buf) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(v))), uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return p >= lo && p+uintptr(len(v)) <= lo+uintptr(len(buf))
}

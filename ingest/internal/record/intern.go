package record

import (
	"encoding/binary"
)

// Interner keeps one copy of each hop, service and name string: logs
// repeat a handful of them millions of times.
//
// A small direct-mapped cache in front of the map answers most lookups
// (a log has a few dozen such strings): a slot holds a string whose text
// is the input bytes themselves with its first eight bytes as a word, so
// a name of up to eight bytes (most hop names) is one length and one word
// comparison, a longer one a comparison of the rest.
type Interner struct {
	m map[string]string
	// front is 2-way: a string may sit in its slot or the next one, so
	// two strings of one slot do not evict each other on every line.
	front [frontSlots + 1]frontSlot
}

type frontSlot struct {
	w uint64 // the first 8 bytes of s, zero-padded
	s string
}

const frontSlots = 128

// head8 is the first min(8, len(b)) bytes of b as a little-endian word,
// zero-padded.
func head8(b []byte) uint64 {
	n := len(b)
	if n >= 8 {
		return binary.LittleEndian.Uint64(b)
	}
	if cap(b) >= 8 { // one load, the bytes past len masked off
		return binary.LittleEndian.Uint64(b[:8]) & (1<<(8*n) - 1)
	}
	var w uint64
	for i := n - 1; i >= 0; i-- {
		w = w<<8 | uint64(b[i])
	}
	return w
}

func (in *Interner) Get(b []byte) string {
	n := len(b)
	w := head8(b)
	k := uint(((w^uint64(n))*0x9E3779B97F4A7C15)>>57) & (frontSlots - 1)
	for _, f := range in.front[k : k+2] {
		if len(f.s) == n && f.w == w && (n <= 8 || f.s[8:] == string(b[8:])) {
			return f.s
		}
	}
	if in.m == nil {
		in.m = map[string]string{}
	}
	if s, ok := in.m[string(b)]; ok {
		if s == string(b) {
			if in.front[k].s == "" {
				in.front[k] = frontSlot{w, s}
			} else {
				in.front[k+1] = frontSlot{w, s}
			}
		}
		return s
	}
	if len(in.m) > 1<<16 {
		return ValidText(b) // a runaway cardinality: stop interning
	}
	s := ValidText(b) // invalid UTF-8 becomes U+FFFD (sanitize.go)
	in.m[string(b)] = s
	return s
}

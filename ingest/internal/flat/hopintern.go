package flat

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"

	"github.com/tailscope/tailscope/ingest/internal/record"
)

// hopIntern is a front for a record's Interner on the one string every
// line carries that it interns: the hop. The Interner's own front holds
// 128 strings keyed by their first 8 bytes, which ordinary hop names
// ("orders-3.List", "orders-4.List") share, so with hundreds of hops
// nearly every line went to its map; this is an open-addressing table
// over the whole name, sized to the hops, that answers what the Interner
// answered the first time it was asked for the same bytes. A name of at
// most 16 bytes is held in its slot, as two words: finding it reads one
// cache line, not also the string's. It holds at most maxHopIntern names:
// past that every lookup goes to the Interner, as before (which stops
// interning itself at 65,536 strings).
type hopIntern struct {
	slots []hopSlot // a power of two, at most half full
	n     int
	seed  maphash.Seed
	mix   uint64 // the seed of the short names' hash
}

type hopSlot struct {
	hash   uint64 // 0: empty
	w0, w1 uint64 // a short name's bytes (at most 16, zero-padded)
	n      int    // the name's length
	key    string // the bytes asked for (for names longer than 16)
	val    string // what the Interner answered for them
}

// maxHopIntern bounds the names hopIntern keeps.
const maxHopIntern = 1 << 16

// words16Of is b's first 16 bytes as two little-endian words, zero-padded
// (len(b) at most 16).
func words16Of(b []byte) (w0, w1 uint64) {
	n := len(b)
	if cap(b) >= 16 { // two loads, the bytes past len masked off
		full := b[:16]
		w0, w1 = binary.LittleEndian.Uint64(full), binary.LittleEndian.Uint64(full[8:])
		switch {
		case n < 8:
			return w0 & (1<<(8*n) - 1), 0
		case n < 16:
			return w0, w1 & (1<<(8*(n-8)) - 1)
		}
		return w0, w1
	}
	var buf [16]byte
	copy(buf[:], b)
	return binary.LittleEndian.Uint64(buf[:]), binary.LittleEndian.Uint64(buf[8:])
}

// get is in.Get(b), from the table when b was asked for before.
func (t *hopIntern) get(in *record.Interner, b []byte) string {
	if t.slots == nil {
		t.slots = make([]hopSlot, 256)
		t.seed = maphash.MakeSeed()
		t.mix = maphash.Bytes(t.seed, nil) | 1
	}
	n := len(b)
	var w0, w1, h uint64
	if n <= 16 {
		w0, w1 = words16Of(b)
		hi, lo := bits.Mul64(w0^t.mix, 0x9E3779B97F4A7C15)
		hi2, lo2 := bits.Mul64(w1^hi^uint64(n), 0xBF58476D1CE4E5B9^lo)
		h = (hi2 ^ lo2 ^ lo) | 1 // 0 marks an empty slot
	} else {
		h = maphash.Bytes(t.seed, b) | 1
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.hash == h && s.n == n && (n <= 16 && s.w0 == w0 && s.w1 == w1 || n > 16 && s.key == string(b)) {
			return s.val
		}
		if s.hash == 0 {
			break
		}
	}
	v := in.Get(b)
	if t.n >= maxHopIntern {
		return v
	}
	s := hopSlot{hash: h, n: n, val: v}
	if n <= 16 {
		s.w0, s.w1 = w0, w1
	} else if s.key = v; v != string(b) {
		s.key = string(b) // the Interner made the text valid UTF-8
	}
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
		mask = uint64(len(t.slots) - 1)
	}
	i := h & mask
	for t.slots[i].hash != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = s
	t.n++
	return v
}

// grow doubles the table.
func (t *hopIntern) grow() {
	old := t.slots
	t.slots = make([]hopSlot, 2*len(old))
	mask := uint64(len(t.slots) - 1)
	for _, s := range old {
		if s.hash == 0 {
			continue
		}
		i := s.hash & mask
		for t.slots[i].hash != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

package flat

import (
	"hash/maphash"

	"github.com/tailscope/tailscope/ingest/internal/record"
)

// hopIntern is a front for a record's Interner on the one string every
// line carries that it interns: the hop. The Interner's own front holds
// 128 strings keyed by their first 8 bytes, which ordinary hop names
// ("orders-3.List", "orders-4.List") share, so with hundreds of hops
// nearly every line went to its map; this is an open-addressing table
// over the whole name, sized to the hops, that answers what the Interner
// answered the first time it was asked for the same bytes. It holds at
// most maxHopIntern names: past that every lookup goes to the Interner,
// as before (which stops interning itself at 65,536 strings).
type hopIntern struct {
	slots []hopSlot // a power of two, at most half full
	n     int
	seed  maphash.Seed
}

type hopSlot struct {
	hash uint64
	key  string // the bytes asked for
	val  string // what the Interner answered for them
}

// maxHopIntern bounds the names hopIntern keeps.
const maxHopIntern = 1 << 16

// get is in.Get(b), from the table when b was asked for before.
func (t *hopIntern) get(in *record.Interner, b []byte) string {
	if t.slots == nil {
		t.slots = make([]hopSlot, 256)
		t.seed = maphash.MakeSeed()
	}
	h := maphash.Bytes(t.seed, b) | 1 // 0 marks an empty slot
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.hash == h && s.key == string(b) {
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
	key := v
	if v != string(b) {
		key = string(b) // the Interner made the text valid UTF-8
	}
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
		mask = uint64(len(t.slots) - 1)
	}
	i := h & mask
	for t.slots[i].hash != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = hopSlot{hash: h, key: key, val: v}
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

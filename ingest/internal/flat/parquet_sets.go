package flat

import (
	"strconv"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/span"
)

// Attribute sets: the fast rows' attributes as shared lists.
//
// A file's attribute columns (flattened OTLP attributes, a backend's
// dedicated columns) mostly hold a few values each, and a row's values
// together form one of a few lists: a pod, its zone, a route. Appending
// every row's values to a list of its own, and having the analysis find
// the list's values again text by text, was most of what such columns
// cost. So when every attribute column of a batch holds dictionary
// entries or a plain integer column's first few values (interned texts,
// see pqCursor.held), the first pass gives each row a code (its columns'
// dictionary indexes in mixed radix, exact) and the row the one list that
// code stands for: built once, interned by its texts, and never written
// again (span.Span.SharedAttrs), so that the analysis knows it by its
// address. A list holds the values appendAttr would give the row, in
// column order: the same attributes, only not a copy each.
//
// A batch that cannot be coded (a plain text column, a ninth integer, a
// radix past 62 bits) or that makes too many new lists takes the columns
// one by one as before (attrColumn); lists that keep changing (a column
// with a distinct value a row the analysis still counts) switch the sets
// off for a while, doubling.
type attrSets struct {
	cols []int // the attribute columns, in column order
	// The layout the codes are made for: per attribute column the
	// dictionary (nil: a plain integer column, or none), its radix and
	// stride, and per dictionary entry (or held integer) its term,
	// (id+1)·stride, 0 for an entry that gives no attribute.
	dicts  []parquet.Dictionary
	radix  []uint64
	stride []uint64
	terms  [][]uint64
	// memo is each integer column's last value and its term.
	memo []intMemo
	// codes are the batch's rows' codes, lists their lists.
	codes []uint64
	lists [][]span.Attr
	// tab finds a code's list: open addressing on code+1 (0 empty).
	tab  []setSlot
	used int
	// byText interns lists by their texts' addresses (see intern).
	byText map[uint64][]span.Attr
	// Churn: rows looked up and new codes in the current window; off is
	// batches left with the sets off, back the next such pause, probe set
	// for the first batch after one.
	looked, missed int
	off, back      int
	probe          bool
	buf            []span.Attr
}

type setSlot struct {
	key  uint64 // code+1, 0: empty
	list []span.Attr
}

type intMemo struct {
	bits uint64
	term uint64
	ok   bool
}

// Bounds of the sets: a code table of setSlots slots (emptied when half
// full), at most setsMaxText lists interned (the map is emptied past it),
// a batch giving up past half its rows new, and a window of setsWindow
// rows with more than one in setsChurn new pausing the sets for back
// batches (setsBackoff at first, doubled up to setsMaxBack, see churn).
const (
	setsSlots    = 1024
	setsMaxText  = 1 << 14
	setsWindow   = 1024
	setsChurn    = 8
	setsBackoff  = 8
	setsMaxBack  = 1024
	setsMaxRadix = 1 << 62
)

// newAttrSets is the sets of a worker whose table has attribute columns.
func newAttrSets(w *pqWorker) *attrSets {
	s := &attrSets{back: setsBackoff}
	for j, r := range w.roles {
		if r == roleAttr {
			s.cols = append(s.cols, j)
		}
	}
	n := len(s.cols)
	s.dicts, s.radix, s.stride = make([]parquet.Dictionary, n), make([]uint64, n), make([]uint64, n)
	s.terms, s.memo = make([][]uint64, n), make([]intMemo, n)
	s.codes, s.lists = make([]uint64, pqBatchRows), make([][]span.Attr, pqBatchRows)
	s.tab = make([]setSlot, setsSlots)
	return s
}

// skipBits is the columns every row and some row of the batch leave off
// (attrIgnore), and column j's bit among them.
func (w *pqWorker) skipBits(j int) (b, some, every uint64) {
	if g := w.ign; g != nil {
		return g.bit[j], g.some, g.every
	}
	return 0, 0, 0
}

// batch gives the m rows of the batch their shared lists (s.lists), false
// when the batch is not one to code: the caller then reads the attribute
// columns one by one (attrColumn).
func (s *attrSets) batch(w *pqWorker, m int) bool {
	if s.off > 0 {
		s.off--
		return false
	}
	if !s.plan(w) {
		return false
	}
	codes := s.codes[:m]
	clear(codes)
	for k, j := range s.cols {
		c := &w.curs[j]
		b, some, every := w.skipBits(j)
		if b&every != 0 || s.radix[k] == 1 {
			continue
		}
		if c.dict == nil {
			if !s.ints(w, k, j, codes, b&some) {
				return false
			}
			continue
		}
		t, idx := s.terms[k], c.idx
		if d := w.dense[j]; d >= 0 {
			for i, x := range idx[d : int(d)+m] {
				codes[i] += t[x]
			}
		} else {
			for i, v := range w.vidx[j][:m] {
				if v >= 0 {
					codes[i] += t[idx[v]]
				}
			}
		}
		if b&some != 0 {
			// Take the term out again where the row leaves the column
			// off: the row's code says "none" for it.
			for i, sk := range w.ign.skip[:m] {
				if sk&b != 0 {
					if v := w.pos(j, i); v >= 0 {
						codes[i] -= s.terms[k][c.idx[v]]
					}
				}
			}
		}
	}
	lists := s.lists[:m]
	missed := 0
	mask := uint64(len(s.tab) - 1)
	for i, code := range codes {
		key := code + 1
		h := key * 0x9E3779B97F4A7C15 >> 40
		for p := h & mask; ; p = (p + 1) & mask {
			e := &s.tab[p]
			if e.key == key {
				lists[i] = e.list
				break
			}
			if e.key == 0 {
				if missed++; 2*missed > m && missed > 32 {
					s.churn(m, missed)
					return false
				}
				l := s.intern(s.build(w, i))
				if 2*s.used >= len(s.tab) {
					clear(s.tab)
					s.used = 0
					p = h & mask
					for s.tab[p].key != 0 {
						p = (p + 1) & mask
					}
					e = &s.tab[p]
				}
				*e = setSlot{key: key, list: l}
				s.used++
				lists[i] = l
				break
			}
		}
	}
	s.churn(m, missed)
	return true
}

// churn counts a batch's lookups and new codes, and pauses the sets when
// the window's lists kept changing, or the first batch after a pause
// still made mostly new ones. A window that did not shortens the next
// pause again.
func (s *attrSets) churn(m, missed int) {
	if s.probe {
		s.probe = false
		if 2*missed > m {
			s.pause()
			return
		}
	}
	s.looked += m
	s.missed += missed
	if s.looked < setsWindow {
		return
	}
	if s.missed*setsChurn > s.looked {
		s.pause()
		return
	}
	s.looked, s.missed = 0, 0
	s.back = max(setsBackoff, s.back/2)
}

// pause turns the sets off for the next s.back batches, and doubles the
// pause after it.
func (s *attrSets) pause() {
	s.off, s.back, s.probe = s.back, min(2*s.back, setsMaxBack), true
	s.looked, s.missed = 0, 0
}

// plan checks that every attribute column of the batch can be coded, and
// renews the layout (terms, the code table) when a column's dictionary or
// radix changed since the last batch.
func (s *attrSets) plan(w *pqWorker) bool {
	same := true
	for k, j := range s.cols {
		d, r, ok := radixOf(w, j)
		if !ok {
			return false
		}
		if d != s.dicts[k] || r != s.radix[k] {
			same = false
		}
	}
	if same {
		return true
	}
	stride := uint64(1)
	for k, j := range s.cols {
		d, r, _ := radixOf(w, j)
		if stride > setsMaxRadix/r {
			s.dicts[k] = nil // planned again next batch
			s.radix[k] = 0
			return false
		}
		s.dicts[k], s.radix[k], s.stride[k] = d, r, stride
		t := s.terms[k][:0]
		if d != nil {
			for x, op := range w.curs[j].ops {
				v := uint64(0)
				if op == opAttr {
					v = uint64(x+1) * stride
				}
				t = append(t, v)
			}
		}
		s.terms[k] = t
		s.memo[k] = intMemo{}
		stride *= r
	}
	clear(s.tab)
	s.used = 0
	return true
}

// radixOf is attribute column j's dictionary (nil for none, or when the
// column is unread) and its radix in the batch's codes: its entries, or
// held integers, and "none"; false when a row reads a plain column of
// another kind, whose values are written in the batch's text.
func radixOf(w *pqWorker, j int) (parquet.Dictionary, uint64, bool) {
	c := &w.curs[j]
	switch {
	case w.unread[j]:
		return nil, 1, true // no row reads it (parquet_unread.go)
	case c.dict != nil:
		return c.dict, uint64(len(c.strs)) + 1, true
	case c.kind == parquet.Int32 || c.kind == parquet.Int64:
		return nil, uint64(len(c.held)) + 1, true
	}
	if b, _, every := w.skipBits(j); b == 0 || b&every == 0 {
		return nil, 0, false
	}
	return nil, 1, true // every row leaves it off
}

// ints adds integer column j's terms (attribute column k) to the codes
// of the rows that do not leave it off (b, their skip bit): a value among
// the column's held integers (pqCursor.held, taken in as attrPlain takes
// them), false at a value past them.
func (s *attrSets) ints(w *pqWorker, k, j int, codes []uint64, b uint64) bool {
	c := &w.curs[j]
	mo := &s.memo[k]
	for i := range codes {
		v := w.pos(j, i)
		if v < 0 || (b != 0 && w.ign.skip[i]&b != 0) {
			continue
		}
		bits := c.bitsOf(int(v))
		if !mo.ok || mo.bits != bits {
			t, ok := s.intTerm(w, k, c, bits)
			if !ok {
				return false
			}
			*mo = intMemo{bits: bits, term: t, ok: true}
		}
		codes[i] += mo.term
	}
	return true
}

// intTerm is the term of integer bits in column c (attribute column k),
// held first when there is room, as attrPlain holds it.
func (s *attrSets) intTerm(w *pqWorker, k int, c *pqCursor, bits uint64) (uint64, bool) {
	for h := range c.held[:c.nheld] {
		if c.held[h].bits == bits {
			return uint64(h+1) * s.stride[k], true
		}
	}
	if c.nheld == len(c.held) {
		return 0, false
	}
	n := int64(bits)
	if c.kind == parquet.Int32 {
		n = int64(int32(bits))
	}
	w.scratch = strconv.AppendInt(w.scratch[:0], n, 10)
	c.held[c.nheld] = heldText{bits, attrString(w.recs[0].intern, w.scratch)}
	c.nheld++
	return uint64(c.nheld) * s.stride[k], true
}

// build is row i's list: the values appendAttr gives it, in column order
// (in s.buf, not yet interned).
func (s *attrSets) build(w *pqWorker, i int) []span.Attr {
	l := s.buf[:0]
	for _, j := range s.cols {
		c := &w.curs[j]
		if b, _, _ := w.skipBits(j); w.unread[j] || b != 0 && w.ign.skip[i]&b != 0 {
			continue
		}
		v := w.pos(j, i)
		if v < 0 {
			continue
		}
		key := c.col.name
		if c.dict != nil {
			if x := c.idx[v]; c.ops[x] == opAttr {
				l = append(l, span.Attr{Key: key, Value: c.strs[x]})
			}
			continue
		}
		bits := c.bitsOf(int(v))
		for _, h := range c.held[:c.nheld] {
			if h.bits == bits {
				l = append(l, span.Attr{Key: key, Value: h.s})
				break
			}
		}
	}
	s.buf = l
	return l
}

// intern is the shared list with l's texts (by their addresses: every
// text here is a column name or an interned value), made from l when
// new; nil for an empty list.
func (s *attrSets) intern(l []span.Attr) []span.Attr {
	if len(l) == 0 {
		return nil
	}
	h := uint64(len(l))
	for i := range l {
		h = (h ^ uint64(uintptr(unsafe.Pointer(unsafe.StringData(l[i].Value))))) * 0x9E3779B97F4A7C15
		h = (h ^ uint64(uintptr(unsafe.Pointer(unsafe.StringData(l[i].Key)))) ^ uint64(len(l[i].Value))<<48) * 0xC2B2AE3D27D4EB4F
	}
	if o, ok := s.byText[h]; ok && sameList(o, l) {
		return o
	}
	n := make([]span.Attr, len(l))
	copy(n, l)
	if s.byText == nil || len(s.byText) >= setsMaxText {
		s.byText = make(map[uint64][]span.Attr)
	}
	if _, ok := s.byText[h]; !ok {
		s.byText[h] = n
	}
	return n
}

// sameList reports whether a and b hold the same strings (by address).
func sameList(a, b []span.Attr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameStr(a[i].Key, b[i].Key) || !sameStr(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

// sameStr reports whether a and b are one string (address and length).
func sameStr(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

package flat

import (
	"encoding/binary"
	"math"
	"math/bits"
	"unsafe"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/record"
)

// The fast path of flat JSON lines.
//
// A log writes the same few keys in the same order on every line, and its
// values are plain strings and numbers. fastLine decodes such a line in one
// pass with no callback per member: it predicts each key from the one that
// followed the previous key on earlier lines (so a line's optional keys,
// such as a root span's missing parent_id, cost one wrong guess, not a
// lost layout), checks the guess with one byte comparison that covers the
// key's quotes, and goes straight to the value. Whatever it does not
// handle — an escaped string, a nested object or array, a value its field
// rejects, bad syntax — makes it give up, and the caller decodes the line
// again with the general path (decodeLine), which therefore decides every
// error and every unusual case: the fast path only ever produces the
// record the general path would have produced.

// layout remembers the keys of a log's lines and the order they came in.
// Entry 0 stands for the start of an object. What fastEnd reads for every
// member is in hot, an array of one cache line an entry indexed with no
// bounds check; the rest (the key's text and words, the alternative
// successor) is in ent, read only off the predicted path.
type layout struct {
	hot [maxLayout]hotEntry
	ent []layoutEntry
}

// hotEntry is what fastEnd reads of an entry for each member.
type hotEntry struct {
	// ow and om are the member's opening as the line last wrote it with
	// no space — its quoted key, the colon and, for a string value, the
	// value's quote (oq) — as two words and their masks, olen bytes long:
	// a log writes each member the same way on every line, so one
	// compare of the 16 bytes past the separator takes the key, the
	// colon, the absence of spaces and the value's kind at once. Until
	// one is learnt (or when it is longer than 16 bytes), om is zero and
	// ow[0] is 1, which no masked word equals.
	ow, om [2]uint64
	olen   int32
	next   int32 // the entry that followed this one last time (0: none)
	// vlen is the length of the key's string value the last time (0:
	// none yet): a log's ids, names and kinds keep their lengths, so the
	// value's end is checked where it was rather than searched for
	// (stringEnd).
	vlen int32
	// act is what fastEnd does with the value, from hopAttr and f
	// (actionOf): one test of it instead of one of each.
	act uint8
	oq  bool
	f   field
	_   [17]byte // to 64 bytes
}

// hotEntry is one cache line (a compile error otherwise).
var _ = [1]struct{}{}[unsafe.Sizeof(hotEntry{})-64]

type layoutEntry struct {
	quoted []byte // the key with its quotes, as it is in the line
	key    string // the key, for an attribute (f == fNone)
	// w and m are quoted as two little-endian words and their masks (for
	// keys of up to 16 bytes with quotes; m[0] == 0 for longer ones), so
	// that checking a guess is two loads and compares; wc and mc are the
	// same for the key followed by its colon (mc[0] == 0 when that is
	// longer than 16 bytes), the way a log without spaces writes it.
	w, m, wc, mc [2]uint64
	alt          int32 // the entry that followed this one the time before hot's next (0: none)
}

// hotMask indexes hot with no bounds check (maxLayout is a power of two).
const hotMask = maxLayout - 1

// noOpening is the opening words of an entry that has none learnt.
var noOpening = [2]uint64{1, 0}

// The actions of layout entries.
const (
	actField   = iota // a field: by the kind of its value
	actHopAttr        // the key of --hop-by attr:KEY
	actAttr           // no field's: an attribute
	actGiveUp         // an attribute object: left to decodeLine
	actTraceID        // the string fields every line has, stored in place
	actSpanID
	actParentID
	actHop
	actService
	actName
	actKind
)

// actionOf is the action of an entry with hopAttr and f, in the order
// fastEnd tested them.
func actionOf(hopAttr bool, f field) uint8 {
	switch {
	case hopAttr:
		return actHopAttr
	case f == fNone:
		return actAttr
	case f == fNested, f == fResource:
		return actGiveUp
	case f == fTraceID:
		return actTraceID
	case f == fSpanID:
		return actSpanID
	case f == fParentID:
		return actParentID
	case f == fHop:
		return actHop
	case f == fService:
		return actService
	case f == fName:
		return actName
	case f == fKind:
		return actKind
	}
	return actField
}

// wordsAt reports whether line holds the entry's quoted key at i, and
// whether its colon follows with no space, with two word loads and
// compares (and the colon checked in the same compares when the key with
// its colon fits in 16 bytes too). It needs g.m[0] != 0 and 16 bytes of
// line from i.
func (g *layoutEntry) wordsAt(line []byte, i int) (hit, colon bool) {
	a, b := binary.LittleEndian.Uint64(line[i:]), binary.LittleEndian.Uint64(line[i+8:])
	if g.mc[0] != 0 && a&g.mc[0] == g.wc[0] && b&g.mc[1] == g.wc[1] {
		return true, true
	}
	return a&g.m[0] == g.w[0] && b&g.m[1] == g.w[1], false
}

// keyAt reports whether line holds the entry's quoted key at i.
func (g *layoutEntry) keyAt(line []byte, i int) bool {
	q := g.quoted
	return len(line)-i >= len(q) && string(line[i:i+len(q)]) == string(q)
}

// learnOpening remembers the opening (ow) of entry e's member: the k
// bytes of open before its value and, when the value is a string, its
// quote (open[k]), if they are exactly the quoted key and the colon (no
// space) and fit in 16 bytes; otherwise it forgets the one it had.
func (ly *layout) learnOpening(e int32, open []byte, k int) {
	h := &ly.hot[e&hotMask]
	q := open[k] == '"'
	if q {
		k++
	}
	if k == int(h.olen) && q == h.oq && h.om[0] != 0 {
		return // the same as before
	}
	if k > 16 || k != len(ly.ent[e].quoted)+1+b2i(q) {
		h.ow, h.om, h.olen, h.oq = noOpening, [2]uint64{}, 0, false
		return
	}
	h.ow, h.om = words16(open[:k])
	h.olen, h.oq = int32(k), q
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// maxLayout bounds the keys remembered; a line with more distinct keys
// than that still decodes here, with a lookup for the others.
const maxLayout = 64

// fastLine decodes line into rec and reports whether it could; on false
// rec is undefined and the caller must use decodeLine.
func (t *fieldTable) fastLine(rec *flatRecord, ly *layout, line []byte) bool {
	return t.fastEnd(rec, ly, line) == len(line)
}

// fastEnd is fastLine on the line that starts buf, with no need to find
// the line's end first: it decodes the line in place and returns where it
// ends (the index of its newline, or len(buf)), -1 when it could not
// decode it. A newline is no whitespace to it (skipWS), and no value or
// key it takes holds one, so it never reads on into the next line, and
// it takes the line exactly when fastLine takes the line cut at its
// newline, with its trailing carriage returns trimmed (decode's line).
// This saves the block's decoder a search for each newline.
//
// Each member is first matched whole against the opening its key had
// last time (hotEntry.ow), and a string value's fields are stored by a
// switch on the entry's action, which compiles to a jump table; only a
// member that opens otherwise takes the step-by-step path (spaces, the
// predicted key, otherKey, the colon), which learns the new opening.
func (t *fieldTable) fastEnd(rec *flatRecord, ly *layout, line []byte) int {
	if len(ly.ent) == 0 {
		ly.ent = append(ly.ent, layoutEntry{})
		ly.hot[0].ow = noOpening
	}
	rec.reset()
	n := len(line)
	i := skipWS(line, 0)
	if i >= n || line[i] != '{' {
		return -1
	}
	cur := int32(0)
	var nt numText // every field set by scanNumber: not cleared per member
	var v []byte
	var h *hotEntry
	var str, num bool
	for {
		// Past '{' or ',' (line[i] is one of them). The predicted
		// member's opening as the line wrote it last time, else the key,
		// the colon and the spaces one by one.
		e := ly.hot[cur&hotMask].next
		h = &ly.hot[e&hotMask] // entry 0's opening is never learnt: no match
		if n-i > 16 {
			w := line[i+1 : i+17]
			if binary.LittleEndian.Uint64(w)&h.om[0] == h.ow[0] && binary.LittleEndian.Uint64(w[8:])&h.om[1] == h.ow[1] {
				cur = e
				i += 1 + int(h.olen)
				if !h.oq {
					// The opening ends at the colon: a line may have
					// spaces after it that the one it was learnt from had
					// not (a string's opening ends at its quote instead).
					if i = skipSpace(line, i); i >= n {
						return -1
					}
					if h.act == actField {
						if end := rec.fastNumber(h.f, line, i); end > 0 {
							i = end
							goto next
						}
					}
					goto value
				}
				j, ok := stringEnd(line, i, int(h.vlen))
				if !ok {
					return -1
				}
				h.vlen = int32(j - i)
				v, i = line[i:j], j+1
				// A string value, by the entry's action: what the
				// general switch below does for one.
				switch h.act {
				case actTraceID:
					rec.sp.TraceID = rec.idString(v)
				case actSpanID:
					rec.sp.SpanID = rec.idString(v)
				case actParentID:
					rec.sp.ParentID = rec.idString(v)
				case actHop, actHopAttr:
					rec.sp.Hop = rec.hops.get(rec.intern, v)
				case actService:
					if !rec.lazy {
						goto set
					}
					rec.lazySvc = v // v lies in the line: valid until the next line
				case actName:
					if !rec.lazy {
						goto set
					}
					rec.lazyName = v
				case actKind:
					rec.sp.Kind = record.NormKind(v) // as set stores it
				case actAttr:
					rec.at.Add(record.TierField, ly.ent[e].key, v, record.InBuf(v, rec.block))
				case actGiveUp:
					return -1
				default:
					goto set
				}
				goto next
			set:
				if rec.set(h.f, true, v) != nil {
					return -1
				}
				goto next
			}
		}
		{
			open := i + 1
			if i = skipSpace(line, i+1); i >= n || line[i] != '"' {
				return -1 // includes the empty object: rare, left to decodeLine
			}
			// The key: the predicted one (with its colon when the line has
			// no space there), else otherKey's.
			hit, colon := false, false
			if e > 0 {
				ent := &ly.ent[e]
				if ent.m[0] != 0 && n-i >= 16 {
					hit, colon = ent.wordsAt(line, i)
				} else {
					hit = ent.keyAt(line, i)
				}
			}
			if !hit {
				if e = t.otherKey(ly, line, i, cur); e < 0 {
					return -1
				}
				h = &ly.hot[e&hotMask]
			}
			cur = e
			i += len(ly.ent[e].quoted)
			if colon {
				i++
			} else if i = colonAt(line, i); i < 0 {
				return -1
			}
			if i = skipSpace(line, i); i >= n {
				return -1
			}
			ly.learnOpening(e, line[open:i+1], i-open)
		}
	value:
		// The value.
		str, num = false, false
		switch c := line[i]; {
		case c == '"':
			j, ok := stringEnd(line, i+1, int(h.vlen))
			if !ok {
				return -1
			}
			h.vlen = int32(j - i - 1)
			v, str, i = line[i+1:j], true, j+1
		case c == '-' || (c >= '0' && c <= '9'):
			scanNumber(line, i, &nt)
			v, num, i = nt.text, true, i+len(nt.text)
		default:
			// A literal; an object, an array or bad syntax makes it
			// give up.
			if v = literalAt(line, i); v == nil {
				return -1
			}
			i += len(v)
		}
		switch act := h.act; {
		case act == actHopAttr:
			if !str && !num {
				return -1
			}
			rec.sp.Hop = rec.hops.get(rec.intern, v)
		case act == actAttr:
			// A field no span field takes: an attribute (null is none).
			if str || num || v[0] != 'n' {
				rec.at.Add(record.TierField, ly.ent[cur].key, v, record.InBuf(v, rec.block))
			}
		case act == actGiveUp:
			return -1
		case num:
			if !rec.setNumber(h.f, &nt) {
				return -1
			}
		case str:
			// The string fields every line has, stored here as set stores
			// them (a call and a second switch a member saved); the rest
			// go to set.
			switch {
			case act == actTraceID:
				rec.sp.TraceID = rec.idString(v)
			case act == actSpanID:
				rec.sp.SpanID = rec.idString(v)
			case act == actParentID:
				rec.sp.ParentID = rec.idString(v)
			case act == actHop:
				rec.sp.Hop = rec.hops.get(rec.intern, v)
			case rec.lazy && act == actService:
				rec.lazySvc = v // v lies in the line: valid until the next line
			case rec.lazy && act == actName:
				rec.lazyName = v
			default:
				if rec.set(h.f, true, v) != nil {
					return -1
				}
			}
		default:
			if rec.set(h.f, false, v) != nil {
				return -1
			}
		}
	next:
		if i < n && line[i] == ',' {
			continue
		}
		if i = skipWS(line, i); i < n && line[i] == ',' {
			continue
		}
		if i < n && line[i] == '}' {
			if i = skipWS(line, i+1); i == n || line[i] == '\n' {
				return i
			}
		}
		return -1
	}
}

// stringEnd is jsonscan.PlainString(line, i) (the closing quote of a
// string whose content starts at i; ok false for an escape, a control
// character or no closing quote), looking first where a string of n bytes
// would end: when a quote is there and none of the n bytes before it is a
// quote, a backslash or a control character, that quote is the first
// special byte, which PlainString would have found. The n bytes are
// checked a word at a time with one test at the end (the last word
// overlapping the one before), rather than a test and a branch a word.
func stringEnd(line []byte, i, n int) (int, bool) {
	if n >= 8 && i+n < len(line) && line[i+n] == '"' {
		// Up to 32 bytes (ids, names) as two or four words with no loop:
		// the first and last 8 (or 16), overlapping in the middle.
		w := line[i : i+n]
		m := specialMask(binary.LittleEndian.Uint64(w)) | specialMask(binary.LittleEndian.Uint64(w[n-8:]))
		if n > 16 {
			m |= specialMask(binary.LittleEndian.Uint64(w[8:])) | specialMask(binary.LittleEndian.Uint64(w[n-16:]))
			for k := 16; k < n-16; k += 8 {
				m |= specialMask(binary.LittleEndian.Uint64(w[k:]))
			}
		}
		if m == 0 {
			return i + n, true
		}
	}
	// Short strings (a kind, a status, most names) end in their first
	// word, and names and hops of varying length ("orders-3.List",
	// "profile-1.Validate") in their second or third: those words are
	// tested here, without a call.
	k := i
	for end := min(len(line), i+24); k+8 <= end; k += 8 {
		if m := specialMask(binary.LittleEndian.Uint64(line[k:])); m != 0 {
			j := k + bits.TrailingZeros64(m)>>3 // the lowest flag is exact
			return j, line[j] == '"'
		}
	}
	return jsonscan.PlainString(line, k)
}

// specialMask is non-zero exactly when a byte of x is '"', '\\' or below
// 0x20 (jsonscan's test: the lowest such byte's flag is exact, a borrow
// only ever flags bytes above one).
func specialMask(x uint64) uint64 {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	q := x ^ ('"' * lsb)
	b := x ^ ('\\' * lsb)
	return ((q-lsb)&^q | (b-lsb)&^b | (x-0x20*lsb)&^x) & msb
}

// otherKey finds the key at line[i] when the one predicted after entry
// cur is not there, and makes it the prediction: the key met after cur
// the time before (a root span's line without parent_id among child
// spans' lines), else the key scanned and looked up in the layout (added
// when new). It returns the key's entry, -1 when the key is not a plain
// string or the layout is full. Off the per-member path: once a log's
// layout is learnt, lines take the predicted key.
func (t *fieldTable) otherKey(ly *layout, line []byte, i int, cur int32) int32 {
	hc := &ly.hot[cur&hotMask]
	if e2 := ly.ent[cur].alt; e2 > 0 && ly.ent[e2].keyAt(line, i) {
		hc.next, ly.ent[cur].alt = e2, hc.next
		return e2
	}
	j, ok := jsonscan.PlainString(line, i+1)
	if !ok {
		return -1
	}
	e := t.layoutEntry(ly, line[i:j+1])
	if e < 0 {
		return -1
	}
	if hc.next != e {
		hc.next, ly.ent[cur].alt = e, hc.next
	}
	return e
}

// colonAt consumes the colon after a key that the prediction did not
// cover (a space before it, or a key too long to check with its colon),
// whitespace before it included; -1 when there is none.
func colonAt(line []byte, i int) int {
	if i = skipSpace(line, i); i >= len(line) || line[i] != ':' {
		return -1
	}
	return i + 1
}

// literalAt returns the literal (true, false, null) at line[i], nil when
// there is none.
func literalAt(line []byte, i int) []byte {
	switch c := line[i]; {
	case c == 't' && jsonscan.HasLit(line, i, "true"):
		return line[i : i+4]
	case c == 'f' && jsonscan.HasLit(line, i, "false"):
		return line[i : i+5]
	case c == 'n' && jsonscan.HasLit(line, i, "null"):
		return line[i : i+4]
	}
	return nil
}

// layoutEntry returns the entry of a quoted key, adding it if there is
// room; -1 when the layout is full and the key new (rec decodes the line
// with decodeLine then).
func (t *fieldTable) layoutEntry(ly *layout, quoted []byte) int32 {
	for k := 1; k < len(ly.ent); k++ {
		if string(ly.ent[k].quoted) == string(quoted) {
			return int32(k)
		}
	}
	if len(ly.ent) >= maxLayout {
		return -1
	}
	key := string(quoted[1 : len(quoted)-1])
	f := t.fieldOf(key)
	hopAttr := t.hopAttr != "" && key == t.hopAttr
	e := layoutEntry{quoted: append([]byte(nil), quoted...)}
	if f == fNone && !hopAttr {
		e.key = record.ValidText(quoted[1 : len(quoted)-1]) // an attribute's
	}
	e.w, e.m = words16(quoted)
	e.wc, e.mc = words16(append(quoted[:len(quoted):len(quoted)], ':'))
	ly.ent = append(ly.ent, e)
	k := len(ly.ent) - 1
	ly.hot[k] = hotEntry{ow: noOpening, f: f, act: actionOf(hopAttr, f)}
	return int32(k)
}

// words16 is b as two little-endian words and the masks of its bytes;
// all zero when b is longer than 16 bytes.
func words16(b []byte) (w, m [2]uint64) {
	if len(b) > 16 {
		return w, m
	}
	var buf [16]byte
	copy(buf[:], b)
	for k := range b {
		m[k/8] |= 0xff << (8 * (k % 8))
	}
	w[0] = binary.LittleEndian.Uint64(buf[:]) & m[0]
	w[1] = binary.LittleEndian.Uint64(buf[8:]) & m[1]
	return w, m
}

// numText is a number's text, scanned once, with its digits: the
// numbers of a line are read in the pass that finds their end, and int
// and dec answer what atoiBytes and atofBytes would.
type numText struct {
	text       []byte
	m          uint64 // the digits, as an integer (wrapped past 19 digits)
	nd, frac   int    // digits, and those after the point
	neg, plain bool   // a leading '-'; nothing but digits and one point
	dot        bool
}

// scanNumber reads the number at i (its first byte is '-' or a digit)
// as scanner.value delimits it.
func scanNumber(b []byte, i int, nt *numText) {
	start := i
	nt.neg = b[i] == '-'
	if nt.neg {
		i++
	}
	var m uint64
	nd, frac := 0, 0
	dot, other := false, false
	// The leading digits eight at a time while there are eight (a unix-ns
	// start has 19): one multiply chain per word instead of per digit.
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		if (x&0xF0F0F0F0F0F0F0F0)|((x+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4 != 0x3333333333333333 {
			break
		}
		x = (x & 0x0F0F0F0F0F0F0F0F) * 2561 >> 8 // pairs
		x = (x & 0x00FF00FF00FF00FF) * 6553601 >> 16
		x = (x & 0x0000FFFF0000FFFF) * 42949672960001 >> 32
		m = m*100_000_000 + x
		nd += 8
		i += 8
	}
	for ; i < len(b); i++ {
		c := b[i]
		if d := c - '0'; d < 10 {
			m = m*10 + uint64(d)
			nd++
			if dot {
				frac++
			}
		} else if c == '.' && !dot {
			dot = true
		} else if jsonscan.IsNumberByte(c) {
			other = true
		} else {
			break
		}
	}
	nt.text, nt.m, nt.nd, nt.frac, nt.dot, nt.plain = b[start:i], m, nd, frac, dot, !other && nd > 0
}

// int is atoiBytes(nt.text): 1 to 19 digits and nothing else, within
// int64.
func (nt *numText) int() (int64, bool) {
	if !nt.plain || nt.dot || nt.nd > 19 || nt.m > math.MaxInt64 {
		return 0, false
	}
	if nt.neg {
		return -int64(nt.m), true
	}
	return int64(nt.m), true
}

// dec is atofBytes(nt.text): at most 15 digits, a fraction with at least
// one digit, one correctly rounded division.
func (nt *numText) dec() (float64, bool) {
	if !nt.plain || nt.nd > 15 || (nt.dot && nt.frac == 0) {
		return 0, false
	}
	x := float64(nt.m) / pow10[nt.frac]
	if nt.neg {
		x = -x
	}
	return x, true
}

// scaled is the number times 10^exp when that is an integer below 2^50
// in magnitude, with no float arithmetic: what int64(math.Round(x*10^exp))
// gives for the x that int or dec answer, to the bit. Then float64(m)
// and 10^k are exact, the division and the product are each correctly
// rounded (relative error at most 2^-53 each), so the float result lies
// within N·2^-52 < 1/4 of the exact integer N and rounds to it (math.Round
// is symmetric, so the sign follows). A duration in ms or µs with at most
// that many decimals — what loggers write — thus skips a division, a
// product and a rounding. Anything else (more decimals, more than 15
// digits, exponents) answers false and takes the float path.
func (nt *numText) scaled(exp int) (int64, bool) {
	if !nt.plain || nt.nd > 15 || nt.frac > exp || (nt.dot && nt.frac == 0) {
		return 0, false
	}
	hi, lo := bits.Mul64(nt.m, pow10u[exp-nt.frac])
	if hi != 0 || lo >= 1<<50 {
		return 0, false
	}
	if nt.neg {
		return -int64(lo), true
	}
	return int64(lo), true
}

// pow10u are the powers of ten up to 10^6 (the ms scale), as integers.
var pow10u = [...]uint64{1, 10, 100, 1000, 10_000, 100_000, 1_000_000}

// setNumber is set for a number value, for the fields whose parsers the
// scan has done already: it stores exactly what set would, and leaves
// everything else (other fields, values that set would parse further or
// reject) to set. It reports false when set rejects the value.
func (r *flatRecord) setNumber(f field, nt *numText) bool {
	sp := &r.sp
	switch f {
	case fStart, fEnd: // parseTime
		if n, ok := nt.int(); ok {
			if f == fEnd {
				r.end, r.hasEnd = n, true
			} else {
				sp.Start, r.hasStart = n, true
			}
			return true
		}
	case fDurationMs, fDurationUs, fDurationNs: // parseDuration
		scale, exp := 1.0, 0
		switch f {
		case fDurationMs:
			scale, exp = 1e6, 6
		case fDurationUs:
			scale, exp = 1e3, 3
		}
		if d, ok := nt.scaled(exp); ok {
			sp.Duration, r.hasDur, r.durField = d, true, f
			return true
		}
		if n, ok := nt.int(); ok {
			if x := float64(n) * scale; record.FiniteNs(x) {
				sp.Duration, r.hasDur, r.durField = n, true, f
				if scale != 1 {
					sp.Duration = int64(math.Round(x))
				}
				return true
			}
		} else if x, ok := nt.dec(); ok {
			if x *= scale; record.FiniteNs(x) {
				sp.Duration, r.hasDur, r.durField = int64(math.Round(x)), true, f
				return true
			}
		}
	case fCode: // parseCode
		if n, ok := nt.int(); ok && n >= math.MinInt32 && n <= math.MaxInt32 {
			sp.Code, r.codeSet, r.codeText, r.codeNamed = int(n), true, "", false
			r.errTimeout = r.errTimeout || n == 408 || n == 504
			return true
		}
	case fAttempt: // atoiAlloc
		if n, ok := nt.int(); ok && n >= 0 {
			sp.Attempt, sp.AttemptSet = int(n), true
			return true
		}
	case fTimeoutMs: // atofAlloc
		if t, ok := nt.scaled(6); ok && t >= 0 {
			sp.TimeoutInForce = t
			return true
		}
		x, ok := 0.0, false
		if n, isInt := nt.int(); isInt && n > -(1<<53) && n < 1<<53 {
			x, ok = float64(n), true
		} else {
			x, ok = nt.dec()
		}
		if ok && record.FiniteNs(x*1e6) && x >= 0 {
			sp.TimeoutInForce = int64(math.Round(x * 1e6))
			return true
		}
	}
	return r.set(f, false, nt.text) == nil
}

// fastNumber is scanNumber and setNumber in one pass for the number
// fields every span line carries — start and end in ns, the duration in
// ms, µs or ns, the code, the attempt, the timeout in force — when the
// value at b[i] is written as loggers write it: digits, then at most a
// point and more digits, and a byte no number holds. It stores exactly
// what setNumber stores for that text and returns where the number ends;
// it returns 0 (having stored nothing) for any other field or text
// (a sign, an exponent, "1.", more digits than its checks cover, a value
// setNumber would pass to set), which scanNumber and setNumber then read.
// A number costs a digit's test and multiply-add each (eight at a time
// for the leading digits of a start), with no numText built and read
// back.
func (r *flatRecord) fastNumber(f field, b []byte, i int) int {
	start := i
	var m uint64
	// The leading digits eight at a time while there are eight, as
	// scanNumber reads them.
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		if (x&0xF0F0F0F0F0F0F0F0)|((x+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4 != 0x3333333333333333 {
			break
		}
		x = (x & 0x0F0F0F0F0F0F0F0F) * 2561 >> 8
		x = (x & 0x00FF00FF00FF00FF) * 6553601 >> 16
		x = (x & 0x0000FFFF0000FFFF) * 42949672960001 >> 32
		m = m*100_000_000 + x
		i += 8
	}
	for ; i < len(b); i++ {
		d := b[i] - '0'
		if d >= 10 {
			break
		}
		m = m*10 + uint64(d)
	}
	nd, frac := i-start, 0
	if nd == 0 || nd > 19 {
		return 0
	}
	if i < len(b) && b[i] == '.' {
		i++
		fs := i
		for ; i < len(b); i++ {
			d := b[i] - '0'
			if d >= 10 {
				break
			}
			m = m*10 + uint64(d)
		}
		if frac = i - fs; frac == 0 {
			return 0
		}
		nd += frac
	}
	if i < len(b) && jsonscan.IsNumberByte(b[i]) {
		return 0
	}
	// What setNumber stores for nt.int() (no point, at most 19 digits,
	// within int64) or nt.scaled(exp) (at most 15 digits, at most exp
	// decimals, below 2^50 once scaled).
	sp := &r.sp
	switch f {
	case fStart, fEnd:
		if frac > 0 || m > math.MaxInt64 {
			return 0
		}
		if f == fEnd {
			r.end, r.hasEnd = int64(m), true
		} else {
			sp.Start, r.hasStart = int64(m), true
		}
	case fDurationMs, fDurationUs, fDurationNs:
		exp := 0
		switch f {
		case fDurationMs:
			exp = 6
		case fDurationUs:
			exp = 3
		}
		if nd > 15 || frac > exp {
			return 0
		}
		hi, lo := bits.Mul64(m, pow10u[exp-frac])
		if hi != 0 || lo >= 1<<50 {
			return 0
		}
		sp.Duration, r.hasDur, r.durField = int64(lo), true, f
	case fCode:
		if frac > 0 || m > math.MaxInt32 {
			return 0
		}
		sp.Code, r.codeSet, r.codeText, r.codeNamed = int(m), true, "", false
		r.errTimeout = r.errTimeout || m == 408 || m == 504
	case fAttempt:
		if frac > 0 || m > math.MaxInt64 {
			return 0
		}
		sp.Attempt, sp.AttemptSet = int(m), true
	case fTimeoutMs:
		if nd > 15 || frac > 6 {
			return 0
		}
		hi, lo := bits.Mul64(m, pow10u[6-frac])
		if hi != 0 || lo >= 1<<50 {
			return 0
		}
		sp.TimeoutInForce = int64(lo)
	default:
		return 0
	}
	return i
}

// skipSpace is skipWS with its first test where it is called: most
// places a line may have whitespace have none.
func skipSpace(b []byte, i int) int {
	if i < len(b) && b[i] <= ' ' {
		return skipWS(b, i)
	}
	return i
}

// skipWS skips JSON whitespace from i, but for a newline, which ends the
// line (fastEnd reads lines in place in their block).
func skipWS(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' {
		switch b[i] {
		case ' ', '\t', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

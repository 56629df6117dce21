package flat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/record"
)

// lineReader yields lines of at most max bytes; longer lines are reported
// and skipped whole, never buffered whole.
type lineReader struct {
	src  *record.Source
	max  int
	line int64
	buf  []byte
}

var errLineTooLong = errors.New("line too long")

// next returns the next line without its newline, or io.EOF.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	lr.line++
	tooLong := false
	for {
		chunk, err := lr.src.R.ReadSlice('\n')
		if !tooLong {
			if len(lr.buf)+len(chunk) > lr.max+1 {
				tooLong = true
				lr.buf = lr.buf[:0]
			} else if err == nil && len(lr.buf) == 0 {
				return bytes.TrimRight(chunk, "\r\n"), nil // fast path: no copy
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch err {
		case nil:
			if tooLong {
				return nil, errLineTooLong
			}
			return bytes.TrimRight(lr.buf, "\r\n"), nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if tooLong {
				return nil, errLineTooLong
			}
			if len(lr.buf) == 0 {
				return nil, io.EOF
			}
			return bytes.TrimRight(lr.buf, "\r\n"), nil
		default:
			return nil, err
		}
	}
}

func DecodeJSONL(src *record.Source) error {
	src.SetDefaultHopBy("hop")
	tab := newFieldTable(src.Options())
	probeUnits(src, tab, false)
	err := decodeJSONLParallel(src, tab)
	if err == nil {
		tab.noteUnmapped(src)
	}
	return err
}

// fieldError marks a value that parsed as JSON but is wrong for its field.
type fieldError struct{ err error }

func (e fieldError) Error() string { return e.err.Error() }

// decodeObject decodes the members of a line's object (depth 0) or of an
// attribute object in it (depth 1, tier the attributes' tier): members
// that name fields set them; at depth 0 the others become attributes
// under their own key, at depth 1 every scalar member does (the span's
// attributes, even those that also fill a field), and an object member is
// flattened into dotted keys. A field the line set itself wins over an
// attribute object's member of the same field, wherever it comes.
func (t *fieldTable) decodeObject(sc *jsonscan.Scanner, rec *flatRecord, depth int, tier uint8) error {
	if depth == 0 {
		rec.nested = rec.nested[:0]
		if err := t.decodeMembers(sc, rec, 0, record.TierField); err != nil {
			return err
		}
		for _, n := range rec.nested {
			sub := jsonscan.Scanner{Buf: n.raw}
			if err := t.decodeMembers(&sub, rec, 1, n.tier); err != nil {
				return err
			}
		}
		return nil
	}
	return t.decodeMembers(sc, rec, depth, tier)
}

// nestedObj is an attribute object of a line, decoded after the line's
// own members: its raw text and its attributes' tier.
type nestedObj struct {
	raw  []byte
	tier uint8
}

func (t *fieldTable) decodeMembers(sc *jsonscan.Scanner, rec *flatRecord, depth int, tier uint8) error {
	pos := 0
	return sc.Object(func(key []byte, k jsonscan.JSONKind, v []byte) error {
		scalar := k != jsonscan.KObject && k != jsonscan.KArray && k != jsonscan.KNull
		if t.hopAttr != "" && string(key) == t.hopAttr && (k == jsonscan.KString || k == jsonscan.KNumber) {
			rec.sp.Hop = rec.intern.Get(v)
			if depth > 0 {
				rec.at.Add(tier, rec.at.KeyOf(key), v, record.InBuf(v, rec.block))
			}
			return nil
		}
		f := t.lookup(rec, depth, pos, key)
		pos++
		if f == fNested || f == fResource {
			if k == jsonscan.KObject && depth == 0 {
				// After the line's own fields, which win.
				tier := record.TierSpan
				if f == fResource {
					tier = record.TierResource
				}
				rec.nested = append(rec.nested, nestedObj{v, tier})
				return nil
			}
			if depth == 0 {
				return nil
			}
			f = fNone // a nested "attributes" member is an attribute
		}
		if depth > 0 {
			switch {
			case scalar:
				rec.at.Add(tier, rec.at.KeyOf(key), v, record.InBuf(v, rec.block))
			case k == jsonscan.KObject && tier == record.TierResource && depth == 1 && (string(key) == "attributes" || string(key) == "attrs"):
				// {"resource":{"attributes":{…}}}, as OTLP nests them.
				sub := jsonscan.Scanner{Buf: v}
				return t.decodeMembers(&sub, rec, depth+1, tier)
			case k == jsonscan.KObject:
				rec.at.Key = append(rec.at.Key[:0], key...)
				flattenAttrs(v, rec, tier, depth)
			}
			if rec.top&fieldGroup(f) != 0 {
				return nil // the line's own field wins
			}
		}
		if f == fNone {
			if depth == 0 && scalar {
				rec.at.Add(record.TierField, rec.at.KeyOf(key), v, record.InBuf(v, rec.block))
			}
			return nil
		}
		if k == jsonscan.KObject || k == jsonscan.KArray {
			err := fmt.Errorf("%s: want a scalar, got an %s", key, map[jsonscan.JSONKind]string{jsonscan.KObject: "object", jsonscan.KArray: "array"}[k])
			switch {
			case required(f):
				return fieldError{err}
			case f == fStart || f == fStartMs || f == fStartUs || f == fStartS || f == fEnd:
				if rec.badTime == nil {
					rec.badTime = err
				}
			default:
				rec.ignore(f, err)
			}
			return nil
		}
		if err := rec.set(f, k == jsonscan.KString, v); err != nil {
			return fieldError{err}
		}
		if depth == 0 {
			rec.top |= fieldGroup(f)
		}
		if rec.probe && isDurationField(f) {
			rec.durKey = string(key)
		}
		return nil
	})
}

// maxAttrDepth bounds how deep objects inside an attribute object are
// flattened into dotted keys; deeper ones are left out.
const maxAttrDepth = 8

// flattenAttrs adds the scalar members of the object raw as attributes
// under rec.at.key (the dotted path so far) plus ".member". The object was
// validated by the scanner that delimited it; an error here only ends the
// flattening.
func flattenAttrs(raw []byte, rec *flatRecord, tier uint8, depth int) {
	if depth >= maxAttrDepth {
		return
	}
	sc := jsonscan.Scanner{Buf: raw}
	n := len(rec.at.Key)
	sc.Object(func(key []byte, k jsonscan.JSONKind, v []byte) error {
		rec.at.Key = append(append(rec.at.Key[:n], '.'), key...)
		switch k {
		case jsonscan.KObject:
			flattenAttrs(v, rec, tier, depth+1)
		case jsonscan.KString, jsonscan.KNumber, jsonscan.KBool:
			rec.at.Add(tier, rec.at.KeyOf(rec.at.Key), v, record.InBuf(v, rec.block))
		}
		return nil
	})
	rec.at.Key = rec.at.Key[:n]
}

// keySlot remembers which field a key names. Lines of one log repeat the
// same few keys, so a small direct-mapped cache (by length and end bytes)
// compares a few bytes instead of hashing the key for a map lookup; keys
// that appear only on some lines (parent_id, timeout) do not disturb it.
type keySlot struct {
	key []byte
	f   field
}

const keySlots = 256

func (t *fieldTable) lookup(rec *flatRecord, depth, pos int, key []byte) field {
	if rec.keys == nil {
		rec.keys = make([]keySlot, keySlots+posSlots)
	}
	// First guess: the key the previous line had at this position (one
	// comparison when lines share their layout, the common case).
	var ps *keySlot
	if depth == 0 && pos < posSlots {
		ps = &rec.keys[keySlots+pos]
		if ps.key != nil && bytes.Equal(ps.key, key) {
			return ps.f
		}
	}
	f := t.lookupHashed(rec, key)
	if ps != nil {
		ps.key, ps.f = append(ps.key[:0], key...), f
	}
	return f
}

// posSlots is how many leading positions of a line the first guess covers.
const posSlots = 32

func (t *fieldTable) lookupHashed(rec *flatRecord, key []byte) field {
	h := uint32(len(key))
	for _, c := range key {
		h = h*31 + uint32(c)
	}
	i := int(h^h>>9) & (keySlots - 1)
	j := (i + 1) & (keySlots - 1) // two ways: one collision costs nothing
	if ks := &rec.keys[i]; ks.key != nil && bytes.Equal(ks.key, key) {
		return ks.f
	}
	if ks := &rec.keys[j]; ks.key != nil && bytes.Equal(ks.key, key) {
		return ks.f
	}
	f := t.fieldOf(string(key))
	ks := &rec.keys[i]
	if ks.key != nil && rec.keys[j].key == nil {
		ks = &rec.keys[j]
	}
	ks.key, ks.f = append(ks.key[:0], key...), f
	return f
}

// atoiAlloc is strconv.Atoi that allocates only for unusual input.
func atoiAlloc(v []byte) (int, error) {
	if n, ok := record.AtoiBytes(v); ok {
		return int(n), nil
	}
	return strconv.Atoi(string(v))
}

// atofAlloc is strconv.ParseFloat that allocates only for unusual input.
func atofAlloc(v []byte) (float64, error) {
	if n, ok := record.AtoiBytes(v); ok && n > -(1<<53) && n < 1<<53 {
		return float64(n), nil
	}
	if x, ok := atofBytes(v); ok {
		return x, nil
	}
	return strconv.ParseFloat(string(v), 64)
}

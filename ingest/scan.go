package ingest

import (
	"encoding/binary"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a small JSON tokenizer over one in-memory record. It is what
// makes flat JSON lines fast: keys are matched as bytes, strings without
// escapes are returned as sub-slices (no allocation), and nested values that
// tailscope does not use are skipped without building anything.
type scanner struct {
	buf []byte
	pos int
	tmp []byte // scratch for unescaped strings
}

type kind uint8

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kObject
	kArray
)

// maxDepth bounds nesting while skipping a value; deeper input is rejected
// rather than walked (skipping is iterative, so this is about sanity, not
// the stack).
const maxDepth = 512

var errSyntax = errors.New("invalid JSON")

func (s *scanner) ws() {
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if s.pos < len(s.buf) && s.buf[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

// str reads a JSON string at pos and returns its unescaped content. The
// slice is only valid until the next call.
func (s *scanner) str() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.pos
	i := start
	// Eight bytes at a time while none of them is a quote, a backslash or
	// a control character (SWAR: the usual "has a byte equal to / less
	// than" bit tricks); ids and names are mostly long plain runs.
	for ; i+8 <= len(s.buf); i += 8 {
		x := binary.LittleEndian.Uint64(s.buf[i:])
		if specialByte(x) {
			break
		}
	}
	for ; i < len(s.buf); i++ {
		c := s.buf[i]
		if c == '"' {
			s.pos = i + 1
			return s.buf[start:i], true
		}
		if c == '\\' {
			return s.slowStr(start)
		}
		if c < 0x20 {
			return nil, false
		}
	}
	return nil, false
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// specialByte reports whether any byte of x is '"', '\\' or below 0x20.
func specialByte(x uint64) bool { return specialMask(x) != 0 }

// specialMask sets the high bit of the bytes of x that are '"', '\\' or
// below 0x20; exactly for the lowest such byte, while bytes above it may
// be flagged falsely (a subtraction's borrow), so only the lowest flag is
// to be trusted.
func specialMask(x uint64) uint64 {
	q := x ^ ('"' * lsb)
	b := x ^ ('\\' * lsb)
	return ((q-lsb)&^q | (b-lsb)&^b | (x-0x20*lsb)&^x) & msb
}

func (s *scanner) slowStr(start int) ([]byte, bool) {
	out := s.tmp[:0]
	i := start
	for i < len(s.buf) {
		c := s.buf[i]
		switch {
		case c == '"':
			s.pos = i + 1
			s.tmp = out
			return out, true
		case c < 0x20:
			return nil, false
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(s.buf) {
			return nil, false
		}
		e := s.buf[i+1]
		i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := s.hex4(i)
			if n < 0 {
				return nil, false
			}
			i = n
			if utf16.IsSurrogate(r) {
				r2, n2 := rune(-1), -1
				if i+1 < len(s.buf) && s.buf[i] == '\\' && s.buf[i+1] == 'u' {
					r2, n2 = s.hex4(i + 2)
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError && n2 > 0 {
					r, i = d, n2
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, false
		}
	}
	return nil, false
}

func (s *scanner) hex4(i int) (rune, int) {
	if i+4 > len(s.buf) {
		return 0, -1
	}
	v, err := strconv.ParseUint(string(s.buf[i:i+4]), 16, 32)
	if err != nil {
		return 0, -1
	}
	return rune(v), i + 4
}

// value reads one JSON value. Strings come back unescaped; numbers,
// booleans and null as their literal bytes; objects and arrays as their
// raw text (validated for balance and string syntax only).
func (s *scanner) value() (kind, []byte, error) {
	if s.pos >= len(s.buf) {
		return 0, nil, errSyntax
	}
	switch c := s.buf[s.pos]; {
	case c == '"':
		b, ok := s.str()
		if !ok {
			return 0, nil, errors.New("bad string")
		}
		return kString, b, nil
	case c == '{' || c == '[':
		start := s.pos
		if err := s.skipNested(); err != nil {
			return 0, nil, err
		}
		k := kObject
		if c == '[' {
			k = kArray
		}
		return k, s.buf[start:s.pos], nil
	case c == 't':
		return s.lit("true", kBool)
	case c == 'f':
		return s.lit("false", kBool)
	case c == 'n':
		return s.lit("null", kNull)
	case c == '-' || (c >= '0' && c <= '9'):
		start := s.pos
		for s.pos < len(s.buf) {
			c := s.buf[s.pos]
			if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
				s.pos++
				continue
			}
			break
		}
		return kNumber, s.buf[start:s.pos], nil
	}
	return 0, nil, errSyntax
}

func (s *scanner) lit(w string, k kind) (kind, []byte, error) {
	if len(s.buf)-s.pos >= len(w) && string(s.buf[s.pos:s.pos+len(w)]) == w {
		s.pos += len(w)
		return k, s.buf[s.pos-len(w) : s.pos], nil
	}
	return 0, nil, errSyntax
}

// skipNested skips an object or array, iteratively.
func (s *scanner) skipNested() error {
	depth := 0
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case '{', '[':
			depth++
			if depth > maxDepth {
				return errors.New("nested too deep")
			}
			s.pos++
		case '}', ']':
			depth--
			s.pos++
			if depth == 0 {
				return nil
			}
		case '"':
			if _, ok := s.str(); !ok {
				return errors.New("bad string")
			}
		default:
			s.pos++
		}
	}
	return errors.New("unterminated object or array")
}

// object walks the members of the object at pos, calling f for each.
func (s *scanner) object(f func(key []byte, k kind, v []byte) error) error {
	s.ws()
	if !s.eat('{') {
		return errors.New("not a JSON object")
	}
	s.ws()
	if s.eat('}') {
		return nil
	}
	for {
		s.ws()
		kb, ok := s.str()
		if !ok {
			return errors.New("bad key")
		}
		key := kb
		if len(kb) > 0 && len(s.tmp) > 0 && &kb[0] == &s.tmp[0] {
			key = append([]byte(nil), kb...) // escaped key: keep a copy
		}
		s.ws()
		if !s.eat(':') {
			return errors.New("missing ':' after key")
		}
		s.ws()
		k, v, err := s.value()
		if err != nil {
			return err
		}
		if err := f(key, k, v); err != nil {
			return err
		}
		s.ws()
		if s.eat(',') {
			continue
		}
		if s.eat('}') {
			return nil
		}
		return errors.New("missing ',' or '}'")
	}
}

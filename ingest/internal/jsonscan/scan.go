package jsonscan

import (
	"encoding/binary"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Scanner is a small JSON tokenizer over one in-memory record. It is what
// makes flat JSON lines fast: keys are matched as bytes, strings without
// escapes are returned as sub-slices (no allocation), and nested values that
// tailscope does not use are skipped without building anything.
type Scanner struct {
	Buf []byte
	Pos int
	tmp []byte // scratch for unescaped strings
}

type JSONKind uint8

const (
	KNull JSONKind = iota
	KBool
	KNumber
	KString
	KObject
	KArray
)

// maxDepth bounds nesting while skipping a value; deeper input is rejected
// rather than walked (skipping is iterative, so this is about sanity, not
// the stack).
const maxDepth = 512

var errSyntax = errors.New("invalid JSON")

func (s *Scanner) Ws() {
	for s.Pos < len(s.Buf) {
		switch s.Buf[s.Pos] {
		case ' ', '\t', '\r', '\n':
			s.Pos++
		default:
			return
		}
	}
}

func (s *Scanner) Eat(c byte) bool {
	if s.Pos < len(s.Buf) && s.Buf[s.Pos] == c {
		s.Pos++
		return true
	}
	return false
}

// Str reads a JSON string at pos and returns its unescaped content. The
// slice is only valid until the next call.
func (s *Scanner) Str() ([]byte, bool) {
	if !s.Eat('"') {
		return nil, false
	}
	start := s.Pos
	i := start
	// Eight bytes at a time while none of them is a quote, a backslash or
	// a control character (SWAR: the usual "has a byte equal to / less
	// than" bit tricks); ids and names are mostly long plain runs.
	for ; i+8 <= len(s.Buf); i += 8 {
		x := binary.LittleEndian.Uint64(s.Buf[i:])
		if specialByte(x) {
			break
		}
	}
	for ; i < len(s.Buf); i++ {
		c := s.Buf[i]
		if c == '"' {
			s.Pos = i + 1
			return s.Buf[start:i], true
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

func (s *Scanner) slowStr(start int) ([]byte, bool) {
	out := s.tmp[:0]
	i := start
	for i < len(s.Buf) {
		c := s.Buf[i]
		switch {
		case c == '"':
			s.Pos = i + 1
			s.tmp = out
			return out, true
		case c < 0x20:
			return nil, false
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(s.Buf) {
			return nil, false
		}
		e := s.Buf[i+1]
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
				if i+1 < len(s.Buf) && s.Buf[i] == '\\' && s.Buf[i+1] == 'u' {
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

func (s *Scanner) hex4(i int) (rune, int) {
	if i+4 > len(s.Buf) {
		return 0, -1
	}
	v, err := strconv.ParseUint(string(s.Buf[i:i+4]), 16, 32)
	if err != nil {
		return 0, -1
	}
	return rune(v), i + 4
}

// Value reads one JSON value. Strings come back unescaped; numbers,
// booleans and null as their literal bytes; objects and arrays as their
// raw text (validated for balance and string syntax only).
func (s *Scanner) Value() (JSONKind, []byte, error) {
	if s.Pos >= len(s.Buf) {
		return 0, nil, errSyntax
	}
	switch c := s.Buf[s.Pos]; {
	case c == '"':
		b, ok := s.Str()
		if !ok {
			return 0, nil, errors.New("bad string")
		}
		return KString, b, nil
	case c == '{' || c == '[':
		start := s.Pos
		if err := s.skipNested(); err != nil {
			return 0, nil, err
		}
		k := KObject
		if c == '[' {
			k = KArray
		}
		return k, s.Buf[start:s.Pos], nil
	case c == 't':
		return s.lit("true", KBool)
	case c == 'f':
		return s.lit("false", KBool)
	case c == 'n':
		return s.lit("null", KNull)
	case c == '-' || (c >= '0' && c <= '9'):
		start := s.Pos
		for s.Pos < len(s.Buf) {
			c := s.Buf[s.Pos]
			if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
				s.Pos++
				continue
			}
			break
		}
		return KNumber, s.Buf[start:s.Pos], nil
	}
	return 0, nil, errSyntax
}

func (s *Scanner) lit(w string, k JSONKind) (JSONKind, []byte, error) {
	if len(s.Buf)-s.Pos >= len(w) && string(s.Buf[s.Pos:s.Pos+len(w)]) == w {
		s.Pos += len(w)
		return k, s.Buf[s.Pos-len(w) : s.Pos], nil
	}
	return 0, nil, errSyntax
}

// skipNested skips an object or array, iteratively.
func (s *Scanner) skipNested() error {
	depth := 0
	for s.Pos < len(s.Buf) {
		switch s.Buf[s.Pos] {
		case '{', '[':
			depth++
			if depth > maxDepth {
				return errors.New("nested too deep")
			}
			s.Pos++
		case '}', ']':
			depth--
			s.Pos++
			if depth == 0 {
				return nil
			}
		case '"':
			if _, ok := s.Str(); !ok {
				return errors.New("bad string")
			}
		default:
			s.Pos++
		}
	}
	return errors.New("unterminated object or array")
}

// Object walks the members of the object at pos, calling f for each.
func (s *Scanner) Object(f func(key []byte, k JSONKind, v []byte) error) error {
	s.Ws()
	if !s.Eat('{') {
		return errors.New("not a JSON object")
	}
	s.Ws()
	if s.Eat('}') {
		return nil
	}
	for {
		s.Ws()
		kb, ok := s.Str()
		if !ok {
			return errors.New("bad key")
		}
		key := kb
		if len(kb) > 0 && len(s.tmp) > 0 && &kb[0] == &s.tmp[0] {
			key = append([]byte(nil), kb...) // escaped key: keep a copy
		}
		s.Ws()
		if !s.Eat(':') {
			return errors.New("missing ':' after key")
		}
		s.Ws()
		k, v, err := s.Value()
		if err != nil {
			return err
		}
		if err := f(key, k, v); err != nil {
			return err
		}
		s.Ws()
		if s.Eat(',') {
			continue
		}
		if s.Eat('}') {
			return nil
		}
		return errors.New("missing ',' or '}'")
	}
}

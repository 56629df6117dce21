package jsonscan

import (
	"encoding/binary"
	"math/bits"
)

// PlainString finds the closing quote of a string whose content starts at
// i; ok is false for an escape, a control character or no closing quote
// (decodeLine's business).
func PlainString(b []byte, i int) (int, bool) {
	for ; i+8 <= len(b); i += 8 {
		if m := specialMask(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			// The lowest flagged byte is the first special one (the
			// borrows of the trick only ever flag bytes above it).
			i += bits.TrailingZeros64(m) >> 3
			return i, b[i] == '"'
		}
	}
	for ; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i, true
		case c == '\\' || c < 0x20:
			return 0, false
		}
	}
	return 0, false
}

// IsNumberByte is the set of bytes scanner.value takes into a number (the
// field's parser then judges the text).
func IsNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func HasLit(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// TopKeys returns the keys of the first JSON object in b, as far as b goes.
func TopKeys(b []byte) map[string]bool {
	keys := map[string]bool{}
	sc := Scanner{Buf: b}
	sc.Ws()
	if !sc.Eat('{') {
		return keys
	}
	for {
		sc.Ws()
		k, ok := sc.Str()
		if !ok {
			return keys
		}
		keys[string(k)] = true
		sc.Ws()
		if !sc.Eat(':') {
			return keys
		}
		sc.Ws()
		if _, _, err := sc.Value(); err != nil {
			return keys
		}
		sc.Ws()
		if !sc.Eat(',') {
			return keys
		}
	}
}

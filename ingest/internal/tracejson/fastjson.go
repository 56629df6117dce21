package tracejson

// The one-pass JSON reading shared by the trace formats' fast paths (OTLP
// in otlpfast.go, Zipkin in zipkinfast.go, Jaeger in jaegerfast.go).
//
// These helpers read a value in place from a buffer that holds it whole,
// and give up (ok false, or -1) on anything the general path's tokenizers
// (jsonstream.go, jsonscan.Scanner) might judge otherwise: an escape, a malformed
// scalar, unbalanced brackets, deep nesting. A caller that gives up leaves
// the value to the general path, which decides every error and position.

import (
	"bufio"
	"math"
	"unicode/utf8"
	"unsafe"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// fastDepth bounds the nesting of a value the fast path skips; deeper
// values are left to the general path (its scanner stops at maxDepth).
const fastDepth = 256

// bstr is b as a string without a copy: valid while b is unchanged.
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func fastWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// fastValue reads the value at b[i] (after whitespace): a plain string's
// content, a scalar's literal, an object's or array's raw text; end is the
// index after it. ok is false for anything either tokenizer of the general
// path might judge otherwise: an escaped or malformed string, a scalar
// not followed by a delimiter, a literal other than true/false/null,
// brackets that do not match, nesting past fastDepth.
func fastValue(b []byte, i int) (k jsonscan.JSONKind, v []byte, end int, ok bool) {
	if i >= len(b) {
		return 0, nil, 0, false
	}
	switch c := b[i]; {
	case c == '"':
		j, ok := jsonscan.PlainString(b, i+1)
		if !ok {
			return 0, nil, 0, false
		}
		return jsonscan.KString, b[i+1 : j], j + 1, true
	case c == '{' || c == '[':
		e, ok := fastSkipNested(b, i)
		if !ok {
			return 0, nil, 0, false
		}
		if c == '{' {
			return jsonscan.KObject, b[i:e], e, true
		}
		return jsonscan.KArray, b[i:e], e, true
	case c == '-' || (c >= '0' && c <= '9'):
		j := i + 1
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
			j++
		}
		k, v, end = jsonscan.KNumber, b[i:j], j
	case c == 't' && jsonscan.HasLit(b, i, "true"):
		k, v, end = jsonscan.KBool, b[i:i+4], i+4
	case c == 'f' && jsonscan.HasLit(b, i, "false"):
		k, v, end = jsonscan.KBool, b[i:i+5], i+5
	case c == 'n' && jsonscan.HasLit(b, i, "null"):
		k, v, end = jsonscan.KNull, b[i:i+4], i+4
	default:
		return 0, nil, 0, false
	}
	// A scalar ends where the general path's tokenizers both end it.
	if end < len(b) {
		switch b[end] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
		default:
			return 0, nil, 0, false
		}
	}
	return k, v, end, true
}

// fastSkipNested finds the end of the object or array at b[i], checking
// what both general tokenizers check (balance, matching brackets, strings)
// and more: any escape or control character in a string gives up.
func fastSkipNested(b []byte, i int) (int, bool) {
	var stack [fastDepth]byte
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '{', '[':
			if depth == len(stack) {
				return 0, false
			}
			stack[depth] = c
			depth++
			i++
		case '}', ']':
			if depth == 0 || (c == '}') != (stack[depth-1] == '{') {
				return 0, false
			}
			depth--
			i++
			if depth == 0 {
				return i, true
			}
		case '"':
			j, ok := jsonscan.PlainString(b, i+1)
			if !ok {
				return 0, false
			}
			i = j + 1
		default:
			i++
		}
	}
	return 0, false
}

// fastMembers calls f for each member of the object at b[i], its key as
// bytes of b and at the index of its value; end is the index after the
// object. f returns false to give up.
func fastMembers(b []byte, i int, f func(key []byte, k jsonscan.JSONKind, v []byte, at int) bool) (end int, ok bool) {
	return fastObject(b, i, func(key []byte, at int) int {
		k, v, e, ok := fastValue(b, at)
		if !ok || !f(key, k, v, at) {
			return -1
		}
		return e
	})
}

// fastObject is fastMembers for a caller that reads each value itself: f
// gets the index of the value's first byte and returns the index after
// it, or -1 to give up. A nested value is then read once, in place, not
// delimited first and walked again.
func fastObject(b []byte, i int, f func(key []byte, at int) int) (end int, ok bool) {
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	i = fastWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		j, ok := jsonscan.PlainString(b, i+1)
		if !ok {
			return 0, false
		}
		key := b[i+1 : j]
		i = fastWS(b, j+1)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		e := f(key, fastWS(b, i+1))
		if e < 0 {
			return 0, false
		}
		i = fastWS(b, e)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = fastWS(b, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// fastSkip is fastObject's reading of a value its caller passes over.
func fastSkip(b []byte, at int) int {
	_, _, e, ok := fastValue(b, at)
	if !ok {
		return -1
	}
	return e
}

// fastElems calls f for each element of the array at b[i] with the index
// of the element's first byte; f returns the index after the element, or
// -1 to give up.
func fastElems(b []byte, i int, f func(at int) int) (end int, ok bool) {
	if i >= len(b) || b[i] != '[' {
		return 0, false
	}
	i = fastWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		e := f(i)
		if e < 0 {
			return 0, false
		}
		i = fastWS(b, e)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = fastWS(b, i+1)
		case ']':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// fastHexID is normID for the usual id, lowercase hex of the full width and
// not all zero: aliasing v with borrow, a copy otherwise.
func fastHexID(v []byte, width int, borrow bool) string {
	if len(v) == 0 || len(v) > width {
		return record.NormID(v, width)
	}
	var bad, nonzero byte
	for _, c := range v {
		bad |= notLowerHex[c]
		nonzero |= c ^ '0'
	}
	if bad != 0 {
		return record.NormID(v, width)
	}
	if nonzero == 0 {
		return ""
	}
	if len(v) < width {
		// Left-padded with zeros, as NormID pads a 64-bit trace id or
		// an id that dropped its leading zeros (Jaeger): one allocation.
		id := make([]byte, width)
		pad := width - len(v)
		for i := range pad {
			id[i] = '0'
		}
		copy(id[pad:], v)
		return unsafe.String(&id[0], width)
	}
	if borrow {
		return bstr(v)
	}
	return string(v)
}

// notLowerHex is 1 for the bytes that are not lowercase hex digits.
var notLowerHex = func() (t [256]byte) {
	for c := range t {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			t[c] = 1
		}
	}
	return t
}()

// fastNanos is parseUnixNano for plain digits (1 to 19, within int64).
func fastNanos(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}

// fastKeepAttr is keepAttr, aliasing the key and value with borrow (when
// they are valid UTF-8, as the interner would return them).
func (w *jsonWalker) fastKeepAttr(rec *record.TraceRecord, key, v []byte, borrow bool) {
	if !record.KeepValue(bstr(key), v) {
		return
	}
	if borrow && utf8.Valid(key) && utf8.Valid(v) {
		rec.Attrs = append(rec.Attrs, span.Attr{Key: w.attrIntern.Get(key), Value: bstr(v)})
		return
	}
	rec.KeepAttr(&w.attrIntern, bstr(key), v)
}

// fastElemBuffer is what the read buffer grows to when a value a fast path
// reads in place (a Zipkin trace, a Jaeger trace) is longer than the
// reader's buffer; a longer one is read by the general walker, which
// streams.
var fastElemBuffer = 4 << 20

// fastOpen reports whether the object or array at b[i] continues past the
// end of b: its brackets and strings do not close within b, and nothing
// before the end makes it unreadable (a control character in a string, a
// stray closing bracket). Only then can reading more of the input let a
// fast path read it; anything else it gives up on is the general path's.
func fastOpen(b []byte, i int) bool {
	depth, inStr := 0, false
	for ; i < len(b); i++ {
		c := b[i]
		if inStr {
			switch {
			case c == '\\':
				i++
			case c == '"':
				inStr = false
			case c < 0x20:
				return false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth <= 0 {
				return false
			}
		}
	}
	return true
}

// fastInPlace gives decode the buffered input at the walker's position
// (the first byte of an object or array, after whitespace) and returns
// what decode read: decode returns the number of bytes of its value, or
// -1 to leave it to the general path. When decode gives up on a value
// that continues past what is buffered, the buffer is filled (and, with
// grow, enlarged once to fastElemBuffer) and decode tries again. The
// caller consumes the n bytes of b (w.s.consume) once it has used them;
// nothing is consumed here.
func (w *jsonWalker) fastInPlace(grow bool, decode func(b []byte) int) (b []byte, n int) {
	br := w.s.br
	b, _ = br.Peek(br.Buffered())
	if n = decode(b); n >= 0 || !fastOpen(b, 0) {
		return b, n
	}
	if len(b) < br.Size() {
		if more, _ := br.Peek(br.Size()); len(more) > len(b) {
			b = more
			if n = decode(b); n >= 0 || !fastOpen(b, 0) {
				return b, n
			}
		}
	}
	if !grow || len(b) < br.Size() || br.Size() >= fastElemBuffer {
		return b, -1
	}
	nb := bufio.NewReaderSize(br, fastElemBuffer)
	w.s.br = nb
	b, _ = nb.Peek(fastElemBuffer)
	return b, decode(b)
}

// fastMicros is parseMicros for plain digits (up to 16, and the ns within
// an int64), as ns.
func fastMicros(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 16 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if n > math.MaxInt64/1000 {
		return 0, false
	}
	return n * 1000, true
}

// fastSpanMember reads the value of a span member that a fast span
// scanner knows (bit f of seen) the way the general path takes it. When
// ok is false the caller returns end: the member's end for a null (the
// general path passes it over), -1 for bad JSON or a member seen before
// (the general path's order rules decide, so the span goes back to it).
func fastSpanMember(b []byte, at int, seen *uint32, f uint32) (k jsonscan.JSONKind, v []byte, end int, ok bool) {
	k, v, end, ok = fastValue(b, at)
	switch {
	case !ok:
		return k, v, -1, false
	case k == jsonscan.KNull:
		return k, v, end, false
	case *seen&f != 0:
		return k, v, -1, false
	}
	*seen |= f
	return k, v, end, true
}

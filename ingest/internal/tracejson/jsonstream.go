package tracejson

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
)

// jstream is the streaming JSON tokenizer under the trace formats' walker
// (tracejson.go). It reads a document of any size in one pass, in time
// linear in its size whatever its shape, and holds at most one record:
//
//   - whitespace between tokens is passed over as it streams by, never
//     buffered (encoding/json's Decoder buffers a run of whitespace between
//     tokens and rescans it on every refill: 100 MB of padding took time
//     that grew with its square);
//   - a value the walker does not want is skipped as it streams by, its
//     nesting tracked one bit per level;
//   - a value the walker wants (a span, a Jaeger trace) is copied out up to
//     --max-record bytes; a longer one is skipped to its end, so it costs
//     about --max-record of memory, and the walker goes on with the next
//     value (the spans after an oversized one are read);
//   - every position is known as a byte offset and a line.
//
// Syntax is checked as far as the walker needs it: the structure it walks
// token by token, and the balance of brackets and strings of the values it
// skips or copies (the scanner checks a copied value in full).
type jstream struct {
	br   *bufio.Reader
	off  int64 // bytes consumed
	line int64 // the line of the next byte, 1-based
	err  error // the first I/O error other than io.EOF
	// lineStart is the offset at which the current line starts.
	lineStart int64
	// nest is the bit stack of the containers open while a value is
	// skipped or copied: 1 for an object, 0 for an array.
	nest []uint64
}

// jsonSyntaxError is a syntax error at a position of the input.
type jsonSyntaxError struct {
	off, line int64
	msg       string
}

func (e *jsonSyntaxError) Error() string { return e.msg }

// errTooLong is returned by value when the value was over the limit: it
// has been consumed, nothing of it is kept.
var errTooLong = errors.New("record over MaxRecord")

func newJStream(br *bufio.Reader) *jstream {
	s := &jstream{br: br, line: 1}
	// A UTF-8 byte order mark before the first value is no part of it.
	if b, err := br.Peek(3); err == nil && string(b) == "\xef\xbb\xbf" {
		br.Discard(3)
		s.off, s.lineStart = 3, 3
	}
	return s
}

func (s *jstream) syntax(format string, a ...any) error {
	return &jsonSyntaxError{off: s.off, line: s.line, msg: fmt.Sprintf(format, a...)}
}

// eof turns the end of the input into the error it means at this point:
// a clean end (io.EOF) only where a value may end the input.
func (s *jstream) ioErr(err error, clean bool) error {
	if err == io.EOF {
		if clean {
			return io.EOF
		}
		return io.ErrUnexpectedEOF
	}
	if s.err == nil {
		s.err = err
	}
	return err
}

// chunk returns the buffered input, reading more when none is buffered.
func (s *jstream) chunk() ([]byte, error) {
	if n := s.br.Buffered(); n > 0 {
		b, _ := s.br.Peek(n)
		return b, nil
	}
	if _, err := s.br.Peek(1); err != nil {
		return nil, err
	}
	b, _ := s.br.Peek(s.br.Buffered())
	return b, nil
}

// consume discards n bytes of b (the start of the buffered input),
// counting its lines.
func (s *jstream) consume(b []byte, n int) {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:n], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		s.line++
		s.lineStart = s.off + int64(i)
	}
	s.br.Discard(n)
	s.off += int64(n)
}

// ws skips whitespace; it returns the next byte, not consumed, or the
// error that ended the input (io.EOF at a clean end).
func (s *jstream) ws() (byte, error) {
	for {
		b, err := s.chunk()
		if err != nil {
			return 0, s.ioErr(err, true)
		}
		i := 0
		for i < len(b) {
			switch b[i] {
			case ' ', '\t', '\r':
			case '\n':
				s.line++
				s.lineStart = s.off + int64(i) + 1
			default:
				s.br.Discard(i)
				s.off += int64(i)
				return b[i], nil
			}
			i++
		}
		s.br.Discard(i)
		s.off += int64(i)
	}
}

// eat consumes the next byte after whitespace when it is c.
func (s *jstream) eat(c byte) (bool, error) {
	n, err := s.ws()
	if err != nil {
		return false, err
	}
	if n != c {
		return false, nil
	}
	s.br.Discard(1)
	s.off++
	return true, nil
}

// expect consumes c after whitespace or fails.
func (s *jstream) expect(c byte, what string) error {
	ok, err := s.eat(c)
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	if err != nil {
		return err
	}
	if !ok {
		return s.syntax("want %s", what)
	}
	return nil
}

// maxKey bounds an object key the walker reads: longer keys are no key
// it knows, and are skipped.
const maxKey = 1 << 10

// key reads an object key and the colon after it. A key longer than
// maxKey comes back empty.
func (s *jstream) key(scratch []byte) (string, error) {
	c, err := s.ws()
	if err != nil {
		return "", s.ioErr(err, false)
	}
	if c != '"' {
		return "", s.syntax("want an object key")
	}
	raw, err := s.value(scratch[:0], maxKey)
	switch {
	case err == errTooLong:
		raw = nil
	case err != nil:
		return "", err
	}
	k := ""
	if raw != nil {
		sc := jsonscan.Scanner{Buf: raw}
		b, ok := sc.Str()
		if !ok {
			return "", s.syntax("bad string")
		}
		k = string(b)
	}
	return k, s.expect(':', "':' after an object key")
}

// kept is what value keeps of a value: its bytes appended to dst while
// they fit in max bytes from start; past that nothing more is kept and
// over is set.
type kept struct {
	dst        []byte
	start, max int
	keep, over bool
}

// add keeps b, the next bytes of the value, if they fit.
func (k *kept) add(b []byte) {
	if !k.keep {
		return
	}
	if len(k.dst)-k.start+len(b) > k.max {
		k.keep, k.over = false, true
		k.dst = k.dst[:k.start]
		return
	}
	k.dst = append(k.dst, b...)
}

// result is value's result for a value read to its end.
func (k *kept) result() ([]byte, error) {
	if k.over {
		return k.dst, errTooLong
	}
	return k.dst, nil
}

// value reads the next value (after whitespace) and appends its bytes to
// dst while they fit in max bytes; past max it consumes the rest of the
// value and returns errTooLong. max < 0 skips the value (nothing is kept).
// Scalars end at the first byte that cannot continue them.
func (s *jstream) value(dst []byte, max int) ([]byte, error) {
	c, err := s.ws()
	if err != nil {
		return dst, s.ioErr(err, false)
	}
	kv := kept{dst: dst, start: len(dst), max: max, keep: max >= 0}
	switch {
	case c == '{' || c == '[' || c == '"':
	case c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n':
		return s.scalar(&kv)
	default:
		return dst, s.syntax("want a value, got %q", c)
	}
	s.nest = s.nest[:0]
	depth := 0
	inStr, esc := false, false
	for {
		b, err := s.chunk()
		if err != nil {
			return kv.dst, s.ioErr(err, false)
		}
		i := 0
		done := false
	scan:
		for ; i < len(b); i++ {
			c := b[i]
			if inStr {
				switch {
				case esc:
					esc = false
				case c == '\\':
					esc = true
				case c == '"':
					inStr = false
					if depth == 0 {
						i++
						done = true
						break scan
					}
				case c == '\n':
					kv.add(b[:i])
					s.consume(b, i)
					return kv.dst, s.syntax("newline in a string")
				}
				continue
			}
			switch c {
			case '"':
				inStr = true
			case '{', '[':
				w, bit := depth/64, uint64(1)<<(depth%64)
				if w == len(s.nest) {
					s.nest = append(s.nest, 0)
				}
				if c == '{' {
					s.nest[w] |= bit
				} else {
					s.nest[w] &^= bit
				}
				depth++
			case '}', ']':
				if depth == 0 {
					kv.add(b[:i])
					s.consume(b, i)
					return kv.dst, s.syntax("unbalanced %q", c)
				}
				depth--
				isObj := s.nest[depth/64]>>(depth%64)&1 == 1
				if isObj != (c == '}') {
					kv.add(b[:i])
					s.consume(b, i)
					return kv.dst, s.syntax("%q closes the wrong bracket", c)
				}
				if depth == 0 {
					i++
					done = true
					break scan
				}
			}
		}
		kv.add(b[:i])
		s.consume(b, i)
		if done {
			return kv.result()
		}
	}
}

// scalar is value for a number or literal: up to the first byte that is
// no part of it.
func (s *jstream) scalar(kv *kept) ([]byte, error) {
	for {
		b, err := s.chunk()
		if err != nil {
			if err == io.EOF {
				break
			}
			return kv.dst, s.ioErr(err, false)
		}
		i := 0
		for i < len(b) && (jsonscan.IsNumberByte(b[i]) || (b[i] >= 'a' && b[i] <= 'z')) {
			i++
		}
		kv.add(b[:i])
		s.consume(b, i)
		if i < len(b) {
			break
		}
	}
	return kv.result()
}

// skip consumes the next value without keeping it.
func (s *jstream) skip() error {
	_, err := s.value(nil, -1)
	return err
}

// skipLine consumes the input up to and including the next newline; it
// reports false at the end of the input.
func (s *jstream) skipLine() bool {
	for {
		b, err := s.chunk()
		if err != nil {
			s.ioErr(err, true)
			return false
		}
		for i, c := range b {
			if c == '\n' {
				s.consume(b, i+1)
				return true
			}
		}
		s.consume(b, len(b))
	}
}

// peekRaw returns the next byte without skipping whitespace.
func (s *jstream) peekRaw() (byte, bool) {
	b, err := s.br.Peek(1)
	if err != nil {
		s.ioErr(err, true)
		return 0, false
	}
	return b[0], true
}

package export

import (
	"bufio"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/tailscope/tailscope/span"
)

// JSONL writes one JSON object per line with the canonical keys, and the
// span's attributes (span.Span.Attrs) as an "attributes" object of string
// values, last. Empty
// fields are omitted (no ids, no code, weight 1…), except duration_ns and
// status, which are always written: status "unset" is kept explicit because
// a reader would otherwise infer an outcome from the code (5xx → error)
// and the round trip would change the span.
type JSONL struct {
	w   *bufio.Writer
	buf []byte
}

// NewJSONL returns a JSON-lines writer to w.
func NewJSONL(w io.Writer) *JSONL { return &JSONL{w: bufio.NewWriterSize(w, 1<<16)} }

func (j *JSONL) Write(sp *span.Span) error {
	b := j.buf[:0]
	b = append(b, '{')
	first := true
	key := func(k string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, '"', ':')
	}
	str := func(k, v string) {
		if v != "" {
			key(k)
			b = appendJSONString(b, v)
		}
	}
	str("trace_id", sp.TraceID)
	str("span_id", sp.SpanID)
	str("parent_id", sp.ParentID)
	str("service", sp.Service)
	str("name", sp.Name)
	str("kind", sp.Kind)
	str("hop", sp.Hop)
	if sp.Start != 0 {
		key("start")
		b = strconv.AppendInt(b, sp.Start, 10)
	}
	key("duration_ns")
	b = strconv.AppendInt(b, sp.Duration, 10)
	key("status")
	b = appendJSONString(b, sp.Status.String())
	if sp.Timeout {
		key("timeout")
		b = append(b, "true"...)
	}
	if sp.Code != 0 {
		key("code")
		b = strconv.AppendInt(b, int64(sp.Code), 10)
	}
	if sp.AttemptSet || sp.Attempt != 0 {
		// Written whenever the log gave one: an explicit 0 is what tells
		// a 0-based numbering from none.
		key("attempt")
		b = strconv.AppendInt(b, int64(sp.Attempt), 10)
	}
	if sp.TimeoutInForce != 0 {
		key("timeout_ms")
		b = strconv.AppendFloat(b, timeoutMs(sp.TimeoutInForce), 'f', -1, 64)
	}
	if sp.Weight != 0 && sp.Weight != 1 {
		key("weight")
		b = strconv.AppendFloat(b, sp.Weight, 'g', -1, 64)
	}
	str("peer", sp.Peer)
	str("code_text", sp.CodeText)
	if len(sp.Attrs) > 0 {
		// Members in order, duplicates kept: the flat reader takes every
		// member of "attributes" back as an attribute, and a member that
		// names a field never overrides the line's own field.
		key("attributes")
		b = append(b, '{')
		for i, a := range sp.Attrs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, a.Key)
			b = append(b, ':')
			b = appendJSONString(b, a.Value)
		}
		b = append(b, '}')
	}
	b = append(b, '}', '\n')
	j.buf = b
	_, err := j.w.Write(b)
	return err
}

// Close flushes the buffer.
func (j *JSONL) Close() error { return j.w.Flush() }

// appendJSONString quotes s as a JSON string. Invalid UTF-8 becomes U+FFFD
// so that the output is always valid JSON, whatever the logs held.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

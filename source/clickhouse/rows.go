package clickhouse

// A row of the query (see rowbinary.go for how it is read) is re-spelt as
// OTLP JSON, one ExportTraceServiceRequest a line holding one span, which
// the OTLP reader decodes as it decodes a file:
//
//	{"resourceSpans":[{"resource":{"attributes":[…]},"scopeSpans":[{
//	  "scope":{…},"spans":[{…}]}]}]}
//
// Attribute values are text in the exporter's table (its Map columns hold
// what pcommon.Value.AsString gave), and are written as stringValue: the
// readers keep every attribute as its text, so an int or a bool reads the
// same. What a span means is the readers' business, not this file's.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// value is an integer column's value, and whether the row had it.
type value struct {
	v   int64
	set bool
}

// row is one row of the answer, by alias (query.go).
// Its text is views of the decoder's arena, valid until the next row.
type row struct {
	S, D                                value
	T, I, P, N, SV, K, C, M, TS, SN, SR []byte
	RK, RV, AK, AV                      [][]byte
	EK, EV                              [][][]byte
}

// converter turns rows into OTLP lines, reusing its buffers.
type converter struct {
	r   row
	out []byte
}

// line is the row as an OTLP line, valid until the next call.
func (c *converter) line() []byte {
	r := &c.r
	b := c.out[:0]
	b = append(b, `{"resourceSpans":[{"resource":{"attributes":[`...)
	n := 0
	if len(r.SV) > 0 && !hasKey(r.RK, "service.name") {
		b = appendAttr(b, serviceName, r.SV)
		n++
	}
	b = appendAttrs(b, r.RK, r.RV, n)
	b = append(b, `]},"scopeSpans":[{`...)
	if len(r.SN) > 0 || len(r.SR) > 0 {
		b = append(b, `"scope":{"name":`...)
		b = appendString(b, r.SN)
		b = append(b, `,"version":`...)
		b = appendString(b, r.SR)
		b = append(b, `},`...)
	}
	b = append(b, `"spans":[{"traceId":`...)
	b = appendString(b, r.T)
	b = append(b, `,"spanId":`...)
	b = appendString(b, r.I)
	if len(r.P) > 0 {
		b = append(b, `,"parentSpanId":`...)
		b = appendString(b, r.P)
	}
	if len(r.TS) > 0 {
		b = append(b, `,"traceState":`...)
		b = appendString(b, r.TS)
	}
	b = append(b, `,"name":`...)
	b = appendString(b, r.N)
	b = append(b, `,"kind":`...)
	b = strconv.AppendInt(b, int64(kindNumber(r.K)), 10)
	end := r.S.v + r.D.v
	if r.D.v >= 0 && end < r.S.v {
		end = 1<<63 - 1 // past the range of time: the readers say so
	}
	b = append(b, `,"startTimeUnixNano":"`...)
	b = strconv.AppendInt(b, r.S.v, 10)
	b = append(b, `","endTimeUnixNano":"`...)
	b = strconv.AppendInt(b, end, 10)
	b = append(b, `","attributes":[`...)
	b = appendAttrs(b, r.AK, r.AV, 0)
	b = append(b, ']')
	if len(r.EK) > 0 {
		b = append(b, `,"events":[`...)
		for i := range r.EK {
			if i > 0 {
				b = append(b, ',')
			}
			var vals [][]byte
			if i < len(r.EV) {
				vals = r.EV[i]
			}
			b = append(b, `{"name":"exception","attributes":[`...)
			b = appendAttrs(b, r.EK[i], vals, 0)
			b = append(b, "]}"...)
		}
		b = append(b, ']')
	}
	b = append(b, `,"status":{"code":`...)
	b = strconv.AppendInt(b, int64(statusNumber(r.C)), 10)
	if len(r.M) > 0 {
		b = append(b, `,"message":`...)
		b = appendString(b, r.M)
	}
	b = append(b, "}}]}]}]}\n"...)
	c.out = b
	return b
}

var serviceName = []byte("service.name")

func hasKey(keys [][]byte, k string) bool {
	for _, x := range keys {
		if string(x) == k {
			return true
		}
	}
	return false
}

// appendAttrs appends the pairs of keys and vals (as many as both have),
// after n attributes already written.
func appendAttrs(b []byte, keys, vals [][]byte, n int) []byte {
	for i := 0; i < len(keys) && i < len(vals); i++ {
		if n > 0 {
			b = append(b, ',')
		}
		b = appendAttr(b, keys[i], vals[i])
		n++
	}
	return b
}

func appendAttr(b []byte, k, v []byte) []byte {
	b = append(b, `{"key":`...)
	b = appendString(b, k)
	b = append(b, `,"value":{"stringValue":`...)
	b = appendString(b, v)
	return append(b, "}}"...)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD,
// as encoding/json writes it.
func appendString(b []byte, s []byte) []byte {
	b = append(b, '"')
	if plain(s) {
		b = append(b, s...)
		return append(b, '"')
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				switch c {
				case '\n':
					b = append(b, '\\', 'n')
				case '\r':
					b = append(b, '\\', 'r')
				case '\t':
					b = append(b, '\\', 't')
				default:
					b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
				}
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// plain reports whether s goes into a JSON string as it is: valid UTF-8
// without a quote, a backslash or a control character.
func plain(s []byte) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || utf8.Valid(s)
}

// kindNames are the spellings of OTLP's span kinds: the exporter's
// (Server), OTLP's enum (SPAN_KIND_SERVER, its prefix cut), and lower case.
var kindNames = map[string]int{"unspecified": 0, "internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}

// kindNumber is OTLP's number of a span kind as a table spells it: a
// name in any case, with or without SPAN_KIND_, or its number; 0
// (unspecified) for anything else.
func kindNumber(b []byte) int {
	s := strings.TrimPrefix(lower(b), "span_kind_")
	if n, ok := kindNames[s]; ok {
		return n
	}
	if len(s) == 1 && s[0] >= '0' && s[0] <= '5' {
		return int(s[0] - '0')
	}
	return 0
}

// statusNumber is OTLP's status code of a status as a table spells it
// (Ok, Error, Unset, STATUS_CODE_…, or 0/1/2); 0 (unset) otherwise.
func statusNumber(b []byte) int {
	switch strings.TrimPrefix(lower(b), "status_code_") {
	case "ok", "1":
		return 1
	case "error", "2":
		return 2
	}
	return 0
}

// lower is b in lower case (ASCII), as a string; "" when it is too long
// to be a kind or a status.
func lower(b []byte) string {
	var buf [24]byte
	if len(b) > len(buf) {
		return ""
	}
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return string(buf[:len(b)])
}

// valid reports whether b is one JSON document a line (for tests).
func valid(b []byte) bool {
	for _, l := range bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n")) {
		if !json.Valid(l) {
			return false
		}
	}
	return true
}

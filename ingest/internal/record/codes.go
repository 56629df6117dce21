package record

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tailscope/tailscope/span"
)

// Codes and outcomes as logs write them.
//
// A status code field may hold an HTTP status (503), a gRPC code as a
// number (14) or a name in any spelling (UNAVAILABLE, unavailable,
// StatusCode.UNAVAILABLE, Unavailable), or something else altogether: an
// errno name (ECONNRESET, EPIPE, ETIMEDOUT), a client library's error kind
// ("connection reset", "broken pipe"). Those are exactly the failed spans,
// so no value of an optional field ever costs the span: what is a known
// code becomes Code, anything else is kept as text (span.CodeText) for the
// report's code counts, and a timeout-like text (ETIMEDOUT, timed out,
// deadline exceeded) marks the span as cut by a timeout.

// maxCodeText bounds a code kept as text: an error kind, not a message.
const maxCodeText = 64

// CodeTextOf trims a code kept as text to a short valid UTF-8 string.
func CodeTextOf(v []byte) []byte {
	v = trimSpaceBytes(v)
	if len(v) > maxCodeText {
		cut := maxCodeText
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		v = v[:cut]
	}
	return v
}

func trimSpaceBytes(v []byte) []byte {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t' || v[0] == '\r' || v[0] == '\n') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t' || v[len(v)-1] == '\r' || v[len(v)-1] == '\n') {
		v = v[:len(v)-1]
	}
	return v
}

// grpcCodeByName reads a gRPC status name in the spellings met in logs:
// any case, with or without a "StatusCode." or "grpc." prefix, upper snake
// case (DEADLINE_EXCEEDED), CamelCase (DeadlineExceeded) or words
// ("deadline exceeded").
func grpcCodeByName(v []byte) (int, bool) {
	if len(v) == 0 || len(v) > 40 {
		return 0, false
	}
	var buf [40]byte
	n := 0
	s := string(trimSpaceBytes(v))
	for _, p := range []string{"StatusCode.", "statuscode.", "STATUSCODE.", "grpc.", "GRPC.", "codes.", "Code."} {
		s = strings.TrimPrefix(s, p)
	}
	// Fold to upper snake case: a lower-to-upper change or a space or a
	// hyphen starts a word.
	prevLower := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
			prevLower = true
		case c >= 'A' && c <= 'Z':
			if prevLower && n < len(buf) {
				buf[n] = '_'
				n++
			}
			prevLower = false
		case c == ' ' || c == '-' || c == '_':
			c = '_'
			prevLower = false
		default:
			return 0, false
		}
		if n >= len(buf) {
			return 0, false
		}
		buf[n] = c
		n++
	}
	name := string(buf[:n])
	switch name {
	case "UNKNOWN_ERROR":
		name = "UNKNOWN"
	case "INTERNAL_ERROR":
		name = "INTERNAL"
	case "CANCELED":
		name = "CANCELLED"
	}
	c, ok := GRPCCodeNames[name]
	return c, ok
}

// parseCode reads a code field: an HTTP status or a gRPC code, as a number
// or by name; anything else comes back as text, an error kind of its own
// (ECONNRESET, "connection reset"). timeout says the code names a timeout
// (HTTP 408/504, DEADLINE_EXCEEDED, ETIMEDOUT, timed out).
//
// A gRPC code given by name (UNAVAILABLE) comes back with named set: a
// name other than OK says the call failed, which a bare number does not
// (it could be a code of either protocol).
func parseCode(v []byte) (code int, timeout bool, text []byte) {
	code, timeout, text, _ = ParseCodeNamed(v)
	return
}

func ParseCodeNamed(v []byte) (code int, timeout bool, text []byte, named bool) {
	if n, ok := AtoiBytes(v); ok && n >= math.MinInt32 && n <= math.MaxInt32 {
		return int(n), n == 408 || n == 504, nil, false
	}
	t := trimSpaceBytes(v)
	if len(t) == 0 {
		return 0, false, nil, false
	}
	if n, ok := AtoiBytes(t); ok && n >= math.MinInt32 && n <= math.MaxInt32 {
		return int(n), n == 408 || n == 504, nil, false
	}
	if x, err := strconv.ParseFloat(string(t), 64); err == nil && x == math.Trunc(x) && math.Abs(x) < 1e9 {
		return int(x), x == 408 || x == 504, nil, false // "503.0"
	}
	// "503 Service Unavailable", "HTTP 503", "HTTP/1.1 503": an HTTP
	// status as a word of its own.
	if n := httpWord(t); n != 0 {
		return n, n == 408 || n == 504, nil, false
	}
	if c, ok := grpcCodeByName(t); ok {
		return c, c == 4, nil, true
	}
	return 0, IsTimeoutWord(t), CodeTextOf(t), false
}

// httpWord finds an HTTP status written as a word among words: the first
// word ("503 Service Unavailable") or the word after "HTTP" or "HTTP/x"
// ("HTTP 503", "HTTP/1.1 503 Service Unavailable"); 0 when there is none.
func httpWord(t []byte) int {
	words := strings.Fields(string(t))
	at := 0
	if len(words) > 1 && (strings.EqualFold(words[0], "http") || strings.HasPrefix(strings.ToUpper(words[0]), "HTTP/")) {
		at = 1
	}
	if len(words) < 2 && at == 0 {
		return 0 // a lone number is read as a number before
	}
	if at >= len(words) || len(words[at]) != 3 {
		return 0
	}
	n, ok := AtoiBytes([]byte(words[at]))
	if !ok || n < 100 || n >= 600 {
		return 0
	}
	return int(n)
}

// OkWord reports whether a code kept as text says success.
func OkWord(v []byte) bool {
	switch strings.ToLower(string(v)) {
	case "ok", "success", "succeeded", "successful", "none", "no error", "noerror":
		return true
	}
	return false
}

// errorWords are the parts of an outcome text that say it failed.
var errorWords = []string{"error", "fail", "reset", "refused", "unavailable", "abort", "cancel",
	"exception", "denied", "broken", "unreachable", "closed", "exhausted", "reject", "invalid", "panic",
	"crash", "killed", "throttl", "overload", "unhealthy", "fault", "bad", "down"}

// errorText reports whether a status text names a failure: an errno name
// (ECONNRESET, EPIPE, EAI_AGAIN) or a text with a word of failure in it.
func errorText(v []byte) bool {
	if len(v) >= 3 && v[0] == 'E' {
		errno := true
		for _, c := range v[1:] {
			if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
				errno = false
				break
			}
		}
		if errno {
			return true
		}
	}
	s := strings.ToLower(string(v))
	for _, w := range errorWords {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// ParseStatus reads ok/error/unset in the spellings of OTel, HTTP and
// common loggers; it also takes an HTTP code, a gRPC name, a timeout word,
// or an error kind (ECONNRESET, connection reset: failed, kept as text).
// ok is false for a value it cannot tell the outcome from.
func ParseStatus(v []byte) (st span.Status, timeout bool, code int, text []byte, ok bool) {
	switch string(v) { // the common spellings, without allocating
	case "ok", "OK", "STATUS_CODE_OK":
		return span.OK, false, 0, nil, true
	case "error", "ERROR", "STATUS_CODE_ERROR":
		return span.Error, false, 0, nil, true
	case "unset", "", "STATUS_CODE_UNSET":
		return span.Unset, false, 0, nil, true
	}
	t := trimSpaceBytes(v)
	s := strings.ToLower(string(t))
	s = strings.TrimPrefix(s, "status_code_")
	switch s {
	case "ok", "success", "succeeded", "successful", "true", "1", "pass", "passed":
		return span.OK, false, 0, nil, true
	case "", "unset", "0":
		return span.Unset, false, 0, nil, true
	case "error", "err", "fail", "failed", "failure", "false", "2":
		return span.Error, false, 0, nil, true
	}
	if IsTimeoutWord(t) {
		if c, ok := grpcCodeByName(t); ok {
			return span.Error, true, c, nil, true
		}
		return span.Error, true, 0, nil, true
	}
	if n, ok := AtoiBytes(t); ok && n >= 100 && n < 600 {
		st := span.OK
		if n >= 400 {
			st = span.Error
		}
		return st, n == 408 || n == 504, int(n), nil, true
	}
	if c, ok := grpcCodeByName(t); ok {
		if c == 0 {
			return span.OK, false, 0, nil, true
		}
		return span.Error, c == 4, c, nil, true
	}
	if errorText(t) {
		return span.Error, false, 0, CodeTextOf(t), true
	}
	return span.Unset, false, 0, nil, false
}

func IsTimeoutWord(v []byte) bool {
	s := strings.ToLower(string(v))
	switch s {
	case "timeout", "timedout", "timed_out", "timed out", "deadline_exceeded", "deadline exceeded", "deadlineexceeded", "ut", "context deadline exceeded":
		return true
	}
	return strings.Contains(s, "timeout") || strings.Contains(s, "deadline") ||
		strings.Contains(s, "timedout") || strings.Contains(s, "timed out") || strings.Contains(s, "timed_out") ||
		strings.Contains(s, "time out") || strings.Contains(s, "time-out")
}

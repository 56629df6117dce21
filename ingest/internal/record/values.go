package record

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tailscope/tailscope/span"
)

// ShortValue is a value for a message: at most 64 bytes of it.
func ShortValue(v []byte) string {
	if len(v) > 64 {
		return string(CodeTextOf(v[:64])) + "…"
	}
	return string(v)
}

// StartProblem says what is wrong with a start that a span with a
// duration of its own can do without: negative, or too late for its end
// to be a time.
func StartProblem(sp *span.Span) error {
	switch {
	case sp.Start < 0:
		return fmt.Errorf("negative start %d ns", sp.Start)
	case sp.Start > 0 && sp.Duration >= 0 && sp.Start+sp.Duration < sp.Start:
		return fmt.Errorf("start %d ns: the end overflows", sp.Start)
	}
	return nil
}

func NormKind(v []byte) string {
	switch string(v) { // the canonical spellings, without allocating
	case "client":
		return "client"
	case "server":
		return "server"
	case "internal":
		return "internal"
	case "producer":
		return "producer"
	case "consumer":
		return "consumer"
	case "":
		return ""
	}
	s := strings.ToLower(string(v))
	s = strings.TrimPrefix(s, "span_kind_")
	switch s {
	case "1":
		return "internal"
	case "2":
		return "server"
	case "3":
		return "client"
	case "4":
		return "producer"
	case "5":
		return "consumer"
	case "internal", "server", "client", "producer", "consumer":
		return s
	case "", "0", "unspecified":
		return ""
	}
	return s
}

// FiniteNs reports whether x is a number of ns an int64 holds: not NaN
// (every comparison with NaN is false), not infinite, below 9e18 either
// way — two comparisons.
func FiniteNs(x float64) bool { return x < 9e18 && x > -9e18 }

// AtoiBytes parses a plain decimal integer ([-]digits, at most 19 digits,
// overflow checked: unix ns timestamps have 19) without allocating; ok is
// false for anything else, which then takes the strconv path.
func AtoiBytes(v []byte) (int64, bool) {
	neg := len(v) > 0 && v[0] == '-'
	if neg {
		v = v[1:]
	}
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
	if n > math.MaxInt64 { // 19 digits fit in uint64, not always in int64
		return 0, false
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

func ParseBool(v []byte) (bool, error) {
	switch strings.ToLower(string(v)) {
	case "true", "1", "yes":
		return true, nil
	case "false", "0", "no", "":
		return false, nil
	}
	return false, fmt.Errorf("want true or false, got %q", v)
}

// ParseRFC3339 parses an RFC 3339 time, leap seconds included: Go's time
// package refuses a second of 60, which RFC 3339 allows (23:59:60Z, the
// leap second itself). Unix time has no such second, so it reads as the
// second after 23:59:59 — the next day's 00:00:00, fraction kept — as
// POSIX clocks count it.
func ParseRFC3339(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err == nil {
		return t, nil
	}
	// hh:mm:60 in the time part: "T" or " ", then 8 bytes.
	i := strings.IndexAny(s, "Tt ")
	if i < 0 || len(s) < i+9 || s[i+3] != ':' || s[i+6] != ':' || s[i+7:i+9] != "60" || s[i+1:i+3] != "23" || s[i+4:i+6] != "59" {
		return t, err
	}
	t2, err2 := time.Parse(time.RFC3339Nano, s[:i+7]+"59"+s[i+9:])
	if err2 != nil {
		return t, err
	}
	return t2.Add(time.Second), nil
}

package record

import (
	"fmt"
	"math"
	"strings"

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

package flat

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/tailscope/tailscope/ingest/internal/record"
)

// hasDurationColumn reports whether a table's columns give a duration:
// one in any unit, or a start and an end.
func hasDurationColumn(have map[field]bool) bool {
	return have[fDuration] || have[fDurationMs] || have[fDurationUs] || have[fDurationNs] || have[fDurationS] ||
		(have[fEnd] && (have[fStart] || have[fStartMs] || have[fStartUs] || have[fStartS]))
}

// plainInt reports whether v is an integer with no unit.
func plainInt(v []byte) bool {
	_, ok := record.AtoiBytes(v)
	return ok
}

// parseDuration reads a duration into ns. Numbers are in the unit the field
// names; "duration" takes a Go duration string or an integer of ns.
func parseDuration(f field, str bool, v []byte) (int64, error) {
	var name string
	var scale float64
	switch f {
	case fDuration:
		name = "duration"
	case fDurationMs:
		name, scale = "duration_ms", 1e6
	case fDurationUs:
		name, scale = "duration_us", 1e3
	case fDurationS:
		name, scale = "duration_s", 1e9
	default:
		name, scale = "duration_ns", 1
	}
	if f != fDuration {
		// Fast path, no allocation: plain decimals (what loggers write).
		if n, ok := record.AtoiBytes(v); ok {
			x := float64(n) * scale
			if record.FiniteNs(x) {
				if scale == 1 {
					return n, nil
				}
				return int64(math.Round(x)), nil
			}
		} else if x, ok := atofBytes(v); ok {
			if x *= scale; record.FiniteNs(x) {
				return int64(math.Round(x)), nil
			}
		}
	}
	s := string(v)
	if f == fDuration {
		if d, err := time.ParseDuration(s); err == nil {
			return int64(d), nil
		}
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, nil
		}
		return 0, fmt.Errorf("bad %s %q: want a Go duration like 1.5s or integer nanoseconds", name, s)
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		x := float64(n) * scale
		if !record.FiniteNs(x) {
			return 0, fmt.Errorf("bad %s %q: out of range", name, s)
		}
		if scale == 1 {
			return n, nil
		}
		return int64(math.Round(x)), nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("bad %s %q: want a number", name, s)
	}
	x *= scale
	if !record.FiniteNs(x) {
		return 0, fmt.Errorf("bad %s %q: not a finite duration", name, s)
	}
	return int64(math.Round(x)), nil
}

// pow10 are the powers of ten that float64 holds exactly.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// atofBytes parses [-]digits.digits without allocating. It only answers
// when the result is exactly what strconv.ParseFloat gives: the digits
// form an integer below 2^53 and the fraction has at most 22 digits, so
// float64(mantissa)/10^k is one correctly rounded IEEE division (the same
// fast path strconv takes). Anything else returns ok=false.
func atofBytes(v []byte) (float64, bool) {
	neg := len(v) > 0 && v[0] == '-'
	if neg {
		v = v[1:]
	}
	var m uint64
	digits, frac, dot := 0, 0, false
	for _, c := range v {
		switch {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if dot {
				frac++
			}
			if digits > 15 {
				return 0, false
			}
		case c == '.' && !dot:
			dot = true
		default:
			return 0, false
		}
	}
	if digits == 0 || (dot && frac == 0) || frac >= len(pow10) {
		return 0, false
	}
	x := float64(m) / pow10[frac]
	if neg {
		x = -x
	}
	return x, true
}

// parseTime reads a start or end: integer unix ns (or the unit the field
// names), or an RFC 3339 string.
func parseTime(f field, str bool, v []byte) (int64, error) {
	var scale int64 = 1
	switch f {
	case fStartMs:
		scale = 1_000_000
	case fStartUs:
		scale = 1_000
	case fStartS:
		scale = 1_000_000_000
	}
	if n, ok := record.AtoiBytes(v); ok && scale == 1 {
		return n, nil
	}
	s := string(v)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > math.MaxInt64/scale || n < 0 && scale != 1 {
			return 0, fmt.Errorf("bad %s %q: out of range", fieldName(f), s)
		}
		return n * scale, nil
	}
	if x, err := strconv.ParseFloat(s, 64); err == nil {
		x *= float64(scale)
		if !record.FiniteNs(x) {
			return 0, fmt.Errorf("bad time %q: out of range", s)
		}
		return int64(x), nil
	}
	t, err := record.ParseRFC3339(s)
	if err != nil {
		return 0, fmt.Errorf("bad time %q: want unix nanoseconds or RFC 3339", s)
	}
	return t.UnixNano(), nil
}

// setTypedInt sets a start, end or duration that a columnar format (Arrow,
// Parquet) holds as a typed integer, and reports false for any other field.
// Times are scaled to nanoseconds by the column's unit (scale 1 when they
// are nanoseconds already); one that int64 nanoseconds cannot hold, or a
// negative one in a coarser unit, is remembered as the record's bad time
// instead of wrapping into a plausible date. Both columnar readers share
// this so that a file reads the same in either format.
func (r *flatRecord) setTypedInt(f field, n, scale int64) bool {
	switch f {
	case fStart, fEnd:
		if scale != 1 {
			if n > math.MaxInt64/scale || n < 0 {
				if r.badTime == nil {
					r.badTime = fmt.Errorf("time %d out of range", n)
				}
				return true
			}
			n *= scale
		}
		if f == fEnd {
			r.end, r.hasEnd = n, true
		} else {
			r.sp.Start, r.hasStart = n, true
		}
		return true
	case fDuration, fDurationNs:
		r.sp.Duration, r.hasDur, r.durField = n, true, f
		return true
	}
	return false
}

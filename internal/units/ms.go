package units

import (
	"math"
	"time"
)

// Ms is ns nanoseconds in milliseconds: the unit of every JSON field that
// ends in _ms. The one conversion; a figure rounded for the JSON goes
// through Round or MsPtr as well.
func Ms(ns int64) float64 { return float64(ns) / 1e6 }

// MsOf is Ms of a duration held as a float (a mean, a quantile, a sum of
// nanoseconds): the same division, so a figure computed either way is the
// same to the bit.
func MsOf(ns float64) float64 { return ns / 1e6 }

// NsOfMs is ms milliseconds (a JSON figure read back) in nanoseconds, as
// a float: the inverse conversion, for comparing with a duration or
// rounding to one.
func NsOfMs(ms float64) float64 { return ms * 1e6 }

// FromMs is NsOfMs as a duration, truncated to the nanosecond as
// time.Duration does.
func FromMs(ms float64) time.Duration { return time.Duration(NsOfMs(ms)) }

// MsPtr is ns nanoseconds (a float: a mean, a quantile) in milliseconds
// to the microsecond, as an optional JSON figure: nil for NaN or an
// infinity, which JSON cannot hold.
func MsPtr(ns float64) *float64 {
	if math.IsNaN(ns) || math.IsInf(ns, 0) {
		return nil
	}
	v := math.Round(ns/1e3) / 1e3
	return &v
}

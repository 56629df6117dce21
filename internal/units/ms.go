package units

import "math"

// Ms is ns nanoseconds in milliseconds: the unit of every JSON field that
// ends in _ms. The one conversion; a figure rounded for the JSON goes
// through Round or MsPtr as well.
func Ms(ns int64) float64 { return float64(ns) / 1e6 }

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

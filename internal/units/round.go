package units

import "math"

// Round is x rounded half away from zero to places decimals: how the
// JSON report's figures are written (shares to 4 or 6 places, milliseconds
// to 3: microseconds), so that they are stable from run to run and
// readable, without trailing binary noise.
func Round(x float64, places int) float64 {
	p := math.Pow10(places)
	return math.Round(x*p) / p
}

// RoundPtr is Round as an optional JSON figure: nil for NaN (no value),
// which JSON cannot hold.
func RoundPtr(x float64, places int) *float64 {
	if math.IsNaN(x) {
		return nil
	}
	v := Round(x, places)
	return &v
}

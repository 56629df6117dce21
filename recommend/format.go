package recommend

import "math"

// Number helpers of the recommendation's JSON figures, as the analysis
// rounds its own.

func ms(ns int64) float64 { return float64(ns) / 1e6 }

func fptr(x float64) *float64 {
	if math.IsNaN(x) {
		return nil
	}
	v := math.Round(x*1000) / 1000 // µs precision: stable, readable JSON
	return &v
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// minReqsPerWorker is the fewest requests worth a goroutine of their own
// in a walk over the requests' trees (as in analyze's critical paths).
const minReqsPerWorker = 128

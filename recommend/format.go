package recommend

// ms is a duration in ns as the JSON report's milliseconds.
func ms(ns int64) float64 { return float64(ns) / 1e6 }

// minReqsPerWorker is the fewest requests worth a goroutine of their own
// in a walk over the requests' trees (as in analyze's critical paths).
const minReqsPerWorker = 128

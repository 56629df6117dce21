//go:build !amd64

package analyze

import "math"

// logSum is math.Log(x): on amd64, math.Log's assembly steps written out
// (logsum_amd64.go); here math.Log itself, whose Go code the compiler may
// fuse differently.
func logSum(x float64) float64 { return math.Log(x) }

// log10 is math.Log10(x).
func log10(x float64) float64 { return math.Log10(x) }

//go:build !amd64

package fastlog

import "math"

// Log is math.Log(x): on amd64, math.Log's assembly steps written out
// (fastlog_amd64.go); here math.Log itself, whose Go code the compiler may
// fuse differently.
func Log(x float64) float64 { return math.Log(x) }

// Log10 is math.Log10(x).
func Log10(x float64) float64 { return math.Log10(x) }

package quantile

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// State is a Digest's content in plain fields, for writing it down (a
// partial summary) and reading it back on another machine: the values
// themselves in exact form, the bins in sketch form. A Digest rebuilt
// from its State merges and answers exactly as the original.
type State struct {
	// Sketch is false in exact form: Values holds every value, ascending.
	Sketch bool
	N      int
	Min    int64
	Max    int64
	Values []int64
	// Zero counts the values below 1 ns; Bins[i] counts bin Lo+i (see
	// SketchAlpha). Sketch form only.
	Zero int
	Lo   int
	Bins []uint64
}

// State returns d's content. The slices alias d's: the caller must not
// change them, nor d while it uses them.
func (d *Digest) State() State {
	if !d.sketch {
		return State{N: d.n, Min: d.min, Max: d.max, Values: d.Sorted()}
	}
	return State{Sketch: true, N: d.n, Min: d.min, Max: d.max, Zero: d.zero, Lo: d.lo, Bins: d.bins}
}

// MaxBin is the largest bin index a value up to math.MaxInt64 falls in.
var MaxBin = binOfLog(math.MaxInt64)

// FromState rebuilds a Digest from s, checking that s is one a Digest can
// have been: counts that add up, values in order and within [Min, Max],
// bins in range. It takes ownership of s's slices.
func FromState(s State) (Digest, error) {
	if s.N < 0 || s.Min < 0 || s.Max < s.Min || s.N == 0 && (s.Min != 0 || s.Max != 0) {
		return Digest{}, fmt.Errorf("bad count %d or range [%d, %d]", s.N, s.Min, s.Max)
	}
	if !s.Sketch {
		if len(s.Values) != s.N {
			return Digest{}, fmt.Errorf("%d values for a count of %d", len(s.Values), s.N)
		}
		if s.N > ExactLimit {
			return Digest{}, fmt.Errorf("%d exact values, over the exact limit %d", s.N, ExactLimit)
		}
		if !slices.IsSorted(s.Values) {
			return Digest{}, errors.New("exact values out of order")
		}
		if s.N > 0 && (s.Values[0] != s.Min || s.Values[s.N-1] != s.Max) {
			return Digest{}, fmt.Errorf("values span [%d, %d], not the stated [%d, %d]", s.Values[0], s.Values[s.N-1], s.Min, s.Max)
		}
		return Digest{exact: s.Values, sorted: true, n: s.N, min: s.Min, max: s.Max}, nil
	}
	if s.Zero < 0 || s.Lo < 0 || len(s.Bins) > MaxBin+1 || s.Lo > MaxBin+1-len(s.Bins) {
		return Digest{}, fmt.Errorf("bins %d..%d out of range", s.Lo, s.Lo+len(s.Bins)-1)
	}
	left := uint64(s.N)
	if uint64(s.Zero) > left {
		return Digest{}, fmt.Errorf("%d zero values for a count of %d", s.Zero, s.N)
	}
	left -= uint64(s.Zero)
	for _, c := range s.Bins {
		if c > left {
			return Digest{}, fmt.Errorf("bins hold more than the count of %d", s.N)
		}
		left -= c
	}
	if left != 0 {
		return Digest{}, fmt.Errorf("bins hold %d values fewer than the count of %d", left, s.N)
	}
	if s.Zero > 0 && s.Min > 0 || s.N > s.Zero && s.Max < 1 {
		return Digest{}, fmt.Errorf("range [%d, %d] does not hold the bins' values", s.Min, s.Max)
	}
	return Digest{sketch: true, n: s.N, min: s.Min, max: s.Max, zero: s.Zero, lo: s.Lo, bins: s.Bins}, nil
}

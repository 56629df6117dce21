package quantile

// Bin is the sketch bin of a duration x ≥ 1 ns: the i with x in
// (γ^(i−1), γ^i], γ = (1+SketchAlpha)/(1−SketchAlpha). Bins are the
// sketch's unit of resolution: a histogram kept on them (attribution's, in
// package analyze) counts values on the same boundaries as a Digest.
func Bin(x int64) int { return binOf(x) }

// AtOrAboveBin counts the values of d ≥ 1 whose bin is b or above, in
// either form (a value of 0 has no bin and is not counted).
func (d *Digest) AtOrAboveBin(b int) int {
	if d.n == 0 {
		return 0
	}
	if !d.sketch {
		n := 0
		for _, v := range d.exact {
			if v >= 1 && binOf(v) >= b {
				n++
			}
		}
		return n
	}
	n := 0
	for i, c := range d.bins {
		if d.lo+i >= b {
			n += int(c)
		}
	}
	return n
}

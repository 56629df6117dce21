package analyze

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The table-driven bin is the logarithm's bin: on every integer up to a
// million, on both sides of every bin boundary, and on random values
// spread evenly in log space up to binFastMax (the sketch must not change
// with the speed-up: reports stay byte for byte what they were).
func TestBinOfFast(t *testing.T) {
	check := func(x int64) {
		if x < 1 || x > binFastMax {
			return
		}
		if got, want := binOfFast(x), binOfLog(x); got != want {
			t.Fatalf("binOfFast(%d) = %d, binOfLog %d", x, got, want)
		}
	}
	for x := int64(1); x <= 1_000_000; x++ {
		check(x)
	}
	binOnce.Do(initBins)
	for _, b := range binLo {
		check(b - 1)
		check(b)
		check(b + 1)
	}
	r := rand.New(rand.NewPCG(41, 42))
	for range 2_000_000 {
		check(int64(math.Exp(r.Float64() * math.Log(binFastMax))))
	}
	check(binFastMax)
	if binOf(binFastMax+1) != binOfLog(binFastMax+1) || binOf(math.MaxInt64) != binOfLog(math.MaxInt64) {
		t.Error("binOf beyond the table")
	}
}

package flat

import (
	"math"
	"strconv"
	"testing"
)

// TestTextArenaInt: an integer attribute's text written in the batch's
// text is strconv's (attrValue's), and every string cut before a reset
// stays as it was while later ones fill new blocks.
func TestTextArenaInt(t *testing.T) {
	cases := []int64{0, 1, -1, 9, 10, 99, 100, -100, 1_767_225_600_000_000_017, math.MaxInt64, math.MinInt64,
		math.MaxInt32, math.MinInt32, 1 << 53, -(1 << 53) - 1, 999_999_999, 1_000_000_000, 1_000_000_001, 1_999_999_999,
		2_000_000_000, 1_767_225_600_000_000_000, 1_767_225_600_000_000_005, 1_767_225_600_090_000_005, 1_767_225_601_000_000_000,
		1_767_225_600_999_999_999, math.MaxInt64 - 1e9}
	var a textArena
	for round := range 3 {
		a.reset()
		var got []string
		var want []string
		// Enough values to fill several 32 KB blocks, the cases among them.
		for i := range 6000 {
			n := cases[i%len(cases)] - int64(i*round)
			got = append(got, a.int(n))
			want = append(want, strconv.FormatInt(n, 10))
			if i%7 == 0 {
				got = append(got, a.ascii([]byte("x")))
				want = append(want, "x")
			}
		}
		// Rising nanosecond times, a step of a few µs: the digits above
		// the last nine change every so often.
		for i := range 3000 {
			n := int64(1_767_225_600_000_000_000) + int64(i)*333_337*int64(round+1)
			got = append(got, a.int(n))
			want = append(want, strconv.FormatInt(n, 10))
		}
		if len(a.blocks) < 2 {
			t.Fatalf("round %d: %d blocks, want the values to span several", round, len(a.blocks))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("round %d, value %d: %q, want %q", round, i, got[i], want[i])
			}
		}
	}
}

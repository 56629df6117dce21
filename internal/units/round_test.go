package units

import (
	"math"
	"testing"
)

func TestRound(t *testing.T) {
	for _, c := range []struct {
		x      float64
		places int
		want   float64
	}{
		{0.123456789, 4, 0.1235}, {0.123456789, 6, 0.123457}, {1.0005, 3, 1.001},
		{-0.00005, 4, -0.0001}, {2.5, 0, 3}, {1234.5678, 3, 1234.568}, {0, 4, 0},
	} {
		if got := Round(c.x, c.places); got != c.want {
			t.Errorf("Round(%v, %d) = %v, want %v", c.x, c.places, got, c.want)
		}
	}
	if RoundPtr(math.NaN(), 3) != nil {
		t.Error("RoundPtr(NaN) is not nil")
	}
	if p := RoundPtr(1.23456, 3); p == nil || *p != 1.235 {
		t.Errorf("RoundPtr(1.23456, 3) = %v", p)
	}
}

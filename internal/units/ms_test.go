package units

import (
	"math"
	"testing"
)

func TestMs(t *testing.T) {
	for _, c := range []struct {
		ns   int64
		want float64
	}{{0, 0}, {1, 1e-6}, {1_500_000, 1.5}, {-2_000_000, -2}, {12_345_678_901, 12345.678901}} {
		if got := Ms(c.ns); got != c.want {
			t.Errorf("Ms(%d) = %v, want %v", c.ns, got, c.want)
		}
	}
	for _, c := range []struct {
		ns   float64
		want *float64
	}{{math.NaN(), nil}, {math.Inf(1), nil}, {math.Inf(-1), nil}} {
		if got := MsPtr(c.ns); got != nil {
			t.Errorf("MsPtr(%v) = %v, want nil", c.ns, *got)
		}
	}
	for _, c := range []struct{ ns, want float64 }{{1_234_567.8, 1.235}, {1_234_499, 1.234}, {0, 0}, {999.4, 0.001}} {
		if got := MsPtr(c.ns); got == nil || *got != c.want {
			t.Errorf("MsPtr(%v) = %v, want %v", c.ns, got, c.want)
		}
	}
}

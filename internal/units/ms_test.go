package units

import (
	"math"
	"testing"
	"time"
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

// TestMsConversions: MsOf divides a float as Ms divides an integer (the
// same bits for the same value), and NsOfMs/FromMs invert them, FromMs
// truncating to the nanosecond as time.Duration does.
func TestMsConversions(t *testing.T) {
	for _, ns := range []int64{0, 1, 999, 1_500_000, 12_345_678_901, -2_000_000} {
		if a, b := Ms(ns), MsOf(float64(ns)); a != b {
			t.Errorf("Ms(%d) = %v but MsOf = %v", ns, a, b)
		}
	}
	for _, c := range []struct {
		ms   float64
		ns   float64
		want time.Duration
	}{{0, 0, 0}, {1.5, 1.5e6, 1_500_000}, {0.0000015, 1.5, 1}, {-2, -2e6, -2_000_000}, {250.25, 250.25e6, 250_250_000}} {
		if got := NsOfMs(c.ms); got != c.ns {
			t.Errorf("NsOfMs(%v) = %v, want %v", c.ms, got, c.ns)
		}
		if got := FromMs(c.ms); got != c.want {
			t.Errorf("FromMs(%v) = %v, want %v", c.ms, got, c.want)
		}
	}
}

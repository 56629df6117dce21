package units

import (
	"math"
	"testing"
)

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		x        float64
		decimals int
		want     string
	}{
		{0, 1, "0%"}, {1, 1, "100%"}, {0.5, 1, "50%"}, {0.125, 1, "12.5%"},
		{0.12, 1, "12%"}, {0.1004, 1, "10%"}, {0.10051, 1, "10.1%"},
		{0.0004, 1, "0%"}, {2.5, 1, "250%"}, {-0.05, 1, "-5%"}, {-0.0001, 1, "-0%"},
		{0.1234, 2, "12.3%"}, {0.1230, 2, "12.3%"}, {0.00004, 2, "0%"},
		{0.001, 3, "0.1%"}, {0.00025, 3, "0.025%"}, {0.050851, 3, "5.09%"}, {0.34669, 3, "34.7%"}, {0.0033333, 3, "0.333%"}, {0.9996, 1, "100%"}, {0.99949, 3, "99.9%"},
		{0.0000004, 3, "0%"}, {0.99999, 3, "99.999%"}, {0.999999, 3, "100%"}, {0.9999996, 3, "100%"},
		{0.0508, 3, "5.08%"}, {0.42, 0, "42%"},
		{math.NaN(), 1, "NaN%"}, {math.Inf(1), 2, "+Inf%"}, {math.Inf(-1), 3, "-Inf%"},
	} {
		if got := Percent(c.x, c.decimals); got != c.want {
			t.Errorf("Percent(%v, %d) = %q, want %q", c.x, c.decimals, got, c.want)
		}
	}
}

func TestPercentUp(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{0, "0.1%"}, {-0.5, "0.1%"}, {0.00001, "0.1%"}, {0.001, "0.1%"},
		{0.0011, "0.2%"}, {0.003, "0.3%"}, {0.0031, "0.4%"}, {0.01, "1%"},
		{0.1, "10%"}, {0.12345, "12.4%"}, {1, "100%"},
		{math.NaN(), "NaN%"}, {math.Inf(1), "+Inf%"},
	} {
		if got := PercentUp(c.x); got != c.want {
			t.Errorf("PercentUp(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}

// TestPercentWhole holds the two whole-percent roundings side by side:
// they differ only at an exact half.
func TestPercentWhole(t *testing.T) {
	for _, c := range []struct {
		x          float64
		away, even string
	}{
		{0, "0%", "0%"}, {1, "100%", "100%"}, {0.42, "42%", "42%"},
		{0.125, "13%", "12%"}, // 12.5: the two rules part
		{0.375, "38%", "38%"}, // 37.5: both go to the even 38
		{0.005, "1%", "0%"},   // 0.5
		{0.0049, "0%", "0%"}, {0.994, "99%", "99%"}, {0.996, "100%", "100%"},
		{-0.125, "-13%", "-12%"}, {-0.001, "-0%", "-0%"},
		{math.NaN(), "NaN%", "NaN%"}, {math.Inf(1), "+Inf%", "+Inf%"},
	} {
		if got := PercentWhole(c.x); got != c.away {
			t.Errorf("PercentWhole(%v) = %q, want %q", c.x, got, c.away)
		}
		if got := PercentWholeEven(c.x); got != c.even {
			t.Errorf("PercentWholeEven(%v) = %q, want %q", c.x, got, c.even)
		}
	}
}

// TestPercentileNames holds the two percentile names side by side: they
// part only where three decimals round a percentile below 100 up to 100.
func TestPercentileNames(t *testing.T) {
	for _, c := range []struct {
		p              float64
		exact, rounded string
	}{
		{0, "p0", "p0"}, {50, "p50", "p50"}, {99, "p99", "p99"}, {99.9, "p99.9", "p99.9"},
		{99.98, "p99.98", "p99.98"}, {99.991, "p99.991", "p99.991"},
		{99.9912, "p99.991", "p99.991"}, {99.9915, "p99.992", "p99.992"},
		{99.9996, "p99.9996", "p100"}, {99.99999, "p99.99999", "p100"},
		{99.9999999999, "p100", "p100"}, // nine decimals at most
		{100, "p100", "p100"}, {100.0004, "p100", "p100"},
		{99.9908, "p99.991", "p99.991"}, {99.9655, "p99.966", "p99.966"},
		{99.99996, "p99.99996", "p100"},
		{-1, "p-1", "p-1"},
	} {
		if got := Percentile(c.p); got != c.exact {
			t.Errorf("Percentile(%v) = %q, want %q", c.p, got, c.exact)
		}
		if got := PercentileRounded(c.p); got != c.rounded {
			t.Errorf("PercentileRounded(%v) = %q, want %q", c.p, got, c.rounded)
		}
	}
}

func TestDecimal(t *testing.T) {
	for _, c := range []struct {
		x        float64
		decimals int
		want     string
	}{
		{0, 1, "0"}, {3, 1, "3"}, {2.5, 2, "2.5"}, {2.55, 1, "2.5"}, {2.56, 1, "2.6"},
		{1.05, 1, "1.1"}, {100, 1, "100"}, {99.96, 1, "100"}, {-0.04, 1, "-0"},
		{1234.5678, 3, "1234.568"}, {7, 0, "7"},
		{math.NaN(), 1, "NaN"}, {math.Inf(-1), 1, "-Inf"},
	} {
		if got := Decimal(c.x, c.decimals); got != c.want {
			t.Errorf("Decimal(%v, %d) = %q, want %q", c.x, c.decimals, got, c.want)
		}
	}
}

func TestTrimZeros(t *testing.T) {
	for in, want := range map[string]string{
		"1.500": "1.5", "2.000": "2", "100": "100", "10.0": "10", "0.0": "0",
		"NaN": "NaN", "+Inf": "+Inf", "": "", "1.05": "1.05",
	} {
		if got := trimZeros(in); got != want {
			t.Errorf("trimZeros(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSignificant(t *testing.T) {
	for _, c := range []struct {
		x      float64
		digits int
		want   string
	}{
		{0, 3, "0"}, {1, 3, "1"}, {0.5, 3, "0.5"}, {1.25, 3, "1.25"}, {1.255, 3, "1.25"},
		{1.2555, 3, "1.26"}, {1200, 3, "1.2e+03"}, {999, 3, "999"}, {999.6, 3, "1e+03"},
		{0.000123456, 3, "0.000123"}, {0.0000123, 3, "1.23e-05"}, {1e6, 3, "1e+06"},
		{-2.5, 3, "-2.5"}, {2.5e10, 3, "2.5e+1"}, // the slip the doc names
		{math.NaN(), 3, "NaN"}, {math.Inf(1), 3, "+Inf"},
	} {
		if got := Significant(c.x, c.digits); got != c.want {
			t.Errorf("Significant(%v, %d) = %q, want %q", c.x, c.digits, got, c.want)
		}
	}
}

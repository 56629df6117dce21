package units

import "testing"

func TestColumnCells(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name string
		col  []*float64
		want []string
	}{
		// A millisecond-scale column: what used to read "<0.01s" and
		// "0.01s" for both 5.73 ms and 9.11 ms.
		{"ms scale", []*float64{f(5.73), f(9.11), f(0.4), f(57.31), f(573.1), f(1101)}, []string{"5.73ms", "9.11ms", "0.400ms", "57.3ms", "573ms", "1100ms"}},
		// Every value a second or more: seconds, three significant digits.
		{"seconds", []*float64{f(1000), f(10570), f(123456), f(9_996)}, []string{"1.00s", "10.6s", "123s", "10.0s"}},
		// Past 100 s whole seconds, three digits and then more.
		{"long seconds", []*float64{f(99_940), f(99_999), f(100_000), f(999_949), f(1_000_000), f(7_200_000)}, []string{"99.9s", "100s", "100s", "1000s", "1000s", "7200s"}},
		// Every value below a millisecond: microseconds.
		{"µs scale", []*float64{f(0.0523), f(0.5), f(0.0051)}, []string{"52.3µs", "500µs", "5.10µs"}},
		// Rounding up past a power of ten keeps three digits.
		{"round up", []*float64{f(9.996), f(99.96), f(0.9996)}, []string{"10.0ms", "100ms", "1.00ms"}},
		// Too small for the column's unit, zero, nothing.
		{"tiny", []*float64{f(0.0001), f(0), nil, f(12)}, []string{"<0.001ms", "0ms", "–", "12.0ms"}},
		// From half a thousandth up to a thousandth of the unit, the guard
		// against rounding past a power of ten takes a decimal away and
		// the cell reads "0.00ms" (kept as printed; see sigDigits).
		{"threshold", []*float64{f(0.0005), f(0.0009), f(0.00049), f(0.001), f(3)}, []string{"0.00ms", "0.00ms", "<0.001ms", "0.001ms", "3.00ms"}},
		// A negative value (a change) in the unit its magnitude reads in.
		{"negative", []*float64{f(-5.73), f(12)}, []string{"-5.73ms", "12.0ms"}},
		// A column of nothing, or zeros, is in ms.
		{"empty", []*float64{nil, f(0)}, []string{"–", "0ms"}},
		// A column that reaches a second with nothing below 100ms: seconds.
		{"mixed", []*float64{f(999), f(1000), f(1500), f(120)}, []string{"0.999s", "1.00s", "1.50s", "0.120s"}},
		// One below 100ms keeps the column in ms.
		{"mixed ms", []*float64{f(99), f(1000), f(1458)}, []string{"99.0ms", "1000ms", "1460ms"}},
	} {
		u := ColumnFor(c.col...)
		for i, v := range c.col {
			if got := u.Cell(v); got != c.want[i] {
				t.Errorf("%s: cell %d = %q, want %q", c.name, i, got, c.want[i])
			}
			if v != nil {
				if got := u.Text(*v); got != c.want[i] {
					t.Errorf("%s: Text %d = %q, want %q", c.name, i, got, c.want[i])
				}
			}
		}
	}
}

func TestSigDigits(t *testing.T) {
	for _, c := range []struct {
		x    float64
		n    int
		want string
	}{
		{5.73, 3, "5.73"}, {57.31, 3, "57.3"}, {573.1, 3, "573"}, {1101, 3, "1100"}, {1458, 3, "1460"}, {999.6, 3, "1000"},
		{0.4, 3, "0.400"}, {0.0123, 3, "0.012"}, // at most three decimals
		{9.996, 3, "10.0"}, {99.96, 3, "100"}, {0.9996, 3, "1.00"},
		{1, 1, "1"}, {1.5, 2, "1.5"},
	} {
		if got := sigDigits(c.x, c.n); got != c.want {
			t.Errorf("sigDigits(%v, %d) = %q, want %q", c.x, c.n, got, c.want)
		}
	}
}

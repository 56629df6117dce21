package units

import (
	"fmt"
	"math"
	"strconv"
)

// Column is the one unit of a table column of times in ms, so that a
// column reads without mental conversion: seconds when every value is a
// second or more, or when the column reaches a second and no value is
// below 100ms; microseconds when every value is below a millisecond;
// else milliseconds. Each cell shows three significant digits in that
// unit ("5.73ms", "57.3ms", "573ms", "1100ms"; "52.3µs"; "1.42s", "10.6s",
// "124s"): a column of a
// millisecond-scale system must not read "<0.01s" and print 5.73 ms and
// 9.11 ms alike. Unlike Duration, a cell keeps its trailing zeros
// ("12.0ms", "1.00s"), so that the digits line up and say how precise
// they are.
type Column struct {
	div  float64
	name string
}

// ColumnFor is the unit of a column holding vals (nil and values ≤ 0
// do not choose it; a column of nothing else is in ms).
func ColumnFor(vals ...*float64) Column {
	lo, hi := math.Inf(1), 0.0
	for _, v := range vals {
		if v != nil && *v > 0 {
			lo, hi = min(lo, *v), max(hi, *v)
		}
	}
	switch {
	case hi == 0:
		return Column{1, "ms"}
	case lo >= 1000, hi >= 1000 && lo >= 100:
		// Seconds when the column reaches a second and nothing in it is
		// below a tenth of one: 0.800s beside 12.0s, not 800ms beside
		// 12000ms.
		return Column{1000, "s"}
	case hi < 1:
		return Column{0.001, "µs"}
	}
	return Column{1, "ms"}
}

// Cell is the cell of the value v in ms: "–" when there is none.
func (c Column) Cell(v *float64) string {
	if v == nil {
		return "–"
	}
	return c.Text(*v)
}

// maxDecimals bounds a cell's decimals: below a thousandth of the
// column's unit the cell says so ("<0.001ms") rather than print digits
// no one compares.
const maxDecimals = 3

// Text is the cell of the value v in ms, in the column's unit: "0ms" for
// zero, "<0.001ms" below a thousandth of the unit, "-" before a negative
// value's cell.
func (c Column) Text(v float64) string {
	x := v / c.div
	switch {
	case x < 0:
		return "-" + c.Text(-v)
	case x == 0:
		return "0" + c.name
	case x < 0.5*math.Pow(10, -maxDecimals):
		return fmt.Sprintf("<%.*f%s", maxDecimals, math.Pow(10, -maxDecimals), c.name)
	}
	if c.name == "s" {
		// Seconds keep three significant digits with their trailing
		// zeros ("1.00s", "10.6s", "124s"), as sentences keep three.
		d := 0
		switch {
		case x < 0.9995:
			d = 3
		case x < 9.995:
			d = 2
		case x < 99.95:
			d = 1
		}
		return strconv.FormatFloat(x, 'f', d, 64) + c.name
	}
	return sigDigits(x, 3) + c.name
}

// sigDigits prints x (> 0) with n significant digits, or as an integer
// when it has more digits than that before the point (1100, not 1.1e3),
// with at most maxDecimals decimals. When the rounding carries x past a
// power of ten (9.996 → "10.00") it keeps one decimal fewer ("10.0"); at
// the decimals' cap this leaves a value from half a thousandth up to a
// thousandth as "0.00" (0.0006 → "0.001" → "0.00"), which the tables
// print as such.
func sigDigits(x float64, n int) string {
	if e := int(math.Floor(math.Log10(x))); e >= n {
		// An integer part longer than n digits keeps n of them: 1458 reads
		// "1460", three significant digits, as a sentence's 1.46s.
		p := math.Pow(10, float64(e-n+1))
		return strconv.FormatFloat(math.Round(x/p)*p, 'f', 0, 64)
	}
	d := min(max(n-1-int(math.Floor(math.Log10(x))), 0), maxDecimals)
	s := strconv.FormatFloat(x, 'f', d, 64)
	// 9.996 at two decimals rounds up to 10.00: one digit too many.
	if y, err := strconv.ParseFloat(s, 64); err == nil && d > 0 && math.Floor(math.Log10(y)) > math.Floor(math.Log10(x)) {
		s = strconv.FormatFloat(x, 'f', d-1, 64)
	}
	return s
}

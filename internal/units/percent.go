package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Percent writes the share x (1 is 100%) as a percentage with at most
// decimals decimals and at most three significant digits, rounded to
// nearest, and trailing zeros and a bare point dropped: Percent(0.125, 1)
// is "12.5%", Percent(0.12, 1) "12%", Percent(0.00025, 3) "0.025%",
// Percent(0.34669, 3) "34.7%"; a share below 100% that three digits would
// read as 100% keeps its decimals (Percent(0.99999, 3) "99.999%"). Callers pick the decimals by what the
// number must tell apart: one for rates a person compares at a glance
// (check's findings and gates, the report's tables), two for a change
// between windows and replay shares, three for shares near a small target
// (a 0.1% false-timeout target must not read "0%"). It computes 100*x,
// as every caller did, so that the rounding of a boundary is unchanged.
// NaN prints "NaN%", infinities "+Inf%" and "-Inf%".
func Percent(x float64, decimals int) string {
	v := 100 * x
	d := decimals
	if a := math.Abs(v); a > 0 && !math.IsInf(a, 0) {
		d = min(d, max(0, 2-int(math.Floor(math.Log10(a)))))
	}
	s := trimZeros(strconv.FormatFloat(v, 'f', d, 64))
	if d < decimals && (s == "100" || s == "-100") && math.Abs(v) < 100 {
		// Three digits would read a share just below 100% as 100%: it
		// keeps the decimals that tell it apart.
		s = trimZeros(strconv.FormatFloat(v, 'f', decimals, 64))
	}
	return s + "%"
}

// PercentUp writes a relative deviation (1 is 100%) rounded up to a tenth
// of a percent, and at least "0.1%": a tolerance stated in a sentence
// ("within 0.3% of k×timeout") must cover what it describes, and a
// deviation that rounds to zero is still a deviation. A tiny epsilon keeps
// a value a float's rounding error above an exact tenth (0.003) from
// reading as the next tenth.
func PercentUp(x float64) string {
	v := math.Ceil(x*1000-1e-9) / 10
	if v < 0.1 {
		v = 0.1
	}
	return trimZeros(strconv.FormatFloat(v, 'f', 1, 64)) + "%"
}

// PercentOf writes n of whole as a percentage with exactly decimals
// decimals, trailing zeros kept ("9.0%"), computed as 100·n/whole: for a
// count beside others in a fixed layout, where Percent's shortest form
// would jump in width.
func PercentOf(n, whole, decimals int) string {
	return strconv.FormatFloat(100*float64(n)/float64(whole), 'f', decimals, 64) + "%"
}

// PercentWhole writes the share x as a whole percentage, rounded half
// away from zero (math.Round): 0.125 is "13%". The emitted configs'
// comments use it.
func PercentWhole(x float64) string {
	return strconv.FormatFloat(math.Round(x*100), 'f', -1, 64) + "%"
}

// PercentWholeEven writes the share x as a whole percentage rounded as
// printf's %.0f rounds, half to even: 0.125 is "12%", 0.375 "38%". The
// analysis's sentences use it; a share exactly halfway between two whole
// percentages (a count of 1 in 8) is the only one where it and
// PercentWhole disagree.
func PercentWholeEven(x float64) string {
	return strconv.FormatFloat(100*x, 'f', 0, 64) + "%"
}

// Percentile names the percentile p (0–100) as "p50", "p99", "p99.991":
// three decimals at most, trailing zeros dropped, and more decimals (up
// to nine) only where three would round a percentile below 100 up to
// "p100" — a timeout chosen at p99.99995 is not a timeout at the maximum.
// The recommendation's summary lines use it.
func Percentile(p float64) string {
	for prec := 3; ; prec++ {
		s := trimZeros(strconv.FormatFloat(p, 'f', prec, 64))
		if p >= 100 || s != "100" || prec >= 9 {
			return "p" + s
		}
	}
}

// PercentileRounded names the percentile p as "p99", "p99.98": three
// decimals at most, trailing zeros dropped, so p99.9996 reads "p100". The
// recommendation's basis and the hedge notes use it, and their wording is
// fixed by it.
func PercentileRounded(p float64) string {
	return "p" + trimZeros(strconv.FormatFloat(p, 'f', 3, 64))
}

// Decimal writes x with at most decimals decimals, rounded to nearest,
// trailing zeros and a bare point dropped: Decimal(2.50, 2) is "2.5",
// Decimal(3, 1) "3". For a plain number in a sentence (a lift, "2.5×"; a
// span of hours).
func Decimal(x float64, decimals int) string {
	return trimZeros(strconv.FormatFloat(x, 'f', decimals, 64))
}

// Significant writes x with at most digits significant digits, as
// printf's %g writes it ("0.5", "1.25", "999"; "1.2e+03" once the
// integer part has more than digits digits): a number whose size is
// unknown (a sampling weight). It
// then drops trailing zeros after a point as Decimal does, which %g
// never leaves in a fraction but does in an exponent ending in 0: 2.5e10
// reads "2.5e+1", a slip kept for now because the output it is in is
// held byte for byte; the weights tailscope reads stay far below it.
func Significant(x float64, digits int) string {
	return trimZeros(fmt.Sprintf("%.*g", digits, x))
}

// trimZeros drops the trailing zeros after a decimal point, and then the
// point ("1.500" → "1.5", "2.000" → "2"); a number without a point
// ("100", "NaN", "+Inf") is left whole.
func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

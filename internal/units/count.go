package units

import (
	"fmt"
	"strconv"
)

// Integer is the counts Count and Plural take: the analysis counts in int,
// the read statistics in int64.
type Integer interface {
	~int | ~int64
}

// Count is a count with its noun in the right number: "1 request",
// "0 requests", "3 requests". Only exactly one is singular (English
// writes "0 requests" and "-1 requests" alike).
func Count[N Integer](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(int64(n), 10) + " " + many
}

// Plural is the noun alone in the number n asks for ("request" for 1,
// "requests" otherwise), for sentences that write the count apart from
// its noun or spell it out ("all 3 attempts failed", "its one attempt").
func Plural[N Integer](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Ordinal writes n as an English ordinal: "1st", "2nd", "3rd", "4th", and
// "11th", "12th", "13th" (the teens take "th"), "21st", "111th". A
// negative n takes "th" ("-1th"): no caller counts below one.
func Ordinal(n int) string {
	suf := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suf = "st"
		case 2:
			suf = "nd"
		case 3:
			suf = "rd"
		}
	}
	return fmt.Sprintf("%d%s", n, suf)
}

// CountShort writes a large count in four characters or so, with one
// decimal and a k, M or G suffix from a thousand up ("950", "1.5k",
// "12.3M", "4.0G"): a progress line that rewrites itself many times a
// second must not change width with every span. Below a thousand it
// rounds to a whole number.
func CountShort(x float64) string {
	switch {
	case x >= 1e9:
		return fmt.Sprintf("%.1fG", x/1e9)
	case x >= 1e6:
		return fmt.Sprintf("%.1fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// Bytes writes a size in decimal units, as file managers show sizes:
// "999 B", "1.5 kB", "12.0 MB", up to TB ("1500.0 TB" beyond). Bytes are
// whole; every larger unit has one decimal.
func Bytes(n int64) string {
	f := float64(n)
	for _, u := range []string{"B", "kB", "MB", "GB", "TB"} {
		if f < 1000 || u == "TB" {
			if u == "B" {
				return fmt.Sprintf("%d B", n)
			}
			return fmt.Sprintf("%.1f %s", f, u)
		}
		f /= 1000
	}
	return ""
}

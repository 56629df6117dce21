package units

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Duration writes a duration for people, in the unit it reads in, with
// at most three significant digits (the one rule for numbers):
// ms below a second and seconds from there, to the hundredth of a second
// below 10s ("812ms", "1.42s", "9.23s", "12s"), to the tenth below 100s
// ("10.6s", "99.9s"), whole seconds beyond ("124s", "7200s": no minutes,
// so that values side by side compare without conversion); below a
// millisecond in µs, below a microsecond in ns. Milliseconds keep three
// significant digits ("59.5ms", "5.73ms"). A value that would round up to 1000 of its unit
// prints in the next unit ("1ms", not "1000µs"), so the unit printed is
// always the one the value reads in. Zero is "0s"; a negative duration
// is its magnitude after an ASCII "-" (math.MinInt64 reads as its
// neighbour, which has a magnitude).
func Duration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + Duration(-max(d, -math.MaxInt64))
	case d == 0:
		return "0s"
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", int64(d))
	case d < 999_500*time.Nanosecond:
		return fmt.Sprintf("%.0fµs", float64(d)/1e3)
	case d < 999_500*time.Microsecond:
		return trimZeros(fmt.Sprintf("%.3g", float64(d)/1e6)) + "ms"
	case d < 9_995*time.Millisecond:
		return trimZeros(fmt.Sprintf("%.2f", float64(d)/1e9)) + "s"
	case d < 99_950*time.Millisecond:
		return trimZeros(fmt.Sprintf("%.1f", float64(d)/1e9)) + "s"
	}
	return fmt.Sprintf("%.0fs", float64(d)/1e9)
}

// Millis is Duration of a time in milliseconds, the unit of the reports'
// numbers (a fraction of a ms is kept to the ns). A NaN or infinite ms
// has no duration: it converts as Go converts such a float to an integer,
// which depends on the machine; callers print their own word for a value
// they do not have.
func Millis(ms float64) string { return Duration(time.Duration(ms * 1e6)) }

// PlusMillis is a change in time in milliseconds with its sign always
// written, as Duration writes it ("+590ms", "+0s", "-12ms"): a column of
// changes reads as changes even where nothing moved. A change less than
// a nanosecond below zero prints "0s", unsigned.
func PlusMillis(ms float64) string {
	if ms < 0 {
		return Millis(ms)
	}
	return "+" + Millis(ms)
}

// MinusDuration is Duration with a typographic minus (U+2212) before a
// negative value ("−1.2s") and no sign before any other: the check's
// findings state a remaining time that ran out, in prose, where an ASCII
// hyphen would read as a dash.
func MinusDuration(d time.Duration) string {
	if d < 0 {
		return "−" + Duration(-d)
	}
	return Duration(d)
}

// MillisRange writes a range of durations given in ms: "59.5ms–1.55s",
// "9–10s", "0s–50ms". The lower end drops its unit only when both ends
// print the same one ("1–2ms"), so that a range never reads in a unit
// neither end has (the bug this rule replaced printed "59.5m–1.55s",
// which reads as minutes).
func MillisRange(loMs, hiMs float64) string {
	a, b := Millis(loMs), Millis(hiMs)
	if ua := Unit(a); ua != "" && ua == Unit(b) {
		a = strings.TrimSuffix(a, ua)
	}
	return a + "–" + b
}

// Unit is the unit suffix of a duration Duration wrote: "ms" of "59.5ms",
// "s" of "0s", "" of a bare number (the lower end of a MillisRange that
// shares its unit with the upper end).
func Unit(s string) string {
	i := strings.LastIndexFunc(s, func(r rune) bool { return r == '.' || (r >= '0' && r <= '9') })
	return s[i+1:]
}

// GoDuration writes d in Go's duration syntax, which the policy file and
// Linkerd's ServiceProfiles use and time.ParseDuration reads back
// exactly, with the zero minutes and seconds Go writes after a whole hour
// or minute left out: "1m" and "1h" rather than "1m0s" and "1h0m0s";
// "1.5s", "250ms", "1h10s". Negative durations keep Go's "-".
func GoDuration(d time.Duration) string {
	s := d.String()
	s = strings.Replace(s, "m0s", "m", 1)
	s = strings.Replace(s, "h0m", "h", 1)
	return s
}

// DecimalSeconds writes d as decimal seconds to the millisecond with the
// trailing zeros dropped, "0.1s", "2.5s", "30s": the syntax of a
// protobuf Duration in JSON and of Envoy's and Istio's YAML, which the
// gRPC, Envoy and Istio configs use. Zero is "0s". The sub-millisecond part is rounded
// away (below half a millisecond is "0s", "-0s" below zero): the
// recommended times are rounded to steps of at least a millisecond, and a
// hand-written policy with a finer time is emitted to the millisecond.
func DecimalSeconds(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", d.Seconds()), "0"), ".") + "s"
}

// Minutes writes a span of minutes in the unit a person plans in: whole
// minutes (rounded up, at least 1) below 90 minutes, hours to the tenth
// below two days, days to the tenth beyond ("45 minutes", "1.5 hours",
// "3 days"). The unit is always plural, "1 minutes" included, as the
// analysis has always printed it.
func Minutes(m float64) string {
	switch {
	case m <= 1:
		return "1 minute"
	case m < 90:
		return fmt.Sprintf("%.0f minutes", math.Ceil(m))
	case m < 48*60:
		return trimZeros(fmt.Sprintf("%.1f", m/60)) + " hours"
	}
	return trimZeros(fmt.Sprintf("%.1f", m/1440)) + " days"
}

// ETA writes an estimate of time left to what it can honestly promise:
// whole seconds below 10s, five-second steps below a minute ("35s"),
// minutes with ten-second steps below an hour ("4m30s"), hours and
// minutes beyond ("2h05m").
func ETA(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%ds", int(d.Seconds()+0.5))
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()/5+0.5)*5)
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60/10*10)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

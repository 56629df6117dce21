package units

import (
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{1, "1ns"}, {999, "999ns"},
		{time.Microsecond, "1µs"}, {1499, "1µs"}, {1500, "2µs"}, {999_499, "999µs"},
		{999_500, "1ms"}, // would round to 1000µs: the next unit
		{time.Millisecond, "1ms"}, {5_730_000, "5.73ms"}, {59_500_000, "59.5ms"},
		{812_000_000, "812ms"}, {999_499_999, "999ms"},
		{999_500_000, "1s"}, // would round to 1000ms
		{time.Second, "1s"}, {1_420_000_000, "1.42s"}, {9_994_999_999, "9.99s"}, {9_995_000_000, "10s"},
		{10_040_000_000, "10s"}, {10_570_000_000, "10.6s"},
		{12 * time.Second, "12s"}, {99_949_999_999, "99.9s"}, {99_950_000_000, "100s"},
		{100 * time.Second, "100s"}, {123_450_000_001, "123s"}, {999_949_999_999, "1000s"},
		{1000 * time.Second, "1000s"}, {2 * time.Hour, "7200s"},
		{-1, "-1ns"}, {-1_500_000_000, "-1.5s"}, {-59_500_000, "-59.5ms"},
		{math.MinInt64, "-9223372037s"}, {math.MaxInt64, "9223372037s"},
	} {
		if got := Duration(c.d); got != c.want {
			t.Errorf("Duration(%d) = %q, want %q", int64(c.d), got, c.want)
		}
	}
}

func TestMillis(t *testing.T) {
	for _, c := range []struct {
		ms         float64
		want, plus string
	}{
		{0, "0s", "+0s"}, {59.5, "59.5ms", "+59.5ms"}, {0.5, "500µs", "+500µs"},
		{0.0005, "500ns", "+500ns"}, {1550, "1.55s", "+1.55s"}, {590, "590ms", "+590ms"},
		{-12, "-12ms", "-12ms"}, {-0.0000001, "0s", "0s"}, // less than a ns below zero: no sign at all
		{999.7, "1s", "+1s"},
	} {
		if got := Millis(c.ms); got != c.want {
			t.Errorf("Millis(%v) = %q, want %q", c.ms, got, c.want)
		}
		if got := PlusMillis(c.ms); got != c.plus {
			t.Errorf("PlusMillis(%v) = %q, want %q", c.ms, got, c.plus)
		}
	}
}

func TestMinusDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {5 * time.Millisecond, "5ms"}, {-1_200_000_000, "−1.2s"},
		{-1, "−1ns"}, {1_500_000_000, "1.5s"},
	} {
		if got := MinusDuration(c.d); got != c.want {
			t.Errorf("MinusDuration(%v) = %q, want %q", c.d, got, c.want)
		}
		if c.d < 0 && strings.Contains(MinusDuration(c.d), "-") {
			t.Errorf("MinusDuration(%v) has an ASCII hyphen", c.d)
		}
	}
}

func TestUnit(t *testing.T) {
	for in, want := range map[string]string{
		"59.5ms": "ms", "0s": "s", "9": "", "1.5": "", "500µs": "µs", "12ns": "ns", "": "", "7200s": "s",
	} {
		if got := Unit(in); got != want {
			t.Errorf("Unit(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMillisRange(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64 // ms
		want   string
	}{
		{59.5, 1550, "59.5ms–1.55s"},
		{608, 1750, "608ms–1.75s"},
		{9000, 10020, "9–10s"},
		{5, 2800, "5ms–2.8s"},
		{1, 2, "1–2ms"},
		{0.5, 2, "500µs–2ms"},
		{0.0005, 0.002, "500ns–2µs"},
		{0, 1500, "0–1.5s"},
		{0, 50, "0s–50ms"},
		{999.7, 1200, "1–1.2s"},  // 999.7ms prints as 1s: the shared unit is s
		{0.9996, 1.5, "1–1.5ms"}, // 999.6µs prints as 1ms
		{120_000, 7_200_000, "120–7200s"},
	} {
		if got := MillisRange(c.lo, c.hi); got != c.want {
			t.Errorf("MillisRange(%v, %v) = %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}

// parseRange reads a printed duration range back: "59.5ms–1.55s",
// "9–10s" (the lower end borrows the upper end's unit when it has none).
func parseRange(t *testing.T, s string) (lo, hi time.Duration) {
	t.Helper()
	a, b, ok := strings.Cut(s, "–")
	if !ok || strings.Contains(b, "–") {
		t.Fatalf("%q is not one range", s)
	}
	if Unit(a) == "" {
		a += Unit(b)
	}
	lo, err := time.ParseDuration(a)
	if err != nil {
		t.Fatalf("%q: lower end: %v", s, err)
	}
	hi, err = time.ParseDuration(b)
	if err != nil {
		t.Fatalf("%q: upper end: %v", s, err)
	}
	return lo, hi
}

// roundingOf is how far a printed duration may be from its value: three
// significant digits in ms, the ms in s, the µs below a ms.
func roundingOf(d time.Duration) float64 {
	switch {
	case d < time.Microsecond:
		return 1
	case d < time.Millisecond:
		return 500
	}
	return 0.005*float64(d) + 1
}

// TestMillisRangeParsesBack: every printed range, from nanoseconds to
// hours, reads back (with Go's duration syntax, in which "m" is minutes)
// as its two values within the rounding of the print; the bug this guards
// against printed 59.5ms–1.55s as "59.5m–1.55s", which reads as minutes.
func TestMillisRangeParsesBack(t *testing.T) {
	edges := []time.Duration{1, 999, time.Microsecond, 999_499, 999_500, time.Millisecond, 9_995_000,
		999_499_999, 999_500_000, time.Second, 99_994_999_999, 99_995_000_000, 100 * time.Second,
		999_949_999_999, 999_950_000_000, 1000 * time.Second, time.Hour, 36 * time.Hour}
	var vals []time.Duration
	vals = append(vals, edges...)
	rng := rand.New(rand.NewSource(12))
	for i := 0; i < 400; i++ {
		// log-uniform over 1ns … 48h
		vals = append(vals, time.Duration(math.Pow(10, rng.Float64()*math.Log10(float64(48*time.Hour)))))
	}
	pairs := 0
	for i, a := range vals {
		for _, b := range []time.Duration{vals[(i*7+3)%len(vals)], vals[(i*13+1)%len(vals)], a * 3, a + a/100} {
			lo, hi := min(a, b), max(a, b)
			if lo == hi {
				continue
			}
			// The report's values are float ms; pass them the same way.
			loMs, hiMs := float64(lo)/1e6, float64(hi)/1e6
			s := MillisRange(loMs, hiMs)
			plo, phi := parseRange(t, s)
			if e := math.Abs(float64(plo - time.Duration(loMs*1e6))); e > roundingOf(lo) {
				t.Errorf("%v–%v printed %q: lower end reads %v", lo, hi, s, plo)
			}
			if e := math.Abs(float64(phi - time.Duration(hiMs*1e6))); e > roundingOf(hi) {
				t.Errorf("%v–%v printed %q: upper end reads %v", lo, hi, s, phi)
			}
			pairs++
		}
	}
	if pairs < 1000 {
		t.Fatalf("only %d pairs tried", pairs)
	}
}

func TestGoDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {250 * time.Millisecond, "250ms"}, {1500 * time.Millisecond, "1.5s"},
		{time.Minute, "1m"}, {10 * time.Minute, "10m"}, {time.Hour, "1h"},
		{90 * time.Minute, "1h30m"}, {time.Hour + 10*time.Second, "1h10s"},
		{2*time.Hour + 500*time.Millisecond, "2h0.5s"}, {time.Minute + 5*time.Second, "1m5s"},
		{-time.Minute, "-1m"}, {1, "1ns"}, {1500, "1.5µs"},
	} {
		got := GoDuration(c.d)
		if got != c.want {
			t.Errorf("GoDuration(%v) = %q, want %q", c.d, got, c.want)
		}
		if back, err := time.ParseDuration(got); err != nil || back != c.d {
			t.Errorf("GoDuration(%v) = %q reads back as %v, %v", c.d, got, back, err)
		}
	}
	// Any duration reads back exactly.
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 2000; i++ {
		d := time.Duration(rng.Int63n(int64(100 * time.Hour)))
		if i%2 == 0 {
			d = d.Round(time.Duration([]int64{1, 1e6, 1e9, 6e10, 36e11}[i%5]))
		}
		if back, err := time.ParseDuration(GoDuration(d)); err != nil || back != d {
			t.Fatalf("GoDuration(%v) = %q reads back as %v, %v", d, GoDuration(d), back, err)
		}
	}
}

func TestDecimalSeconds(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {time.Millisecond, "0.001s"}, {1400 * time.Microsecond, "0.001s"},
		{100 * time.Millisecond, "0.1s"}, {2500 * time.Millisecond, "2.5s"},
		{30 * time.Second, "30s"}, {10 * time.Second, "10s"}, {time.Hour, "3600s"},
		{1_234_567_890, "1.235s"}, {-100 * time.Millisecond, "-0.1s"},
		{400 * time.Microsecond, "0s"}, {-400 * time.Microsecond, "-0s"}, // rounded to the ms
	} {
		if got := DecimalSeconds(c.d); got != c.want {
			t.Errorf("DecimalSeconds(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestMinutes(t *testing.T) {
	for _, c := range []struct {
		m    float64
		want string
	}{
		{0, "1 minute"}, {0.2, "1 minute"}, {1, "1 minute"}, {1.01, "2 minutes"},
		{45, "45 minutes"}, {89.5, "90 minutes"}, {90, "1.5 hours"}, {120, "2 hours"},
		{2879, "48 hours"}, {2880, "2 days"}, {4320, "3 days"}, {5000, "3.5 days"},
	} {
		if got := Minutes(c.m); got != c.want {
			t.Errorf("Minutes(%v) = %q, want %q", c.m, got, c.want)
		}
	}
}

func TestETA(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {4400 * time.Millisecond, "4s"}, {9600 * time.Millisecond, "10s"},
		{10 * time.Second, "10s"}, {12400 * time.Millisecond, "10s"}, {12500 * time.Millisecond, "15s"},
		{43 * time.Second, "45s"}, {59 * time.Second, "60s"}, {time.Minute, "1m00s"}, {4*time.Minute + 35*time.Second, "4m30s"}, {5*time.Minute + 37*time.Second, "5m30s"},
		{59*time.Minute + 59*time.Second, "59m50s"}, {time.Hour, "1h00m"},
		{2*time.Hour + 5*time.Minute, "2h05m"}, {30 * time.Hour, "30h00m"},
	} {
		if got := ETA(c.d); got != c.want {
			t.Errorf("ETA(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

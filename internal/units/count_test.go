package units

import (
	"math"
	"testing"
)

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0 requests"},
		{1, "1 request"},
		{2, "2 requests"},
		{-1, "-1 requests"},
		{1_000_000, "1000000 requests"},
		{math.MaxInt64, "9223372036854775807 requests"},
	} {
		if got := Count(c.n, "request", "requests"); got != c.want {
			t.Errorf("Count(%d) = %q, want %q", c.n, got, c.want)
		}
		if got := Count(int(c.n), "request", "requests"); got != c.want {
			t.Errorf("Count(int %d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "hops"}, {1, "hop"}, {2, "hops"}, {-1, "hops"}, {11, "hops"}} {
		if got := Plural(c.n, "hop", "hops"); got != c.want {
			t.Errorf("Plural(%d) = %q, want %q", c.n, got, c.want)
		}
		if got := Plural(int64(c.n), "hop", "hops"); got != c.want {
			t.Errorf("Plural(int64 %d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestOrdinal(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{
		{0, "0th"}, {1, "1st"}, {2, "2nd"}, {3, "3rd"}, {4, "4th"}, {10, "10th"},
		{11, "11th"}, {12, "12th"}, {13, "13th"}, {14, "14th"},
		{21, "21st"}, {22, "22nd"}, {23, "23rd"}, {101, "101st"},
		{111, "111th"}, {112, "112th"}, {113, "113th"}, {121, "121st"},
		{-1, "-1th"},
	} {
		if got := Ordinal(c.n); got != c.want {
			t.Errorf("Ordinal(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestCountShort(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{0, "0"}, {1, "1"}, {0.5, "0"}, {1.5, "2"}, {999, "999"}, {999.4, "999"},
		{999.6, "1000"}, // below the threshold the suffix is not taken, even when it rounds up
		{1000, "1.0k"}, {1050, "1.1k"}, {999_949, "999.9k"}, {999_999, "1000.0k"},
		{1e6, "1.0M"}, {12_345_678, "12.3M"}, {1e9, "1.0G"}, {4.2e12, "4200.0G"},
		{-5, "-5"},
	} {
		if got := CountShort(c.x); got != c.want {
			t.Errorf("CountShort(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1, "1 B"}, {999, "999 B"}, {1000, "1.0 kB"}, {1500, "1.5 kB"},
		{999_949, "999.9 kB"}, {999_999, "1000.0 kB"}, {1_000_000, "1.0 MB"},
		{12_000_000_000, "12.0 GB"}, {1e12, "1.0 TB"}, {1.5e15, "1500.0 TB"},
		{-1, "-1 B"},
	} {
		if got := Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

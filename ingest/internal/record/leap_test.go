package record

import (
	"testing"
	"time"
)

func TestParseRFC3339LeapSecond(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // RFC 3339 of the result, "" for an error
	}{
		{"2016-12-31T23:59:60Z", "2017-01-01T00:00:00Z"},
		{"2016-12-31T23:59:60.25Z", "2017-01-01T00:00:00.25Z"},
		{"2015-06-30T23:59:60+00:00", "2015-07-01T00:00:00Z"},
		{"2016-12-31T23:59:59Z", "2016-12-31T23:59:59Z"},
		{"2016-12-31T12:00:60Z", ""}, // only 23:59 has a leap second
		{"2016-12-31T23:59:61Z", ""},
		{"2016-12-31T23:59:6", ""},
		{"T23:59:60", ""},
	} {
		got, err := ParseRFC3339(c.in)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("%q: %v, want an error", c.in, got)
		case c.want != "" && (err != nil || got.UTC().Format(time.RFC3339Nano) != c.want):
			t.Errorf("%q: %v, %v; want %s", c.in, got.UTC().Format(time.RFC3339Nano), err, c.want)
		}
	}
}

// FuzzParseRFC3339: never panics, and agrees with time.Parse on every
// input that parses.
func FuzzParseRFC3339(f *testing.F) {
	for _, s := range []string{"2016-12-31T23:59:60Z", "2016-12-31T23:59:60.5+01:00", "x", "T23:59:60", "2016-12-31 23:59:60Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseRFC3339(s)
		if want, werr := time.Parse(time.RFC3339Nano, s); werr == nil && (err != nil || !got.Equal(want)) {
			t.Fatalf("%q: %v %v, time.Parse gives %v", s, got, err, want)
		}
	})
}

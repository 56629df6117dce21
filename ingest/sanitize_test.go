package ingest

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tailscope/tailscope/ingest/internal/record"
)

// Invalid UTF-8 in names becomes U+FFFD at ingest, so every report shows
// the same valid name; different bad bytes at the same place fall into one
// hop, as they print the same.
func TestInvalidUTF8Names(t *testing.T) {
	in := "{\"hop\":\"a\xffb\",\"service\":\"s\xc3\",\"name\":\"ok\",\"duration_ms\":1}\n" +
		"{\"hop\":\"a\xfeb\",\"duration_ms\":2}\n" +
		"{\"hop\":\"caf\xc3\xa9\",\"duration_ms\":3}\n"
	spans, st := readString(t, in, record.Options{})
	if st.Used != 3 {
		t.Fatalf("used %d, want 3 (skipped %v)", st.Used, st.SkippedByReason)
	}
	want := []string{"a\uFFFDb", "a\uFFFDb", "café"}
	for i, sp := range spans {
		for _, s := range []string{sp.Hop, sp.Service, sp.Name} {
			if !utf8.ValidString(s) {
				t.Errorf("span %d: invalid UTF-8 %q", i, s)
			}
		}
		if sp.Hop != want[i] {
			t.Errorf("span %d: hop %q, want %q", i, sp.Hop, want[i])
		}
	}
	if spans[0].Service != "s\uFFFD" {
		t.Errorf("service %q", spans[0].Service)
	}
}

// A bad value's detail is cut: a huge or binary value must not be copied
// whole into every report that lists skip examples.
func TestSkipDetailBounded(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	in := `{"hop":"h","duration":"` + huge + `"}` + "\n" +
		"{\"hop\":\"h\",\"duration\":\"\xff\xfe\"}\n"
	_, st := readString(t, in, record.Options{})
	if st.SkippedByReason["bad value"] != 2 || len(st.Errors) != 2 {
		t.Fatalf("skipped %v, errors %d", st.SkippedByReason, len(st.Errors))
	}
	for _, e := range st.Errors {
		msg := e.Error()
		if len(e.Detail) > record.MaxDetail+len("…")+4 || !utf8.ValidString(msg) {
			t.Errorf("detail not bounded or not UTF-8: %d bytes %q", len(e.Detail), msg[:min(len(msg), 300)])
		}
		if !strings.Contains(msg, "duration") || !strings.Contains(msg, "want a Go duration") {
			t.Errorf("cut detail lost its field or hint: %q", msg)
		}
	}
}

func TestShortDetail(t *testing.T) {
	for _, s := range []string{"", "short", strings.Repeat("é", 300), strings.Repeat("a", 199) + "\xff", "\xff" + strings.Repeat("ü", 500)} {
		got := record.ShortDetail(s)
		if !utf8.ValidString(got) || len(got) > record.MaxDetail+8 {
			t.Errorf("shortDetail(%d bytes) = %d bytes, valid %v", len(s), len(got), utf8.ValidString(got))
		}
		if len(s) <= record.MaxDetail && utf8.ValidString(s) && got != s {
			t.Errorf("short valid detail changed: %q → %q", s, got)
		}
	}
}

package record

import (
	"strings"
	"unicode/utf8"
)

// Text from the logs ends up in reports: hop names in tables, JSON, HTML
// and policy files. Two rules keep those reports sound whatever the logs
// hold, and they are applied where strings enter tailscope (the interner,
// and the detail of a skipped record), so no renderer has to remember them.

// ValidText returns b as a string with every invalid UTF-8 sequence
// replaced by U+FFFD. Without it a hop name with a stray byte would be
// printed raw in text reports, turned into U+FFFD by encoding/json in JSON
// reports, and two hops differing only in their bad bytes would show under
// one name with two rows. Valid input is returned unchanged.
func ValidText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// MaxDetail bounds the detail of a skipped record. Details quote the bad
// value ("bad duration \"fast\""); a bad value may be megabytes long (a
// 10 MB field) or hold data the user did not ask to see in a report, so
// only its start is kept.
const MaxDetail = 200

// ShortDetail cuts a skip detail to about maxDetail bytes and makes it
// valid UTF-8. It keeps the head and the tail, cut on rune boundaries, with
// "…" between: the head names the field, the tail holds the hint ("want a
// Go duration like 1.5s").
func ShortDetail(s string) string {
	if len(s) <= MaxDetail && utf8.ValidString(s) {
		return s
	}
	if len(s) > MaxDetail {
		head, tail := MaxDetail*3/5, len(s)-MaxDetail*2/5
		for head > 0 && !utf8.RuneStart(s[head]) {
			head--
		}
		for tail < len(s) && !utf8.RuneStart(s[tail]) {
			tail++
		}
		s = s[:head] + "…" + s[tail:]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

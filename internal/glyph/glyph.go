// Package glyph says which characters a reader cannot see, or that act on
// a terminal or reorder the text around them. The reports escape them when
// they print names from the logs, and the configs that tailscope emits
// escape them in the formats' own escape syntax; both take the rule from
// here so that they never disagree.
//
// It is a leaf: it imports only the standard library, so that policy (which
// emits configs) and report (which renders) can both use it.
package glyph

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Invisible reports whether the rune r, n bytes long in its string, is one
// to escape: bytes that are not UTF-8 (r is utf8.RuneError and n is 1), C0
// controls, DEL and C1 controls, and the format characters (Unicode Cf:
// bidi embeddings, overrides, isolates and marks, zero-width spaces and
// joiners, the BOM, the soft hyphen, the tag characters), the line and
// paragraph separators and the other default-ignorable code points, which
// render as nothing.
func Invisible(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n == 1: // not UTF-8
		return true
	case r < 0x20 || (r >= 0x7f && r < 0xa0): // C0, DEL, C1
		return true
	case r < 0xad: // printable ASCII and Latin-1: the common case
		return false
	}
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Other_Default_Ignorable_Code_Point)
}

// Escape writes every character Invisible picks as a Go-style escape
// (\x1b, \t, \n, \r, \u202e, \U000e0041; a byte that is not UTF-8 as
// \x9b) and returns s unchanged when it has none. A backslash is not
// escaped (see report.Visible).
func Escape(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if Invisible(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !Invisible(r, n) {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += n
	}
	return b.String()
}

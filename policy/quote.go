package policy

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tailscope/tailscope/internal/glyph"
)

// JSONVisible escapes, in a JSON document, every character a reader
// cannot see or that reorders the text around it (glyph.Invisible: bidi
// overrides, zero-width characters, C1 controls…) as \uXXXX (a surrogate
// pair above U+FFFF), as the reports escape them: a JSON parser reads the
// same strings, a reviewer of the file sees them. JSON's structure is
// ASCII, so such a character can only be inside a string, where an escape
// means the character itself. encoding/json has already escaped C0
// controls and replaced bytes that are not UTF-8.
func JSONVisible(doc string) string {
	var b strings.Builder
	for i := 0; i < len(doc); {
		r, n := utf8.DecodeRuneInString(doc[i:])
		switch {
		case r < 0x80 || !glyph.Invisible(r, n):
			// encoding/json escaped the C0 controls in strings: those
			// left are the document's own line breaks and indents.
			b.WriteString(doc[i : i+n])
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\ufffd`)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

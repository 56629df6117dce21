package report

import (
	"github.com/tailscope/tailscope/internal/glyph"
)

// Visible makes a string from the logs, a policy or the file system safe to
// print on a terminal or in a document, by writing every character a reader
// could not see, or that would act on the terminal or reorder the text
// around it, as a Go-style escape:
//
//   - C0 controls and DEL (ESC, BEL, NUL, …): \x1b, \x07, \x00; tab, newline
//     and carriage return as \t, \n, \r (a name must not break a table row);
//   - C1 controls U+0080–U+009F (8-bit CSI, OSC, …): \u009b;
//   - bytes that are not UTF-8 (a lone 0x9b is a CSI to some terminals):
//     \x9b;
//   - format characters (Unicode category Cf), among them the bidi
//     embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069,
//     the marks U+200E, U+200F and U+061C, the zero-width U+200B–U+200D,
//     U+2060 and U+FEFF, the soft hyphen and the tag characters: \u202e;
//   - the line and paragraph separators U+2028, U+2029, and the other
//     default-ignorable code points (Hangul fillers, U+034F, …), which
//     render as nothing.
//
// Everything else, letters of any script included, passes unchanged, and a
// string with nothing to escape is returned as is. A backslash is not
// escaped, so Windows paths and names that contain one stay readable; the
// cost is that a literal `\x1b` in a name reads like an escaped ESC.
//
// Text, Markdown and HTML reports apply it to every string they did not
// write themselves (HTML attributes included); the JSON report keeps the
// strings as they are (its consumers need the real names). Use it for any
// name from the input echoed to a terminal, stderr included.
func Visible(s string) string { return glyph.Escape(s) }

// invisible reports whether the rune r, n bytes long in its string, is one
// Visible escapes (the rule is glyph.Invisible, shared with the emitted
// configs).
func invisible(r rune, n int) bool { return glyph.Invisible(r, n) }

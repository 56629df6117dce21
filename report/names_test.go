package report

import (
	"strings"
	"unicode"

	"github.com/tailscope/tailscope/option"
)

// cliLike names options the way cmd/tailscope's flags spell them by
// convention (--kebab-case, -f for the format), so that the golden files
// read as the command prints them. The command's own table (flagnames.go)
// is held to its flags by its tests, and the binary's output by the
// before-and-after comparisons.
func cliLike(o option.Option) string {
	if o == option.Format {
		return "-f"
	}
	var b strings.Builder
	b.WriteString("--")
	for i, r := range o.String() {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

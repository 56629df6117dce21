package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/option"
)

// TestFlagNames: every option the libraries may name has a spelling in
// flagOf, and each spelling is a flag some command defines (its --help
// lists it), so that a message never names a flag the CLI does not have.
func TestFlagNames(t *testing.T) {
	defined := map[string]bool{}
	line := regexp.MustCompile(`(?m)^\s+(?:-([a-z]), )?--([a-z][a-z0-9-]*)`)
	for _, c := range commands() {
		out, errOut, _ := runCode(t, c.name, "--help")
		for _, m := range line.FindAllStringSubmatch(out+errOut, -1) {
			if m[1] != "" {
				defined["-"+m[1]] = true
			}
			defined["--"+m[2]] = true
		}
	}
	if !defined["--hop-by"] || !defined["-f"] {
		t.Fatalf("the flags read from --help lack --hop-by or -f (%d read): the reading is broken", len(defined))
	}
	for _, o := range option.All() {
		f, ok := flagOf[o]
		if !ok {
			t.Errorf("option %s has no flag in flagOf", o)
			continue
		}
		if family, ok := strings.CutSuffix(f, "…"); ok {
			n := 0
			for d := range defined {
				if strings.HasPrefix(d, family) {
					n++
				}
			}
			if n < 2 {
				t.Errorf("option %s: %s names a family of %d flags", o, f, n)
			}
			continue
		}
		if !defined[f] {
			t.Errorf("option %s is spelled %s, which no command defines", o, f)
		}
		if flagNames(o) != f {
			t.Errorf("flagNames(%s) = %q, want %q", o, flagNames(o), f)
		}
	}
}

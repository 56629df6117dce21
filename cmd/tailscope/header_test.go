package main

import (
	"strings"
	"testing"
)

// A --header with bad syntax is refused without repeating what may be the
// secret: all of it when there is no colon, the name when it does not
// read as a header name.
func TestBadHeaderNotEchoed(t *testing.T) {
	for _, h := range []string{"Bearer s3cr3tT0kenValue", "Bearer s3cr3tT0ken: x", "s3cr3tT0kenValue"} {
		_, stderr, code := runCode(t, "analyze", "--header", h, "jaeger://127.0.0.1:1")
		if code != 2 || !strings.Contains(stderr, "--header") {
			t.Errorf("--header %q: exit %d, %q; want a usage error", h, code, stderr)
		}
		if strings.Contains(stderr, "s3cr3t") {
			t.Errorf("--header %q: the error repeats it: %q", h, stderr)
		}
	}
}

// Runs the README's documented commands and compares their output with the README.

package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readmeExample is a fenced block of the README that starts with a
// `$ tailscope …` line: the command and the output the README shows.
type readmeExample struct {
	line int
	args []string
	want []string
}

func readmeExamples(t *testing.T) []readmeExample {
	t.Helper()
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []readmeExample
	var cur *readmeExample
	fenced, plain := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			if cur != nil {
				out = append(out, *cur)
				cur = nil
			}
			fenced = !fenced
			plain = fenced && line == "```"
		case plain && cur == nil && strings.HasPrefix(line, "$ tailscope "):
			cur = &readmeExample{line: n, args: strings.Fields(strings.TrimPrefix(line, "$ tailscope "))}
		case cur != nil:
			cur.want = append(cur.want, line)
		}
	}
	if len(out) == 0 {
		t.Fatal("no `$ tailscope` examples found in the README")
	}
	return out
}

// collapse makes runs of white space one space: the README wraps long
// lines where the terminal would not.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// Every `$ tailscope …` example in the README is run, and its output must
// show what the README shows, in order: text the README cuts with "..."
// may be left out, white space and wrapping may differ, nothing else.
func TestREADMEExamples(t *testing.T) {
	samples, err := filepath.Abs("../../samples")
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range readmeExamples(t) {
		t.Run(strings.Join(ex.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Symlink(samples, filepath.Join(dir, "samples")); err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir)
			var stdout, stderr bytes.Buffer
			if code := run(ex.args, strings.NewReader(""), &stdout, &stderr); code != 0 {
				t.Fatalf("README.md:%d: exit %d: %s", ex.line, code, stderr.String())
			}
			got := collapse(stdout.String())
			at := 0
			for _, seg := range strings.Split(strings.Join(ex.want, "\n"), "...") {
				seg = collapse(seg)
				if seg == "" {
					continue
				}
				i := strings.Index(got[at:], seg)
				if i < 0 {
					t.Fatalf("README.md:%d: the output does not show, after what came before:\n  %s\noutput:\n%s", ex.line, seg, stdout.String())
				}
				at += i + len(seg)
			}
		})
	}
}

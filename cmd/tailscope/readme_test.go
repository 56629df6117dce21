// Runs the documented commands of the README and of docs/*.md and compares
// their output with what the documents show.

package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeExample is a fenced block of a document that starts with a
// `$ tailscope …` line: the command and the output the document shows.
type readmeExample struct {
	file string // relative to the repository
	line int
	args []string
	want []string
	// prose is the text between the previous block and this one: where a
	// cut output is said to be cut.
	prose string
}

// documented are the documents whose examples run: the README and every
// docs/*.md.
func documented(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../../README.md"}, docs...)
}

func readmeExamples(t *testing.T, path string) []readmeExample {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	name := strings.TrimPrefix(path, "../../")
	var out []readmeExample
	var cur *readmeExample
	var prose []string
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
			if !fenced {
				prose = prose[:0]
			}
		case plain && cur == nil && strings.HasPrefix(line, "$ tailscope "):
			cur = &readmeExample{file: name, line: n, args: strings.Fields(strings.TrimPrefix(line, "$ tailscope ")), prose: strings.Join(prose, " ")}
		case cur != nil:
			cur.want = append(cur.want, line)
		case !fenced:
			prose = append(prose, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// collapse makes runs of white space one space: the README wraps long
// lines where the terminal would not.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// Every `$ tailscope …` example in the README and in docs/*.md is run in a
// folder that holds only what a clone has (samples/ and testdata/), and its
// output must show what the document shows, in order: text the document
// cuts with "..." may be left out, white space and wrapping may differ,
// nothing else. A document says in words where it cuts; the test holds the
// marks to the output.
func TestREADMEExamples(t *testing.T) {
	var links []string
	for _, d := range []string{"samples", "testdata"} {
		abs, err := filepath.Abs(filepath.Join("../..", d))
		if err != nil {
			t.Fatal(err)
		}
		links = append(links, abs)
	}
	var all []readmeExample
	for _, doc := range documented(t) {
		all = append(all, readmeExamples(t, doc)...)
	}
	if readme := readmeExamples(t, "../../README.md"); len(readme) == 0 {
		t.Fatal("no `$ tailscope` examples found in the README")
	}
	for _, ex := range all {
		t.Run(ex.file+":"+strings.Join(ex.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			for _, abs := range links {
				if err := os.Symlink(abs, filepath.Join(dir, filepath.Base(abs))); err != nil {
					t.Fatal(err)
				}
			}
			if strings.Contains(strings.Join(ex.want, "\n"), "...") && !strings.Contains(strings.ToLower(ex.prose), "cut") {
				t.Errorf("%s:%d: the example cuts its output (...) and the text before it does not say where", ex.file, ex.line)
			}
			t.Chdir(dir)
			var stdout, stderr bytes.Buffer
			if code := run(ex.args, strings.NewReader(""), &stdout, &stderr); code != 0 {
				t.Fatalf("%s:%d: exit %d: %s", ex.file, ex.line, code, stderr.String())
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
					t.Fatalf("%s:%d: the output does not show, after what came before:\n  %s\noutput:\n%s", ex.file, ex.line, seg, stdout.String())
				}
				at += i + len(seg)
			}
		})
	}
}

// The README is a front door: at most 250 lines, and every document it
// links to is there.
func TestREADMEFrontDoor(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n > 250 {
		t.Errorf("README.md has %d lines, more than the 250 of a front door: move the reference under docs/", n)
	}
	// The two commands: the test command is the one .ci/run runs, and
	// the demo is the one the examples run.
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	two := regexp.MustCompile("(?s)## The two commands\n\n```sh\n(.*?)```").FindSubmatch(b)
	if two == nil {
		t.Fatal("the README has no '## The two commands' block")
	}
	var cmds []string
	for _, l := range strings.Split(strings.TrimSpace(string(two[1])), "\n") {
		cmd, _, _ := strings.Cut(l, "#")
		cmds = append(cmds, strings.TrimSpace(cmd))
	}
	if len(cmds) != 2 || cmds[0] != "go run ./cmd/tailscope demo" {
		t.Errorf("the two commands are %q, want the demo first", cmds)
	} else if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(cmds[1]) + `$`).Match(ci) {
		t.Errorf("the README's test command %q is not a line of .ci/run", cmds[1])
	}
	links := regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`).FindAllSubmatch(b, -1)
	if len(links) == 0 {
		t.Fatal("the README links no document")
	}
	for _, m := range links {
		if _, err := os.Stat(filepath.Join("../..", string(m[1]))); err != nil {
			t.Errorf("README.md links %s: %v", m[1], err)
		}
	}
}

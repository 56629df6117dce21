// Tests of -o's atomic writing (symlinks, modes, hard links, devices) and of non-finite number flags.

package main

import (
	"bytes"
	"fmt"
	"github.com/tailscope/tailscope/report"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Robustness tests for what the command line owns: -o
// never damages what the path names, flags hold to finite values and
// representable times, policy files are read strictly, stderr cannot
// drive the terminal, a panic is not a usage error. Each runs its
// reproduction through the built binary where the behaviour is the
// binary's (exit codes, files left behind).

// writeSeed is a small run that writes a report to out.
func analyzeTo(t *testing.T, dir, out string, extra ...string) result {
	t.Helper()
	seed := mustAbs(t, filepath.Join(seedDir, "spans.jsonl"))
	return runIn(t, dir, "", append(append([]string{"analyze", "-q"}, extra...), seed, "-o", out)...)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The reproduction: `echo keep>t; ln -s t l; tailscope analyze -o l
// spans.jsonl` made l a regular file and left t as it was. The link must
// stay a link and its target get the report; a dangling link's target is
// created (as a shell's > does); a chain of links is followed to its end.
func TestOutputFollowsSymlink(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "t"), []byte("keep\n"), 0o644))
	must(t, os.Symlink("t", filepath.Join(dir, "l")))
	must(t, os.Symlink("l", filepath.Join(dir, "l2")))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(t, os.Mkdir(filepath.Join(dir, "links"), 0o755))
	// Relative to the link's folder, not to the working directory.
	must(t, os.Symlink("../sub/new.txt", filepath.Join(dir, "links", "dangling")))
	for _, out := range []string{"l", "l2", "links/dangling"} {
		if r := analyzeTo(t, dir, out); r.code != exitOK {
			t.Fatalf("-o %s: exit %d: %s", out, r.code, r.stderr)
		}
		fi, err := os.Lstat(filepath.Join(dir, out))
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("-o %s: no longer a symlink (%v)", out, err)
		}
	}
	if got := readFile(t, filepath.Join(dir, "t")); !strings.Contains(got, "ATTEMPTS") {
		t.Errorf("the link's target did not get the report: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "sub", "new.txt")); !strings.Contains(got, "ATTEMPTS") {
		t.Errorf("the dangling link's target was not created with the report: %q", got)
	}
	if got := listDir(t, dir); strings.Join(got, " ") != "l l2 links sub t" {
		t.Errorf("folder holds %v", got)
	}
	if got := listDir(t, filepath.Join(dir, "sub")); strings.Join(got, " ") != "new.txt" {
		t.Errorf("sub holds %v", got)
	}
}

// -o keeps the target's mode: a 0600 file stays 0600 (it became 0644).
func TestOutputKeepsMode(t *testing.T) {
	dir := t.TempDir()
	for _, mode := range []os.FileMode{0o600, 0o640, 0o664} {
		out := filepath.Join(dir, fmt.Sprintf("r%o", mode))
		must(t, os.WriteFile(out, []byte("old"), mode))
		must(t, os.Chmod(out, mode))
		if r := analyzeTo(t, dir, out); r.code != exitOK {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		fi, err := os.Stat(out)
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("mode %o became %v (%v)", mode, fi.Mode(), err)
		}
		if got := readFile(t, out); !strings.Contains(got, "ATTEMPTS") {
			t.Errorf("not written: %q", got)
		}
	}
}

// A read-only file (no write bit for anybody) is refused with exit 1 and
// left as it was, whoever runs tailscope (root included, which would be
// allowed to open it).
func TestOutputRefusesReadOnly(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "ro.txt")
	must(t, os.WriteFile(out, []byte("keep"), 0o444))
	must(t, os.Chmod(out, 0o444))
	r := analyzeTo(t, dir, out)
	if r.code != exitError || !strings.Contains(r.stderr, "ro.txt") || !strings.Contains(r.stderr, "read-only") {
		t.Errorf("exit %d, stderr %q; want 1 saying ro.txt is read-only", r.code, r.stderr)
	}
	if got := readFile(t, out); got != "keep" {
		t.Errorf("read-only file changed: %q", got)
	}
	fi, _ := os.Stat(out)
	if fi.Mode().Perm() != 0o444 {
		t.Errorf("mode became %v", fi.Mode())
	}
	if got := listDir(t, dir); len(got) != 1 {
		t.Errorf("folder holds %v", got)
	}
}

// A file with other hard links is written in place: every name sees the
// new content (a rename would have split them).
func TestOutputKeepsHardLinks(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	must(t, os.WriteFile(a, []byte("old"), 0o644))
	if err := os.Link(a, b); err != nil {
		t.Skip("no hard links here:", err)
	}
	if r := analyzeTo(t, dir, b); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if ga, gb := readFile(t, a), readFile(t, b); ga != gb || !strings.Contains(ga, "ATTEMPTS") {
		t.Errorf("links differ or unwritten: %q vs %q", ga, gb)
	}
	if got := listDir(t, dir); strings.Join(got, " ") != "a b" {
		t.Errorf("folder holds %v", got)
	}
}

// -o onto something that is not a regular file writes through to it:
// /dev/null stays the device (as root it became a regular file).
func TestOutputWritesThroughDevices(t *testing.T) {
	fi, err := os.Stat(os.DevNull)
	if err != nil || fi.Mode()&os.ModeDevice == 0 {
		t.Skip("no null device")
	}
	dir := t.TempDir()
	if r := analyzeTo(t, dir, os.DevNull); r.code != exitOK {
		t.Fatalf("-o %s: exit %d: %s", os.DevNull, r.code, r.stderr)
	}
	fi, err = os.Stat(os.DevNull)
	if err != nil || fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s is no longer a character device: %v %v", os.DevNull, fi.Mode(), err)
	}
	if got := listDir(t, "/dev"); strings.Contains(strings.Join(got, " "), ".null.tmp") {
		t.Errorf("temporary file left in /dev")
	}
}

// Non-finite numbers are usage errors (exit 2) for every number flag:
// --percentile NaN panicked, --margin NaN wrote 50 ms timeouts and exited
// 0, --min-success NaN made the gate pass.
func TestNonFiniteFlags(t *testing.T) {
	seed := mustAbs(t, filepath.Join(seedDir, "spans.jsonl"))
	pol := mustAbs(t, filepath.Join(seedDir, "C.yaml"))
	for _, c := range [][]string{
		{"analyze", "--percentile", "NaN"},
		{"analyze", "--margin", "NaN"},
		{"analyze", "--margin", "+Inf"},
		{"recommend", "--percentile", "inf"},
		{"recommend", "--margin", "nan"},
		{"check", "--policy", pol, "--min-success", "NaN"},
		{"check", "--policy", pol, "--tolerance", "Inf"},
		{"check", "--policy", pol, "--percentile", "-Inf"},
	} {
		r := runIn(t, ".", "", append(c, seed)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "want a finite number") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and 'want a finite number'", c, r.code, r.stderr)
		}
	}
}

// Times whose Unix nanoseconds wrap are usage errors (--since 2300 and
// --until 1000 kept every span), and so is --since after --until; a
// duration flag beyond 1000h too.
func TestTimeAndDurationFlagBounds(t *testing.T) {
	seed := mustAbs(t, filepath.Join(seedDir, "spans.jsonl"))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"analyze", "--since", "2300-01-01T00:00:00Z"}, "out of range"},
		{[]string{"analyze", "--until", "1000-01-01T00:00:00Z"}, "out of range"},
		{[]string{"convert", "--to", "jsonl", "--since", "9999-12-31T23:59:59Z"}, "out of range"},
		{[]string{"analyze", "--since", "2026-03-02T00:00:00Z", "--until", "2026-03-01T00:00:00Z"}, "is not before --until"},
		{[]string{"analyze", "--since", "-1h", "--until", "-2h"}, "is not before --until"},
		{[]string{"analyze", "--max-budget", "2562047h47m16s"}, "at most 1000h"},
		{[]string{"check", "--policy", mustAbs(t, filepath.Join(seedDir, "C.yaml")), "--max-p99", "1001h"}, "at most 1000h"},
	} {
		r := runIn(t, ".", "", append(c.args, seed)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	// The edges that hold are accepted.
	r := runIn(t, ".", "", "analyze", "-q", "--since", "1700-01-01T00:00:00Z", "--until", "2262-01-01T00:00:00Z", seed)
	if r.code != exitOK {
		t.Errorf("in-range times: exit %d: %s", r.code, r.stderr)
	}
}

// Policy files as the binary sees them: a timeout that overflowed the
// replay into a negative p50 and a pass; duplicate keys; a second
// document; merge keys and aliases (rejected before).
func TestPolicyFileStrictness(t *testing.T) {
	seed := mustAbs(t, filepath.Join(seedDir, "spans.jsonl"))
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	for _, c := range []struct{ name, body, want string }{
		{"overflow.yaml", "budget: 0s\ndefault: {timeout: 2562047h47m16s, retries: 2}\n", "overflow.yaml:2:20: default.timeout: duration \"2562047h47m16s\" is too long: at most 1000h"},
		{"dup.yaml", "budget: 30s\ndefault: {timeout: 3s}\nbudget: 9s\n", "dup.yaml:3:1: budget: key given twice (first at 1:1)"},
		{"docs.yaml", "default: {timeout: 3s}\n---\ndefault: {timeout: 1s}\n", "docs.yaml:3:1: a second YAML document"},
		{"list.yaml", "- default: {timeout: 3s}\n", "want a mapping with budget, default and hops, found a list"},
		{"long.yaml", "default: {timeout: \"" + strings.Repeat("9", 1<<20) + "\"}\n", "(1048576 bytes)"},
	} {
		p := write(c.name, c.body)
		r := runIn(t, dir, "", "check", "-q", "--policy", p, seed)
		if r.code != exitError || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %.300q; want 1 and %q", c.name, r.code, r.stderr, c.want)
		}
		if len(r.stderr) > 2000 {
			t.Errorf("%s: %d bytes on stderr", c.name, len(r.stderr))
		}
	}
	// Merge keys and aliases work: the same policy written three ways
	// gives the same report.
	plain := write("plain.yaml", "budget: 30s\ndefault: {timeout: 12s, retries: 0}\nhops:\n  forward: {timeout: 12s, retries: 1}\n")
	merged := write("merged.yaml", "budget: 30s\ndefault: &d {timeout: 12s, retries: 0}\nhops:\n  forward:\n    <<: *d\n    retries: 1\n")
	aliased := write("aliased.yaml", "budget: &b 30s\ndefault: &d {timeout: 12s, retries: 0}\nhops:\n  forward: {<<: [{retries: 1}, *d]}\n")
	var want string
	for i, p := range []string{plain, merged, aliased} {
		r := runIn(t, dir, "", "check", "-q", "--format", "json", "--policy", p, seed)
		if r.code != exitOK && r.code != exitViolation {
			t.Fatalf("%s: exit %d: %s", p, r.code, r.stderr)
		}
		// The reports differ only in the policy's name.
		got := strings.ReplaceAll(r.stdout, strings.TrimSuffix(filepath.Base(p), ".yaml"), "P")
		if i == 0 {
			want = got
		} else if got != want {
			t.Errorf("%s gives another report than plain.yaml", filepath.Base(p))
		}
	}
}

// Text from the input (a CSV header, a walked file's name and first bytes)
// reaches stderr with ESC, BEL, C1, bidi overrides and zero-width
// characters made visible.
func TestStderrShowsNoControls(t *testing.T) {
	dir := t.TempDir()
	name := "ev\x1b[2Jil\u202e\u200b.txt"
	must(t, os.Mkdir(filepath.Join(dir, "logs"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "logs", name), []byte("junk\x07\x1b]0;title\x07\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "h.csv"), []byte("trace_id,span_id,\x1b[31mhop\u2066,start\u0085\n1,2,3,4\n"), 0o644))
	for _, args := range [][]string{{"analyze", "logs"}, {"analyze", "h.csv"}, {"convert", "--to", "jsonl", "h.csv"}, {"analyze", "--policy-in-force", "p\x1b[31m\u202e.yaml", "h.csv"}, {"\x1b[31mnope"}} {
		r := runIn(t, dir, "", args...)
		if r.code == exitOK {
			t.Fatalf("%q: exit 0", args)
		}
		if i := strings.IndexFunc(r.stderr, func(c rune) bool {
			return c != '\n' && c != '\t' && c != 0xfffd && report.Visible(string(c)) != string(c)
		}); i >= 0 {
			t.Errorf("%q: stderr holds %U: %q", args, []rune(r.stderr[i:])[0], r.stderr)
		}
		if !strings.Contains(r.stderr, `\x1b`) {
			t.Errorf("%q: the escape is not shown: %q", args, r.stderr)
		}
	}
}

func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"plain café, tab\tand\nnewline":     "plain café, tab\tand\nnewline",
		"\x1b[31mred\x1b[0m":                `\x1b[31mred\x1b[0m`,
		"bell\a nul\x00 cr\r del\x7f":       `bell\x07 nul\x00 cr\r del\x7f`,
		"c1 \u0085 \u009b":                  `c1 \u0085 \u009b`,
		"bidi \u202eevil\u202c \u2066x":     `bidi \u202eevil\u202c \u2066x`,
		"zero\u200bwidth\u200d\u2060\ufeff": `zero\u200bwidth\u200d\u2060\ufeff`,
		"bad \xff\xfe utf8":                 `bad \xff\xfe utf8`,
		"":                                  "",
	} {
		if got := visible(in); got != want {
			t.Errorf("visible(%q) = %q, want %q", in, got, want)
		}
	}
}

// A panic in a command is an internal error: exit 4 (not 2, the usage
// error), a message saying it is a bug, and the temporary output file it
// was writing removed.
func TestPanicIsInternalError(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "report.txt")
	must(t, os.WriteFile(out, []byte("previous"), 0o644))
	boom := command{name: "boom", run: func(e *env, args []string) error {
		return writeTo(e, out, func(w io.Writer) error {
			fmt.Fprint(w, "half a report")
			var m map[string]int
			//lint:ignore SA5000 a nil map write is the real runtime panic this test needs
			m["x"]++
			return nil
		})
	}}
	var stdout, stderr bytes.Buffer
	code := runWith([]command{boom}, []string{"boom"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitInternal || code == exitUsage {
		t.Errorf("exit %d, want %d", code, exitInternal)
	}
	if !strings.Contains(stderr.String(), "internal error: assignment to entry in nil map") || !strings.Contains(stderr.String(), "This is a bug") {
		t.Errorf("stderr %q", stderr.String())
	}
	if got := listDir(t, dir); strings.Join(got, " ") != "report.txt" {
		t.Errorf("folder holds %v: the temporary file was not removed", got)
	}
	if got := readFile(t, out); got != "previous" {
		t.Errorf("previous output changed: %q", got)
	}
}

// The exit codes are stated in --help and in the reference the README links.
func TestExitCodesDocumented(t *testing.T) {
	r := runIn(t, ".", "", "--help")
	for _, s := range []string{"2 usage error", "4 internal error", "130/143"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("--help does not say %q:\n%s", s, r.stdout)
		}
	}
	ref := readFile(t, "../../docs/reference.md")
	for _, s := range []string{"| 4 | internal error", "| 130 |", "| 143 |"} {
		if !strings.Contains(ref, s) {
			t.Errorf("docs/reference.md does not say %q", s)
		}
	}
	if readme := readFile(t, "../../README.md"); !strings.Contains(readme, "docs/reference.md") {
		t.Error("the README does not link docs/reference.md, where the exit codes are")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

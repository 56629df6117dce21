//go:build unix

package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// Under a directory, symbolic links to files and to directories are
// followed (a loop of links, or a second way to the same directory or
// file, is read once), and every entry not read is listed with its reason.
func TestWalkLinksAndLeftovers(t *testing.T) {
	root := t.TempDir()
	ext := t.TempDir() // the files links point at, outside root
	line := func(hop string) string { return `{"hop":"` + hop + `","duration_ms":5}` + "\n" }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(ext, "linked.jsonl"), []byte(line("linked")), 0o644))
	must(os.MkdirAll(filepath.Join(ext, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(ext, "sub", "deep.jsonl"), []byte(line("deep")), 0o644))
	must(os.WriteFile(filepath.Join(root, "plain.jsonl"), []byte(line("plain")), 0o644))
	must(os.WriteFile(filepath.Join(root, ".hidden.jsonl"), []byte(line("hidden")), 0o644))
	must(os.Symlink(filepath.Join(ext, "linked.jsonl"), filepath.Join(root, "a-link.jsonl")))
	must(os.Symlink(filepath.Join(ext, "linked.jsonl"), filepath.Join(root, "b-same.jsonl"))) // the same file again
	must(os.Symlink(filepath.Join(ext, "sub"), filepath.Join(root, "dirlink")))
	must(os.Symlink(root, filepath.Join(root, "loop")))                           // a loop back to root
	must(os.Symlink(filepath.Join(ext, "nope"), filepath.Join(root, "dangling"))) // broken
	must(syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644))

	var hops []string
	st, err := Read([]string{root}, record.Options{}, SinkFunc(func(s *span.Span) { hops = append(hops, s.Hop) }))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(hops, ","); got != "linked,deep,plain" {
		t.Errorf("read %s (files %v)", got, st.Files)
	}
	reasons := map[string]string{}
	strict := map[string]bool{}
	for _, p := range st.Passed {
		reasons[filepath.Base(p.File)] = p.Reason
		strict[filepath.Base(p.File)] = p.Strict
	}
	for name, want := range map[string]string{".hidden.jsonl": PassHidden, "b-same.jsonl": PassDuplicate, "dangling": PassBrokenLink, "pipe": PassNotRegular} {
		if !strings.HasPrefix(reasons[name], want) {
			t.Errorf("%s passed over as %q, want %q", name, reasons[name], want)
		}
	}
	if len(st.Passed) != 4 || !strict["dangling"] || !strict["pipe"] || strict[".hidden.jsonl"] || strict["b-same.jsonl"] {
		t.Errorf("passed %+v", st.Passed)
	}
	if notes := strings.Join(st.Notes, "\n"); !strings.Contains(notes, "loop: the same directory as") {
		t.Errorf("notes %q", notes)
	}

	// A directory with nothing to read says what it passed over.
	empty := t.TempDir()
	must(os.WriteFile(filepath.Join(empty, ".only-hidden"), []byte(line("x")), 0o644))
	if _, err := Read([]string{empty}, record.Options{}, SinkFunc(func(*span.Span) {})); err == nil || !strings.Contains(err.Error(), "holds no files to read (1 passed over") {
		t.Errorf("got %v", err)
	}
	// Only a link in it: read (was "directory holds no files").
	linked := t.TempDir()
	must(os.Symlink(filepath.Join(ext, "linked.jsonl"), filepath.Join(linked, "spans.jsonl")))
	st, err = Read([]string{linked}, record.Options{}, SinkFunc(func(*span.Span) {}))
	if err != nil || st.Used != 1 {
		t.Errorf("a folder of links: %v, %+v", err, st)
	}
}

// Package realdata finds the real span exports the tests read: their
// copies (whole, or a subset) under testdata/real, which every clone has,
// or with TAILSCOPE_REALDATA=full the full files in ../shared/data beside
// the repository where they are there. A test asks for a file by its name
// under ../shared/data and so reads the same input on every machine;
// Whole says whether the file read is all of it, for the rare assertion
// (a count) that holds only on the full file. Only tests import it.
package realdata

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// kept is where testdata/real keeps a ../shared/data file.
type kept struct {
	name   string // under testdata/real
	subset bool   // some of the file (whole traces; of a one-trace file, a subtree), not all of it
}

// copies names the testdata/real copy of a ../shared/data file where the
// two names differ: a subset, or a file kept in another folder. A file
// missing here is looked up under the same name and is the whole file.
var copies = map[string]kept{
	"nezha-trainticket/baseline-11_39_trace.csv":       {"nezha-trainticket/baseline-11_39-subset_trace.csv", true},
	"nezha-online-boutique/2022-08-23-12_02_trace.csv": {"nezha-online-boutique/2022-08-23-12_02-subset_trace.csv", true},
	"jaeger-analytics-java/ui-trace.json":              {"jaeger/ui-trace.json", false},
	"zipkin/smartthings-mobile-web-install.json":       {"zipkin/smartthings-mobile-web-install-subset.json", true},
	// Whole days, one file a minute: every window, a share of its traces.
	"nezha-online-boutique/2022-08-23": {"nezha-online-boutique/2022-08-23-subset", true},
	"nezha-trainticket/2023-01-30":     {"nezha-trainticket/2023-01-30-subset", true},
}

var (
	rootOnce sync.Once
	root     string // the repository's folder (the one with go.mod); "" if not found
)

// repoRoot returns the folder holding go.mod, found upwards from the
// working directory (a test runs in its package's folder).
func repoRoot(t testing.TB) string {
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			return
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				root = dir
				return
			}
			up := filepath.Dir(dir)
			if up == dir {
				return
			}
			dir = up
		}
	})
	if root == "" {
		t.Fatal("realdata: no go.mod above the working directory")
	}
	return root
}

// rel makes p relative to the working directory, so that logs and the
// paths tests print stay short; p itself if it cannot.
func rel(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if r, err := filepath.Rel(wd, p); err == nil {
		return r
	}
	return p
}

// SharedDir returns ../shared/data beside the repository, relative to the
// working directory, and whether the tests are to read it: only when
// TAILSCOPE_REALDATA=full and the folder is there. By default every test
// reads the copies under testdata/real, which every clone has, so that
// what a test reads does not depend on the machine it runs on (a clone
// beside ../shared read other files than CI); TAILSCOPE_REALDATA=full
// runs the same tests on the full files (docs/DESIGN.md's numbers for the
// whole days come from there), and fails the test when the folder is not
// there: asked for the full files, a test must not quietly read the copies.
func SharedDir(t testing.TB) (string, bool) {
	t.Helper()
	d := filepath.Join(repoRoot(t), "..", "shared", "data")
	if os.Getenv("TAILSCOPE_REALDATA") != "full" {
		return rel(d), false
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		t.Fatalf("realdata: TAILSCOPE_REALDATA=full, but %s is not a folder: %v", d, err)
	}
	return rel(d), true
}

// TestdataDir returns the repository's testdata/real, relative to the
// working directory.
func TestdataDir(t testing.TB) string {
	t.Helper()
	return rel(filepath.Join(repoRoot(t), "testdata", "real"))
}

// Roots returns the folders holding real exports: testdata/real always,
// and ../shared/data after it with TAILSCOPE_REALDATA=full (for tests that
// read every file of a kind).
func Roots(t testing.TB) []string {
	t.Helper()
	out := []string{TestdataDir(t)}
	if d, ok := SharedDir(t); ok {
		out = append(out, d)
	} else {
		t.Logf("realdata: reading testdata/real only (TAILSCOPE_REALDATA=full adds %s)", d)
	}
	return out
}

// Shared returns the path of name (e.g. "nezha-trainticket/fault-12_06_trace.csv")
// in ../shared/data and whether a test is to read it: with
// TAILSCOPE_REALDATA=full, when that file is there.
func Shared(t testing.TB, name string) (string, bool) {
	t.Helper()
	d, ok := SharedDir(t)
	p := filepath.Join(d, filepath.FromSlash(name))
	if !ok {
		return p, false
	}
	_, err := os.Stat(p)
	return p, err == nil
}

// Copy returns the name under testdata/real of the copy of name, whether
// or not it is there.
func Copy(name string) string {
	if c, ok := copies[name]; ok {
		return c.name
	}
	return name
}

// Path returns the copy of name under testdata/real, or with
// TAILSCOPE_REALDATA=full the file in ../shared/data when it is there, and
// logs which it chose. A file with
// neither fails the test: a test that asks for a file must read one.
func Path(t testing.TB, name string) string {
	t.Helper()
	if p, ok := Shared(t, name); ok {
		t.Logf("realdata: %s: the full file %s", name, p)
		return p
	}
	p := filepath.Join(TestdataDir(t), filepath.FromSlash(Copy(name)))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("realdata: %s is neither in ../shared/data nor copied under testdata/real: %v", name, err)
	}
	t.Logf("realdata: %s: reading the copy %s (TAILSCOPE_REALDATA=full reads ../shared/data)", name, p)
	return p
}

// Whole reports whether path, as Path returned it for name, holds all of
// the file: the file in ../shared/data, or a copy that is not a subset.
// Counts stated for the full file hold only there.
func Whole(t testing.TB, name, path string) bool {
	t.Helper()
	if d, ok := SharedDir(t); ok && strings.HasPrefix(filepath.Clean(path), filepath.Clean(d)+string(filepath.Separator)) {
		return true
	}
	return !copies[name].subset
}

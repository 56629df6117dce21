package ingest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/ingest/internal/tempo"
)

// Paths to files.
//
// A path names a file, "-" (stdin), a glob or a directory. Directories are
// walked: symbolic links are followed (to files and to directories, a
// directory reached twice, through a loop or another link, is walked once;
// a file reached twice is read once), and every entry found is either read
// or listed in Stats.Passed with the reason it was not (a hidden entry,
// Tempo's bookkeeping, a compacted Tempo block, a broken link, something
// that is not a regular file, an unreadable folder), so that nothing under
// a path is dropped unaccounted.

// Reasons a file found under a directory is not read.
const (
	PassHidden     = "hidden (its name starts with a dot)"
	PassBrokenLink = "broken symbolic link"
	PassNotRegular = "not a regular file"
	PassDuplicate  = "the same file as another one read"
	PassUnreadable = "cannot be read"
)

// walker gathers the files under the paths it is given.
type walker struct {
	files  []string
	passed []record.PassedFile
	notes  []string
	seen   map[fileID]string // files and directories met, by identity
	remote record.Remote     // serves the paths it claims (URLs), or nil
}

// expand turns paths into the list of files to read: directories walked,
// globs expanded, "-" kept for stdin. passed are the files found and not
// read, with their reasons.
func expand(paths []string, remote record.Remote) (files []string, passed []record.PassedFile, notes []string, err error) {
	w := &walker{seen: map[fileID]string{}, remote: remote}
	if err := w.paths(paths); err != nil {
		return nil, nil, nil, err
	}
	return w.files, w.passed, w.notes, nil
}

// Files lists the files that Read would read for paths, in its order
// ("-" for stdin), or the error Read would stop on. A command uses it to
// refuse an output file that is one of its inputs before reading any.
func Files(paths []string) ([]string, error) {
	files, _, _, err := expand(paths, nil)
	return files, err
}

func (w *walker) paths(paths []string) error {
	for _, p := range paths {
		if p == "-" || w.remote != nil && w.remote.Claims(p) {
			w.files = append(w.files, p)
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && strings.ContainsAny(p, "*?[") {
				m, gerr := filepath.Glob(p)
				if gerr != nil {
					return fmt.Errorf("bad glob %q: %v", p, gerr)
				}
				// Like a shell, a glob skips hidden files unless it names them.
				if !strings.HasPrefix(filepath.Base(p), ".") {
					vis := m[:0]
					for _, x := range m {
						if !strings.HasPrefix(filepath.Base(x), ".") {
							vis = append(vis, x)
						}
					}
					m = vis
				}
				if len(m) == 0 {
					return fmt.Errorf("%s: no file matches", p)
				}
				if err := w.paths(m); err != nil {
					return err
				}
				continue
			}
			return err
		}
		if !fi.IsDir() {
			// A file named on the command line is read, whatever it is;
			// once, however many names reach it (a file named twice, or
			// also found under a folder named, would count every span
			// twice).
			if id, ok := idOf(p, fi); ok {
				if prev, dup := w.seen[id]; dup && fi.Mode().IsRegular() {
					w.notes = append(w.notes, fmt.Sprintf("%s: the same file as %s, read once", p, prev))
					continue
				}
				w.seen[id] = p
			}
			w.files = append(w.files, p)
			continue
		}
		before := len(w.files)
		passedBefore := len(w.passed)
		if err := w.dir(p, fi); err != nil {
			return err
		}
		if len(w.files) == before {
			if n := len(w.passed) - passedBefore; n > 0 {
				return fmt.Errorf("%s: directory holds no files to read (%d passed over, e.g. %s: %s)", p, n, w.passed[passedBefore].File, w.passed[passedBefore].Reason)
			}
			return fmt.Errorf("%s: directory holds no files", p)
		}
	}
	return nil
}

// dir walks the directory root (without recursion on the Go stack: a
// directory tree, or a chain of links, is as deep as the disk makes it).
func (w *walker) dir(root string, rootInfo fs.FileInfo) error {
	if id, ok := idOf(root, rootInfo); ok {
		if prev, dup := w.seen[id]; dup {
			w.notes = append(w.notes, fmt.Sprintf("%s: the same directory as %s, read once", root, prev))
			return nil
		}
		w.seen[id] = root
	}
	var found []string
	stack := []string{root}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		entries, err := os.ReadDir(d)
		if err != nil {
			if d == root {
				return err
			}
			w.pass(d, PassUnreadable+": "+shortErr(err), true)
			continue
		}
		var subdirs []string
		for _, e := range entries {
			path := filepath.Join(d, e.Name())
			if strings.HasPrefix(e.Name(), ".") {
				w.pass(path, PassHidden, false)
				continue
			}
			mode := e.Type()
			var fi fs.FileInfo
			if mode&fs.ModeSymlink != 0 {
				fi, err = os.Stat(path) // follows the link
				if err != nil {
					reason := PassBrokenLink
					if !errors.Is(err, fs.ErrNotExist) {
						reason = PassUnreadable + ": " + shortErr(err)
					}
					w.pass(path, reason, true)
					continue
				}
				mode = fi.Mode().Type()
			} else if fi, err = e.Info(); err != nil {
				w.pass(path, PassUnreadable+": "+shortErr(err), true)
				continue
			}
			id, hasID := idOf(path, fi)
			if hasID {
				if prev, dup := w.seen[id]; dup {
					if mode.IsDir() {
						w.notes = append(w.notes, fmt.Sprintf("%s: the same directory as %s (a link or a loop), read once", path, prev))
					} else {
						w.pass(path, PassDuplicate+" ("+prev+")", false)
					}
					continue
				}
				w.seen[id] = path
			}
			switch {
			case mode.IsDir():
				subdirs = append(subdirs, path)
			case mode.IsRegular():
				found = append(found, path)
			default:
				w.pass(path, PassNotRegular+" ("+kindOfMode(mode)+")", true)
			}
		}
		// Walk subdirectories in name order (the stack pops the last).
		sort.Sort(sort.Reverse(sort.StringSlice(subdirs)))
		stack = append(stack, subdirs...)
	}
	sort.Strings(found)
	keep, passed, notes := tempo.BlockFiles(found)
	w.files = append(w.files, keep...)
	w.passed = append(w.passed, passed...)
	w.notes = append(w.notes, notes...)
	return nil
}

// realPathID is a file's identity as its path with every link resolved.
func realPathID(path string) (fileID, bool) {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fileID{}, false
	}
	if a, err := filepath.Abs(p); err == nil {
		p = a
	}
	return fileID{path: p}, true
}

func (w *walker) pass(path, reason string, strict bool) {
	w.passed = append(w.passed, record.PassedFile{File: path, Reason: reason, Strict: strict})
}

func shortErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func kindOfMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// Where a report goes: --format and -o, written atomically (temporary file, rename; links, modes, owners kept).

package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/report"
)

// outputFlags choose the format and destination of a report.
type outputFlags struct {
	format string
	output string
}

func (o *outputFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&o.format, "format", "f", "text", "output format: "+strings.Join(report.Formats, ", "))
	fs.StringVarP(&o.output, "output", "o", "", "write to this file instead of stdout (atomically: a temporary file, then rename;\na symlink is followed, the file's mode and owner kept; see README)")
}

func (o *outputFlags) check() error {
	if !report.ValidFormat(o.format) {
		return usagef("--format %q: want %s", o.format, strings.Join(report.Formats, ", "))
	}
	return nil
}

// write renders to stdout or to the output file (see writeTo).
func (o *outputFlags) write(e *env, render func(w io.Writer) error) error {
	return writeTo(e, o.output, render)
}

// writeTo renders to stdout when path is "" or "-", else to the file
// path names (writeFile).
func writeTo(e *env, path string, render func(w io.Writer) error) error {
	if path == "" || path == "-" {
		return render(e.stdout)
	}
	return writeFile(path, render)
}

// notAnInput refuses, before anything is read, an output that is one of
// the command's inputs: written atomically, a report would replace the log
// it was made from. "The same file" is decided by device and inode
// (os.SameFile), so a symbolic link, a hard link, /dev/stdout or
// /dev/fd/N naming an input is caught as the input's own name is; inputs
// are the files the readers would read (directories walked, globs
// expanded, standard input when "-" names it) and the other files the
// command reads (policies). With no -o, standard output redirected onto
// an input (>> in.jsonl) is refused too: the reader would meet its own
// report. Only regular files are compared: a device such as /dev/null is
// never replaced. Usage error (exit 2): the command line is wrong.
func notAnInput(e *env, output string, inputs ...[]string) error {
	var out os.FileInfo
	name := "-o " + output
	if output == "" || output == "-" {
		f, ok := e.stdout.(*os.File)
		if !ok {
			return nil
		}
		fi, err := f.Stat()
		if err != nil {
			return nil
		}
		out, name = fi, "standard output"
	} else if fi, err := os.Stat(output); err == nil {
		out = fi
	}
	if out == nil || !out.Mode().IsRegular() {
		return nil // a new file, or not a file a rename would replace
	}
	for _, paths := range inputs {
		files, err := ingest.Files(paths)
		if err != nil {
			files = paths // the read will say what is wrong; check what is named
		}
		for _, f := range files {
			var fi os.FileInfo
			var err error
			if f == "-" {
				sf, ok := e.stdin.(*os.File)
				if !ok {
					continue
				}
				fi, err = sf.Stat()
				f = "standard input"
			} else {
				fi, err = os.Stat(f)
			}
			if err == nil && os.SameFile(out, fi) {
				return usagef("%s is an input (the same file as %s): refusing to replace what is read; write the output to another file", name, f)
			}
		}
	}
	return nil
}

// named is the names given, without the empty ones (a flag not set).
func named(names ...string) []string {
	var out []string
	for _, n := range names {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// writeFile writes an output file without damaging what the path names:
//
//   - A symlink is followed to its target (created when the link dangles,
//     as a shell's > does): the link stays a link.
//   - A regular file is replaced atomically: the output is rendered into a
//     temporary file in the target's folder, synced, given the target's
//     mode (and owner and group, where the process may set them), and
//     renamed over it. A reader sees the old content or the new, and a
//     failed run leaves the old content and no temporary file.
//   - When a rename would lose something — the file has other hard links,
//     its owner or group cannot be kept, or its folder takes no new file —
//     the output is rendered to a temporary file first and then copied
//     into the file in place (still nothing is touched when rendering
//     fails).
//   - Anything else that is not a folder — a device such as /dev/null, a
//     named pipe, a terminal, /dev/stdout — is opened and written directly.
//   - A file the user may not write is refused (exit 1). Permission is
//     tested by opening the file for writing; and since root may open
//     anything, a file with no write bit at all (chmod a-w: read-only for
//     everybody) is refused whoever runs tailscope.
//   - A new file gets mode 0666 less the umask, like any created file.
//
// Temporary files are registered for removal should the process be
// interrupted (main.go).
func writeFile(path string, render func(w io.Writer) error) error {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("cannot write %s: %s", path, fmt.Sprintf(format, a...))
	}
	if isOpenStream(path) {
		return writeThrough(path, path, render)
	}
	fi, err := os.Stat(path) // follows symlinks, as the kernel does
	switch {
	case err == nil && fi.IsDir():
		return fail("is a directory")
	case err == nil && !fi.Mode().IsRegular():
		return writeThrough(path, path, render)
	case err == nil:
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fail("%v", reason(err))
		}
		return replaceFile(path, real, render)
	case errors.Is(err, fs.ErrNotExist):
		real, err := danglingTarget(path)
		if err != nil {
			return fail("%v", reason(err))
		}
		return createFile(path, real, render)
	default:
		return fail("%v", reason(err))
	}
}

// isOpenStream reports the names of files already open in this process
// (/dev/stdout, /dev/fd/1, /proc/self/fd/1): written through, never
// replaced.
func isOpenStream(path string) bool {
	switch path {
	case "/dev/stdout", "/dev/stderr":
		return true
	}
	return strings.HasPrefix(path, "/dev/fd/") || strings.HasPrefix(path, "/proc/self/fd/")
}

// reason is the cause of a path error without the path (the message
// names the user's path, not a temporary one).
func reason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// writeThrough opens what is not a regular file and writes to it.
func writeThrough(name, path string, render func(w io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("cannot write %s: %v", name, reason(err))
	}
	if err := render(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %v", name, reason(err))
	}
	return nil
}

// danglingTarget follows a chain of symlinks that ends in a name that does
// not exist, and returns that name; a path that is no symlink is itself.
func danglingTarget(path string) (string, error) {
	for range 40 {
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return path, nil // appeared meanwhile: not ours to decide
		}
		target, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			dir, err := filepath.EvalSymlinks(filepath.Dir(path))
			if err != nil {
				return "", err
			}
			target = filepath.Join(dir, target)
		}
		path = target
	}
	return "", errors.New("too many levels of symbolic links")
}

// createFile writes a new file atomically.
func createFile(name, path string, render func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		return fmt.Errorf("cannot write %s: folder %s: %v", name, dir, reason(err))
	} else if !fi.IsDir() {
		return fmt.Errorf("cannot write %s: %s is not a folder", name, dir)
	}
	tmp, err := createTemp(dir, filepath.Base(path), 0o666)
	if err != nil {
		return fmt.Errorf("cannot write %s: %v", name, reason(err))
	}
	if err := tmp.fill(render); err != nil {
		tmp.discard()
		return err
	}
	if err := tmp.rename(path); err != nil {
		return fmt.Errorf("cannot write %s: %v", name, reason(err))
	}
	return nil
}

// replaceFile writes over an existing regular file, keeping its mode and
// owner: atomically where a rename keeps everything, else in place after
// rendering.
func replaceFile(name, path string, render func(w io.Writer) error) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("cannot write %s: %v", name, reason(err))
	}
	if err := writable(path, fi); err != nil {
		return fmt.Errorf("cannot write %s: %v", name, err)
	}
	mode := fi.Mode().Perm()
	own := ownerOf(fi)
	inPlace := own.links > 1
	tmp, err := createTemp(filepath.Dir(path), filepath.Base(path), 0o600)
	if err != nil {
		// The folder takes no new file: render elsewhere, copy in place.
		inPlace = true
		if tmp, err = createTemp(os.TempDir(), filepath.Base(path), 0o600); err != nil {
			return fmt.Errorf("cannot write %s: %v", name, reason(err))
		}
	}
	if err := tmp.fill(render); err != nil {
		tmp.discard()
		return err
	}
	if !inPlace {
		if err := os.Chmod(tmp.name, mode); err != nil {
			inPlace = true
		} else if !own.keep(tmp.name) {
			inPlace = true
		}
	}
	if inPlace {
		err := uninterrupted(func() error { return copyInto(path, tmp.name) })
		tmp.discard()
		if err != nil {
			return fmt.Errorf("writing %s: %v", name, reason(err))
		}
		return nil
	}
	if err := tmp.rename(path); err != nil {
		return fmt.Errorf("cannot write %s: %v", name, reason(err))
	}
	return nil
}

// writable reports why an existing file may not be written, or nil.
func writable(path string, fi os.FileInfo) error {
	if fi.Mode().Perm()&0o222 == 0 {
		return fmt.Errorf("it is read-only (mode %04o)", fi.Mode().Perm())
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return reason(err)
	}
	f.Close()
	return nil
}

// copyInto writes the content of src over dst, in place.
func copyInto(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// tempFile is a temporary output file, removed if the process is
// interrupted before it is renamed or discarded.
type tempFile struct {
	*os.File
	name   string
	forget func()
}

// createTemp creates a hidden file .BASE.tmp-XXXX in dir with perm (less
// the umask), registered for removal on interrupt.
func createTemp(dir, base string, perm os.FileMode) (*tempFile, error) {
	for range 100 {
		name := filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		var f *os.File
		forget, err := addCleanupFor(func() (func(), error) {
			var err error
			f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
			return func() { os.Remove(name) }, err
		})
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &tempFile{File: f, name: name, forget: forget}, nil
	}
	return nil, errors.New("no free temporary name")
}

// fill renders into the file, syncs and closes it.
func (t *tempFile) fill(render func(w io.Writer) error) error {
	if err := render(t.File); err != nil {
		return err
	}
	if err := t.Sync(); err != nil {
		return err
	}
	return t.Close()
}

// rename moves the file into place.
func (t *tempFile) rename(path string) error {
	err := os.Rename(t.name, path)
	if err != nil {
		os.Remove(t.name)
	}
	t.forget()
	return err
}

// discard closes and removes the file.
func (t *tempFile) discard() {
	t.Close()
	os.Remove(t.name)
	t.forget()
}

// Unix tests of -o: signals remove temporary files; FIFOs, owners and permissions.

//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGINT and SIGTERM during a long convert left hidden .X.tmp-* files of
// hundreds of MB. The handler removes them and exits 130 or 143; a
// previous output stays as it was.
func TestSignalRemovesTemporaryFiles(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}, {syscall.SIGHUP, 129}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			for _, previous := range []bool{false, true} {
				dir := t.TempDir()
				out := filepath.Join(dir, "spans.jsonl")
				if previous {
					must(t, os.WriteFile(out, []byte("previous\n"), 0o644))
				}
				ctx, cancel := context.WithTimeout(context.Background(), runLimit)
				cmd := exec.CommandContext(ctx, binPath, "convert", "--input", "jsonl", "--to", "jsonl", "-o", out, "-")
				stdin, err := cmd.StdinPipe()
				must(t, err)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				must(t, cmd.Start())
				// Spans go in; the read waits for more with the output's
				// temporary file open.
				for i := 0; i < 2000; i++ {
					fmt.Fprintf(stdin, `{"trace_id":"t%d","span_id":"s%d","hop":"api","start":%d,"duration_ms":%d,"status":"ok"}`+"\n", i, i, 1700000000000000000+int64(i)*1e6, 10+i%50)
				}
				tmp := waitFor(t, dir, ".spans.jsonl.tmp-")
				must(t, cmd.Process.Signal(c.sig))
				err = cmd.Wait()
				stdin.Close()
				cancel()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != c.code {
					t.Fatalf("previous=%v: %v (exit %d), want exit %d; stderr %s", previous, err, cmd.ProcessState.ExitCode(), c.code, stderr.String())
				}
				if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("temporary file %s left behind", filepath.Base(tmp))
				}
				want := ""
				if previous {
					want = "spans.jsonl"
					if got := readFile(t, out); got != "previous\n" {
						t.Errorf("previous output changed: %q", got)
					}
				}
				if got := strings.Join(listDir(t, dir), " "); got != want {
					t.Errorf("previous=%v: folder holds %q, want %q", previous, got, want)
				}
			}
		})
	}
}

// waitFor waits until dir holds a file whose name starts with prefix.
func waitFor(t *testing.T, dir, prefix string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range listDir(t, dir) {
			if strings.HasPrefix(n, prefix) {
				return filepath.Join(dir, n)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s* file appeared in %s", prefix, dir)
	return ""
}

// -o onto a named pipe writes into the pipe (it used to be replaced by a
// regular file).
func TestOutputWritesThroughFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo) // blocks until the writer opens
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		var b bytes.Buffer
		b.ReadFrom(f)
		got <- b.String()
	}()
	if r := analyzeTo(t, dir, fifo, "--format", "json"); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	select {
	case s := <-got:
		if !strings.Contains(s, `"schema"`) {
			t.Errorf("pipe received %q", s)
		}
	case <-time.After(runLimit):
		t.Fatal("the pipe received nothing")
	}
	fi, err := os.Lstat(fifo)
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe is no longer a pipe: %v %v", fi.Mode(), err)
	}
}

// A file owned by someone else keeps its owner and group when root
// rewrites it (a rename would have given it to root).
func TestOutputKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file away")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "theirs.txt")
	must(t, os.WriteFile(out, []byte("old"), 0o640))
	must(t, os.Chown(out, 65534, 65534))
	if r := analyzeTo(t, dir, out); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	fi, err := os.Stat(out)
	must(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 65534 || st.Gid != 65534 || fi.Mode().Perm() != 0o640 {
		t.Errorf("owner %d:%d mode %v, want 65534:65534 0640", st.Uid, st.Gid, fi.Mode())
	}
	if got := readFile(t, out); !strings.Contains(got, "ATTEMPTS") {
		t.Errorf("not written: %q", got)
	}
}

// As an ordinary user (nobody, when the tests run as root): a file the
// user may not write is refused and stays as it was; a writable file in a
// folder the user may not write is written in place; a group-writable
// file of another owner is written in place and keeps its owner.
func TestOutputPermissionsAsUser(t *testing.T) {
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		// The binary's folder (made by TestMain) must be open to it.
		must(t, os.Chmod(filepath.Dir(binPath), 0o755))
	}
	base := t.TempDir()
	if cred != nil {
		// The two folders the testing package made are opened; any
		// folder above that is closed to others means skipping.
		must(t, os.Chmod(base, 0o755))
		must(t, os.Chmod(filepath.Dir(base), 0o755))
		for d := filepath.Dir(filepath.Dir(base)); ; d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o001 == 0 {
				t.Skipf("%s is closed to other users", d)
			}
			if d == filepath.Dir(d) {
				break
			}
		}
		for _, p := range []string{filepath.Dir(binPath), mustAbs(t, seedDir)} {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o005 != 0o005 {
				t.Skipf("%s is closed to other users", p)
			}
		}
	}
	dir := filepath.Join(base, "w")
	must(t, os.Mkdir(dir, 0o777))
	must(t, os.Chmod(dir, 0o777))
	uid := os.Geteuid()
	if cred != nil {
		uid = int(cred.Uid)
	}
	seed := mustAbs(t, filepath.Join(seedDir, "spans.jsonl"))
	run := func(out string) (int, string) {
		cmd := exec.Command(binPath, "analyze", "-q", seed, "-o", out)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		b, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(b)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(b)
	}
	// Not the user's, not writable by them.
	theirs := filepath.Join(dir, "theirs.txt")
	must(t, os.WriteFile(theirs, []byte("keep"), 0o644))
	if cred != nil {
		must(t, os.Chown(theirs, 0, 0))
	} else {
		must(t, os.Chmod(theirs, 0o444))
	}
	want := "theirs.txt: permission denied"
	if cred == nil {
		want = "theirs.txt: it is read-only"
	}
	if code, out := run(theirs); code != exitError || !strings.Contains(out, want) {
		t.Errorf("unwritable file: exit %d, %q; want 1 and %q", code, out, want)
	}
	if got := readFile(t, theirs); got != "keep" {
		t.Errorf("unwritable file changed: %q", got)
	}
	// Writable, in a folder the user may not write.
	locked := filepath.Join(dir, "locked")
	must(t, os.Mkdir(locked, 0o755))
	out := filepath.Join(locked, "r.txt")
	must(t, os.WriteFile(out, []byte("old"), 0o644))
	if cred != nil {
		must(t, os.Chown(locked, 0, 0))
		must(t, os.Chown(out, uid, 65534))
	} else {
		must(t, os.Chmod(locked, 0o555))
		defer os.Chmod(locked, 0o755)
	}
	if code, msg := run(out); code != exitOK || !strings.Contains(readFile(t, out), "ATTEMPTS") {
		t.Errorf("writable file in a locked folder: exit %d: %s", code, msg)
	}
	if got := listDir(t, locked); strings.Join(got, " ") != "r.txt" {
		t.Errorf("locked folder holds %v", got)
	}
	// Another owner's group-writable file: written in place, owner kept.
	if cred != nil {
		shared := filepath.Join(dir, "shared.txt")
		must(t, os.WriteFile(shared, []byte("old"), 0o664))
		must(t, os.Chmod(shared, 0o664))
		must(t, os.Chown(shared, 0, 65534))
		if code, msg := run(shared); code != exitOK || !strings.Contains(readFile(t, shared), "ATTEMPTS") {
			t.Errorf("group-writable file: exit %d: %s", code, msg)
		}
		fi, err := os.Stat(shared)
		must(t, err)
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 65534 || fi.Mode().Perm() != 0o664 {
			t.Errorf("group-writable file: owner %d:%d mode %v, want 0:65534 0664", st.Uid, st.Gid, fi.Mode())
		}
	}
	for _, n := range listDir(t, dir) {
		if strings.Contains(n, ".tmp-") {
			t.Errorf("temporary file %s left", n)
		}
	}
}

// A new file gets 0666 less the umask, like any created file.
func TestOutputNewFileMode(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	dir := t.TempDir()
	out := filepath.Join(dir, "new.txt")
	if r := analyzeTo(t, dir, out); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v (%v), want 0640 under umask 027", fi.Mode(), err)
	}
}

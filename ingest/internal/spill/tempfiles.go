package spill

import (
	"os"
	"sort"
	"sync"
)

// TempFiles are the temporary files the process has open: ingest's spills
// of Parquet read from stdin or from a compressed input (which needs
// random access), and any other a program registers (cmd/tailscope's
// output written beside its target). A program that ends on SIGINT or
// SIGTERM calls TempFiles.Cleanup before it exits, so that nothing is left
// behind; files are otherwise removed by their owner as usual.
var TempFiles = &tempFiles{paths: map[string]struct{}{}}

type tempFiles struct {
	mu    sync.Mutex
	paths map[string]struct{}
	done  bool // Cleanup ran: files created later are removed at once
}

// Add registers a temporary file for Cleanup. It reports false when
// Cleanup has already run (the process is ending): the caller should
// remove the file and stop.
func (t *tempFiles) Add(path string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return false
	}
	t.paths[path] = struct{}{}
	return true
}

// Forget unregisters a file its owner has renamed or removed itself.
func (t *tempFiles) Forget(path string) {
	t.mu.Lock()
	delete(t.paths, path)
	t.mu.Unlock()
}

// Remove removes a registered file and forgets it.
func (t *tempFiles) Remove(path string) error {
	t.Forget(path)
	err := os.Remove(path)
	if os.IsNotExist(err) {
		return nil
	}
	return err
}

// Paths lists the registered files, sorted.
func (t *tempFiles) Paths() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.paths))
	for p := range t.paths {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Cleanup removes every registered file; it is safe to call from a signal
// handler's goroutine while reading goes on, and more than once. Files
// registered after it are refused (Add reports false).
func (t *tempFiles) Cleanup() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	for p := range t.paths {
		os.Remove(p)
		delete(t.paths, p)
	}
}

// Reset forgets every file and undoes Cleanup, for tests that run it.
func (t *tempFiles) Reset() {
	t.mu.Lock()
	t.paths, t.done = map[string]struct{}{}, false
	t.mu.Unlock()
}

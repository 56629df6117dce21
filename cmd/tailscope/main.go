// The process: signals, cleanups on exit, and the exit code of run.

// Command tailscope tells a team how to set its timeouts and retries from
// what its own traces show. See `tailscope --help` and the README.
package main

import (
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/internal/hugeheap"
)

func main() {
	// A crash run cannot recover from — a fatal runtime error such as a
	// stack overflow, or a panic on another goroutine — would exit 2,
	// which says "usage error". Abort with SIGABRT instead (exit 134),
	// with every goroutine's stack for the bug report. A panic in the
	// command itself is recovered by run (exit 4).
	debug.SetTraceback("crash")
	// The heap grows into 2 MB pages instead of 4 KB ones where the
	// kernel leaves that to the process: a fifth less CPU on a million
	// spans, whose page faults were a fifth of it (package hugeheap).
	hugeheap.Prepare(hugeheap.DefaultSize)
	onSignals()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// onSignals makes SIGINT, SIGTERM and SIGHUP remove what the run has in
// flight (temporary output files, and whatever else registered a cleanup)
// before the process ends with the conventional code 128 + the signal's
// number: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP.
func onSignals() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-ch
		cleanups.mu.Lock() // held to the end: nothing new is created
		cleanups.runLocked()
		ingest.TempFiles.Cleanup() // the readers' spills (Parquet from stdin or .gz)
		code := 128 + 2
		if n, ok := s.(syscall.Signal); ok {
			code = 128 + int(n)
		}
		os.Exit(code)
	}()
}

// cleanups are what must be undone if the process ends early: temporary
// files above all. Whoever creates one registers its removal and forgets
// it once the file is renamed or removed. The signal handler and a
// recovered panic run what is registered.
var cleanups cleanupList

type cleanupList struct {
	mu   sync.Mutex
	next int
	fns  map[int]func()
}

// addCleanupFor runs create — which makes something, such as a file, and
// returns how to undo it — and registers the undoing, both under the lock
// the signal handler takes: a signal cannot fall between the creation and
// the registration. When create fails nothing is registered.
func addCleanupFor(create func() (undo func(), err error)) (forget func(), err error) {
	cleanups.mu.Lock()
	defer cleanups.mu.Unlock()
	undo, err := create()
	if err != nil {
		return func() {}, err
	}
	if cleanups.fns == nil {
		cleanups.fns = map[int]func(){}
	}
	id := cleanups.next
	cleanups.next++
	cleanups.fns[id] = undo
	return func() {
		cleanups.mu.Lock()
		delete(cleanups.fns, id)
		cleanups.mu.Unlock()
	}, nil
}

// uninterrupted runs fn with the signal handler held off: for what a
// signal must not cut in half, such as rewriting a file in place. A signal
// that arrives meanwhile takes effect when fn returns.
func uninterrupted(fn func() error) error {
	cleanups.mu.Lock()
	defer cleanups.mu.Unlock()
	return fn()
}

// runCleanups runs and forgets every registered cleanup.
func runCleanups() {
	cleanups.mu.Lock()
	defer cleanups.mu.Unlock()
	cleanups.runLocked()
}

// runLocked runs and forgets every cleanup; c.mu is held.
func (c *cleanupList) runLocked() {
	for id, fn := range c.fns {
		delete(c.fns, id)
		func() {
			defer func() { recover() }() // one failing cleanup must not stop the others
			fn()
		}()
	}
}

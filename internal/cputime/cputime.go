// Package cputime reads the process's CPU time, for tests that compare
// the cost of work at two sizes: unlike wall time it does not grow when
// other processes share the machine, so a loaded CI runner does not fail
// a test of how cost scales. Only tests import it.
package cputime

import "time"

// Now is the process's user and system CPU time so far (wall time where
// the platform does not say; see now_unix.go).
func Now() time.Duration { return now() }

// Since is the CPU time spent since an earlier Now.
func Since(t time.Duration) time.Duration { return now() - t }

//go:build unix

package analyze

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system CPU time: unlike wall time it
// does not grow when other processes share the machine, so the scaling
// tests compare it between sizes.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

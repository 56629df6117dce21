//go:build !unix

package analyze

import "time"

// cpuTime falls back to wall time where the process's CPU time is not
// at hand.
func cpuTime() time.Duration { return time.Duration(time.Now().UnixNano()) }

package pool

import "runtime"

// Workers is the number of decoding goroutines: all cores.
func Workers() int { return max(1, runtime.GOMAXPROCS(0)) }

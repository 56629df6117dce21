package pool

import "runtime"

// BlockSize is the target size of a block of lines: large enough that the
// hand-off costs nothing per line, small enough to keep the working set
// in cache.
var BlockSize = 1 << 20

// Workers is the number of decoding goroutines: all cores.
func Workers() int { return max(1, runtime.GOMAXPROCS(0)) }

//go:build !(linux && (amd64 || arm64))

package hugeheap

// Prepare does nothing here: transparent huge pages are Linux's.
func Prepare(size int) bool { return false }

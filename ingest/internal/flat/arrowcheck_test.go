package flat

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The allocator handed to arrow-go refuses a claimed size past the bound,
// and counts what is alive, so a corrupt length fails instead of taking
// the machine's memory.
func TestArrowAllocatorBounds(t *testing.T) {
	a := &arrowAllocator{mem: memory.NewGoAllocator()}
	refused := func(f func()) (p bool) {
		defer func() { p = recover() != nil }()
		f()
		return false
	}
	if refused(func() { a.Free(a.Allocate(1 << 20)) }) {
		t.Fatal("a 1 MB buffer was refused")
	}
	if a.live != 0 {
		t.Errorf("live %d after free, want 0", a.live)
	}
	if !refused(func() { a.Allocate(maxArrowBody + 1) }) {
		t.Error("a buffer over maxArrowBody was allowed")
	}
	if !refused(func() { a.Allocate(-1) }) {
		t.Error("a negative size was allowed")
	}
	b := a.Allocate(1 << 10)
	if !refused(func() { a.Reallocate(maxArrowBody+1, b) }) {
		t.Error("a reallocation over maxArrowBody was allowed")
	}
}

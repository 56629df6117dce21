package flat

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
)

// hopIntern answers what the Interner answers, for names of every length
// (held in their slot up to 16 bytes, by their string past that),
// invalid UTF-8 and names that differ in one byte included, as the table
// grows.
func TestHopIntern(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 7))
	var names [][]byte
	for i := range 5000 {
		var b []byte
		switch i % 4 {
		case 0:
			b = fmt.Appendf(nil, "svc%d.Op", i)
		case 1:
			b = fmt.Appendf(nil, "orders-%d.List/with/a/longer/path/%d", i%7, i)
		case 2:
			b = make([]byte, r.IntN(20))
			for k := range b {
				b[k] = byte(r.IntN(256))
			}
		default:
			b = fmt.Appendf(nil, "%016d", i) // 16 bytes exactly
		}
		names = append(names, b)
	}
	var h hopIntern
	want := &record.Interner{}
	in := &record.Interner{}
	for range 200_000 {
		b := names[r.IntN(len(names))]
		// The bytes as a reader lends them: inside a longer buffer, or
		// alone with no room past them.
		var arg []byte
		if r.IntN(2) == 0 {
			buf := append(append([]byte{}, b...), "\",\"start\":1"...)
			arg = buf[:len(b)]
		} else {
			arg = append([]byte(nil), b...)
		}
		if got, w := h.get(in, arg), want.Get(b); got != w {
			t.Fatalf("get(%q) = %q, the Interner gives %q", b, got, w)
		}
	}
}

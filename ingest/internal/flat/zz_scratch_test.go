package flat

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
)

var _ = binary.LittleEndian
var _ = record.IsNumberByte

func scanNumberOld(b []byte, i int, nt *numText) {
	start := i
	nt.neg = b[i] == '-'
	if nt.neg {
		i++
	}
	var m uint64
	nd, frac := 0, 0
	dot, other := false, false
	// The leading digits eight at a time while there are eight (a unix-ns
	// start has 19): one multiply chain per word instead of per digit.
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		if (x&0xF0F0F0F0F0F0F0F0)|((x+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4 != 0x3333333333333333 {
			break
		}
		x = (x & 0x0F0F0F0F0F0F0F0F) * 2561 >> 8 // pairs
		x = (x & 0x00FF00FF00FF00FF) * 6553601 >> 16
		x = (x & 0x0000FFFF0000FFFF) * 42949672960001 >> 32
		m = m*100_000_000 + x
		nd += 8
		i += 8
	}
	for ; i < len(b); i++ {
		c := b[i]
		if d := c - '0'; d < 10 {
			m = m*10 + uint64(d)
			nd++
			if dot {
				frac++
			}
		} else if c == '.' && !dot {
			dot = true
		} else if record.IsNumberByte(c) {
			other = true
		} else {
			break
		}
	}
	nt.text, nt.m, nt.nd, nt.frac, nt.dot, nt.plain = b[start:i], m, nd, frac, dot, !other && nd > 0
}

func numInputs() [][]byte {
	data := bytes.TrimSpace(flatBenchLines(10_000))
	var out [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		for _, k := range []string{"\"start\":", "\"duration_ms\":", "\"code\":", "\"attempt\":", "\"timeout_ms\":"} {
			i := bytes.Index(l, []byte(k)) + len(k)
			out = append(out, l[i:])
		}
	}
	return out
}

var sink int

func BenchmarkScanOld(b *testing.B) {
	in := numInputs()
	var nt numText
	for b.Loop() {
		for _, x := range in {
			scanNumberOld(x, 0, &nt)
			sink += nt.nd
		}
	}
}

func BenchmarkScanNew(b *testing.B) {
	in := numInputs()
	var nt numText
	for b.Loop() {
		for _, x := range in {
			scanNumber(x, 0, &nt)
			sink += nt.nd
		}
	}
}

package jsonscan

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// The word-at-a-time string scan must stop at the same quote, backslash
// or control byte as a byte loop, wherever it falls in a word.
func TestScanStringWords(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	alphabet := []byte("abcXYZ019 _-é\"\\\x01\x1f")
	for range 20000 {
		n := r.IntN(40)
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		in := append(append([]byte{'"'}, b...), '"')
		var sc Scanner
		sc.Buf = in
		got, ok := sc.Str()
		// The byte-loop answer: the first quote ends the string, a control
		// byte before it makes it invalid, a backslash takes the escape path.
		k := bytes.IndexFunc(in[1:], func(r rune) bool { return r == '"' || r == '\\' || r < 0x20 })
		switch c := in[1+k]; {
		case c == '\\':
			continue
		case c == '"':
			if !ok || string(got) != string(in[1:1+k]) || sc.Pos != k+2 {
				t.Fatalf("%q: got %q %v at %d, want %q", in, got, ok, sc.Pos, in[1:1+k])
			}
		default:
			if ok {
				t.Fatalf("%q: control byte accepted", in)
			}
		}
	}
}

// The word-at-a-time quote search stops where a byte loop does, wherever
// the quote, backslash or control byte falls in a word.
func TestPlainStringWords(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	alphabet := []byte("abcXYZ019 _-é\"\\\x01\x1f\x7f\xff")
	for range 50000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		j, ok := PlainString(b, 0)
		k := bytes.IndexFunc(b, func(r rune) bool { return r == '"' || r == '\\' || r < 0x20 })
		wantOK := k >= 0 && b[k] == '"'
		if ok != wantOK || (ok && j != k) {
			t.Fatalf("%q: %d %v, want %d %v", b, j, ok, k, wantOK)
		}
	}
}

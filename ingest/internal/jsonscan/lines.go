package jsonscan

import (
	"bufio"
	"errors"
	"io"
)

var Newline = []byte{'\n'}

// ReadFull fills p; unlike io.ReadFull it reports a clean end as io.EOF
// and passes every other error through (a truncated gzip stream's
// io.ErrUnexpectedEOF must stay an error).
func ReadFull(r io.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// SkipLine discards input up to and including the next newline.
func SkipLine(r interface {
	ReadSlice(byte) ([]byte, error)
}) error {
	for {
		_, err := r.ReadSlice('\n')
		if err == nil {
			return nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

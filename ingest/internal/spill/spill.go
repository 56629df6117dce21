package spill

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/option"
)

// RandomAccess returns the input as an io.ReaderAt and its size. A
// stream (stdin, a decompressed input) is spilled to a temporary file,
// registered in TempFiles so that a signal does not leave it behind, and
// bounded by Options.MaxSpill: a small compressed input can expand to far
// more than the disk holds.
func RandomAccess(src *record.Source, pattern string) (io.ReaderAt, int64, func(), error) {
	if src.File != nil {
		fi, err := src.File.Stat()
		if err == nil && fi.Mode().IsRegular() {
			return src.File, fi.Size(), func() {}, nil
		}
	}
	tmp, err := os.CreateTemp("", pattern)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("spilling to a temporary file: %v", err)
	}
	cleanup := func() { tmp.Close(); TempFiles.Remove(tmp.Name()) }
	if !TempFiles.Add(tmp.Name()) {
		cleanup()
		return nil, 0, nil, errors.New("spilling to a temporary file: interrupted")
	}
	limit := src.Options().MaxSpill
	if limit <= 0 {
		limit = record.DefaultMaxSpill
	}
	n, err := io.Copy(tmp, io.LimitReader(src.R, limit+1))
	if err == nil && n > limit {
		err = fmt.Errorf("the input is over %s once decompressed (raise with %s)", bytesText(limit), src.Options().Names.Of(option.MaxSpill))
	}
	if err != nil {
		cleanup()
		return nil, 0, nil, fmt.Errorf("spilling to a temporary file: %v", err)
	}
	return tmp, n, cleanup, nil
}

// bytesText is a size for messages: 4 GiB, 512 MiB, 100 KiB, 12 bytes.
func bytesText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

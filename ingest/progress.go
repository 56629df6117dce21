package ingest

import (
	"io"
	"os"

	"github.com/tailscope/tailscope/ingest/internal/record"
)

// progress counts the input bytes a Read has consumed, for a progress
// display (a ProgressSink). It counts bytes of the files as stored
// (compressed bytes for .gz/.zst), because that is what the total size is
// known in; a file read by random access (Parquet, Arrow) counts in full
// when it is done. A nil *progress does nothing, so the read path needs no
// checks.
type progress struct {
	sink  record.ProgressSink
	done  int64 // bytes of the files finished
	cur   int64 // bytes of the current file read so far
	size  int64 // size of the current file, 0 when unknown
	total int64 // sum of the sizes, 0 when any is unknown (stdin)
}

func newProgress(sink record.ProgressSink, files []string) *progress {
	if sink == nil {
		return nil
	}
	p := &progress{sink: sink}
	for _, f := range files {
		fi, err := os.Stat(f)
		if f == "-" || err != nil || !fi.Mode().IsRegular() {
			p.total = 0
			break
		}
		p.total += fi.Size()
	}
	return p
}

// wrap counts what is read through r, a file of the given size (0 when
// unknown).
func (p *progress) wrap(r io.Reader, size int64) io.Reader {
	if p == nil {
		return r
	}
	p.cur, p.size = 0, size
	return &countingReader{r: r, p: p}
}

// fileDone moves the count past the current file, however it was read.
func (p *progress) fileDone() {
	if p == nil {
		return
	}
	p.done += max(p.cur, p.size)
	p.cur, p.size = 0, 0
	p.sink.Progress(p.done, p.total)
}

type countingReader struct {
	r io.Reader
	p *progress
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if n > 0 {
		c.p.cur += int64(n)
		c.p.sink.Progress(c.p.done+c.p.cur, c.p.total)
	}
	return n, err
}

// fileSize is the size of an open regular file, or 0.
func fileSize(f *os.File) int64 {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return 0
	}
	return fi.Size()
}

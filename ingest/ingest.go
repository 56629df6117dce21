// Package ingest reads span logs — files, directories, globs or stdin, plain,
// gzip or zstd — and turns every record into a canonical span.Span.
//
// It streams: a decoder hands each span to the caller's Sink as soon as it is
// decoded, so no input is ever held whole in memory. Bad records never stop a
// run: each is skipped with its position and a reason, and counted, so that a
// report can reconcile read = used + skipped (docs/DESIGN.md §10). Only I/O errors and
// unreadable files end a run with an error.
//
// The package knows formats and nothing about statistics: it must not
// compute percentiles or decide outcomes beyond what a record states.
package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/option"
)

// Formats the reader knows, in the order --help lists them.
var Formats = []string{"jsonl", "otlp", "jaeger", "zipkin", "csv", "parquet", "arrow"}

// ValidHopBy reports whether h is a --hop-by value tailscope understands.
func ValidHopBy(h string) bool {
	switch h {
	case "", "hop", "service", "name", "service+name", "peer":
		return true
	}
	k, ok := strings.CutPrefix(h, "attr:")
	return ok && k != ""
}

// Read decodes every path and hands each span kept to sink.Span. The *Span
// is only valid during the call; the sink copies what it keeps. A sink
// that is also a ProgressSink, FileSink, ExpectSink or Fork is used as
// such (see Sink).
func Read(paths []string, opt record.Options, sink record.Sink) (*record.Stats, error) {
	if opt.MaxRecord <= 0 {
		opt.MaxRecord = record.DefaultMaxRecord
	}
	if opt.MaxErrors <= 0 {
		opt.MaxErrors = 20
	}
	if opt.Format == "" {
		opt.Format = "auto"
	}
	if opt.Format != "auto" && decoders[opt.Format] == nil {
		return nil, fmt.Errorf("unknown %s %q (want auto, %s)", opt.Names.Of(option.Input), opt.Format, strings.Join(Formats, ", "))
	}
	files, passed, notes, err := expand(paths, opt.Remote)
	if err != nil {
		return nil, err
	}
	st := record.NewStats(files)
	st.Passed, st.Notes = passed, notes
	ps, _ := sink.(record.ProgressSink)
	prog := newProgress(ps, files)
	fs, _ := sink.(record.FileSink)
	for i, f := range files {
		if fs != nil {
			fs.File(i)
		}
		if err := readFile(f, &opt, prog, st, sink); err != nil {
			return st, err
		}
	}
	st.Finish()
	return st, nil
}

// maxZstdWindow is the largest zstd window accepted: what zstd --long=31,
// the command's largest, writes.
const maxZstdWindow = 1 << 31

var (
	magicGzip = []byte{0x1f, 0x8b}
	magicZstd = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

func readFile(name string, opt *record.Options, prog *progress, st *record.Stats, sink record.Sink) error {
	if name == "-" {
		if opt.Stdin == nil {
			return errors.New("<stdin>: no standard input")
		}
		defer prog.fileDone()
		return readStream("<stdin>", prog.wrap(opt.Stdin, 0), nil, opt, st, sink)
	}
	if opt.Remote != nil && opt.Remote.Claims(name) {
		return readRemote(name, opt, prog, st, sink)
	}
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	defer prog.fileDone()
	before, _ := f.Stat()
	err = readStream(name, prog.wrap(f, fileSize(f)), f, opt, st, sink)
	if changed := stillThere(name, f, before); changed != nil {
		return changed // the cause of any error the read met
	}
	return err
}

// stillThere reports a regular file that shrank, or whose name came to
// name another file, while it was read: a log truncated (logrotate's
// copytruncate, truncate) or rotated away under the reader. Either way
// the spans read are some part of the log that nobody can name, which a
// report must not pass off as the log (it would show as one "bad JSON"
// skip at the cut, and a report on the rest). A file that grew was only
// appended to, which a reader of a live log expects.
func stillThere(name string, f *os.File, before os.FileInfo) error {
	if before == nil || !before.Mode().IsRegular() {
		return nil
	}
	after, err := f.Stat()
	if err != nil {
		return nil
	}
	if after.Size() < before.Size() {
		return fmt.Errorf("%s: the file shrank from %d to %d bytes while it was read (truncated or rotated): its report would cover an unknown part of it; read it again, or read a copy", name, before.Size(), after.Size())
	}
	now, err := os.Stat(name)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: the file was removed or renamed while it was read (rotated?): read the file under its new name", name)
	}
	if err == nil && !os.SameFile(after, now) {
		return fmt.Errorf("%s: the file was replaced by another while it was read (rotated?): read it again, or read the rotated file by its own name", name)
	}
	return nil
}

// readRemote reads a path that opt.Remote serves, and its notes.
func readRemote(name string, opt *record.Options, prog *progress, st *record.Stats, sink record.Sink) error {
	r, err := opt.Remote.Open(name)
	if err != nil {
		return err
	}
	defer r.Close()
	defer prog.fileDone()
	if err := readStream(name, prog.wrap(r, 0), nil, opt, st, sink); err != nil {
		// A failed fetch is reported as itself, not at the position
		// where the decoder met it.
		if f, ok := r.(interface{ Err() error }); ok && f.Err() != nil {
			return fmt.Errorf("%s: %w", name, f.Err())
		}
		return err
	}
	if n, ok := r.(interface{ Notes() []string }); ok {
		st.Notes = append(st.Notes, n.Notes()...)
	}
	return nil
}

// ReadStream decodes one already-open input named name (for messages). It
// is how embedded samples and tests feed the reader without a file.
func ReadStream(name string, r io.Reader, opt record.Options, sink record.Sink) (*record.Stats, error) {
	if opt.MaxRecord <= 0 {
		opt.MaxRecord = record.DefaultMaxRecord
	}
	if opt.MaxErrors <= 0 {
		opt.MaxErrors = 20
	}
	if opt.Format == "" {
		opt.Format = "auto"
	}
	st := record.NewStats([]string{name})
	err := readStream(name, r, nil, &opt, st, sink)
	st.Finish()
	return st, err
}

func readStream(display string, raw io.Reader, file *os.File, opt *record.Options, st *record.Stats, sink record.Sink) error {
	br := bufio.NewReaderSize(raw, 1<<16)
	head, _ := br.Peek(4)
	var closer io.Closer
	switch {
	case bytes.HasPrefix(head, magicGzip):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%s: gzip: %v", display, err)
		}
		closer, file = zr, nil
		br = bufio.NewReaderSize(zr, 1<<16)
	case bytes.HasPrefix(head, magicZstd):
		// zstd --long (up to --long=31) writes frames whose window is
		// over the library's default limit of 512 MiB: allow those, and
		// no more (a window is memory the decoder may need).
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxZstdWindow))
		if err != nil {
			return fmt.Errorf("%s: zstd: %v", display, err)
		}
		defer zr.Close()
		file = nil
		br = bufio.NewReaderSize(zr, 1<<16)
	}
	if closer != nil {
		defer closer.Close()
	}
	format := opt.Format
	if format == "auto" {
		f, err := sniff(br, opt.Names)
		if err != nil {
			return fmt.Errorf("%s: %v", display, err)
		}
		format = f
	}
	dec := decoders[format]
	if dec == nil {
		return fmt.Errorf("%s: the %s reader is not available in this build", display, format)
	}
	st.Formats[display] = format
	src := record.NewSource(display, br, file, opt, st, sink)
	if err := dec(src); err != nil {
		return fmt.Errorf("%s: %w", display, err)
	}
	return nil
}

package pipeline

import (
	"fmt"
	"io"

	"github.com/tailscope/tailscope/export"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

// ConvertOptions say how Convert writes.
type ConvertOptions struct {
	// Format is one of export.Formats.
	Format string
	// Attributes keeps each span's attributes (off: their values can
	// hold user data).
	Attributes bool
	// Name is the output as messages call it ("stdout", a path).
	Name string
	// Strict refuses the output when a record was skipped (option.Strict):
	// the error lists the first positions and the output is left
	// unfinished (nothing written, as the caller writes to a temporary
	// file).
	Strict bool
}

// Convert reads paths into w in tailscope's flat span schema (package
// export), span by span as the reader delivers them: `tailscope convert`.
// On an error the statistics are those read so far (nil when reading
// did not start).
func Convert(paths []string, iopt ingest.Options, w io.Writer, opt ConvertOptions) (*ingest.Stats, error) {
	ew, err := export.New(opt.Format, w)
	if err != nil {
		return nil, err
	}
	var werr error
	st, err := ingest.Read(paths, iopt, ingest.SinkFunc(func(sp *span.Span) {
		if werr != nil {
			return
		}
		if !opt.Attributes && sp.Attrs != nil {
			c := *sp
			c.Attrs = nil
			sp = &c
		}
		werr = ew.Write(sp)
	}))
	if err != nil {
		return st, err
	}
	if werr != nil {
		return st, fmt.Errorf("writing %s: %w", opt.Name, werr)
	}
	if opt.Strict {
		if err := strictSkipped(st, "; nothing written", iopt.Names); err != nil {
			return st, err
		}
	}
	if err := ew.Close(); err != nil {
		return st, fmt.Errorf("writing %s: %w", opt.Name, err)
	}
	return st, nil
}

package report

import (
	"errors"
	"io"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/check"
)

// errPending marks formats whose renderer has not landed yet.
var errPending = errors.New("this output format is not available yet; use --format text or json")

func analysisMarkdown(w io.Writer, rep *analyze.Report) error { return errPending }
func analysisHTML(w io.Writer, rep *analyze.Report) error     { return errPending }
func checkMarkdown(w io.Writer, rep *check.Report) error      { return errPending }
func checkHTML(w io.Writer, rep *check.Report) error          { return errPending }

package pipeline

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tailscope/tailscope/ingest"
)

// Strict is --strict's verdict on what was read: an error that lists the
// first positions when records were skipped, or the first files when
// files that may hold spans were passed over; nil when every record and
// every such file was read.
func Strict(st *ingest.Stats) error {
	if err := strictSkipped(st, ""); err != nil {
		return err
	}
	if len(st.Unmapped) > 0 {
		return fmt.Errorf("--strict: a --map key no record has: %s", strings.Join(st.Unmapped[:min(len(st.Unmapped), 5)], "; "))
	}
	var passed []ingest.PassedFile
	for _, p := range st.Passed {
		if p.Strict {
			passed = append(passed, p)
		}
	}
	if len(passed) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--strict: %d %s not read", len(passed), map[bool]string{true: "file", false: "files"}[len(passed) == 1])
	for _, p := range passed[:min(len(passed), 5)] {
		fmt.Fprintf(&b, "\n  %s: %s", p.File, p.Reason)
	}
	return errors.New(b.String())
}

// strictSkipped is --strict's error for skipped records, with note after
// the count; nil when none was skipped.
func strictSkipped(st *ingest.Stats, note string) error {
	if st.Skipped == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--strict: %d of %d records skipped%s", st.Skipped, st.Read, note)
	for _, x := range st.Errors[:min(len(st.Errors), 5)] {
		fmt.Fprintf(&b, "\n  %s", x)
	}
	return errors.New(b.String())
}

package pipeline

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/option"
)

// Strict is the strict read's verdict (option.Strict) on what was read:
// an error that lists the first positions when records were skipped, or
// the first files when files that may hold spans were passed over; nil
// when every record and every such file was read. Its messages name the
// settings by names.
func Strict(st *ingest.Stats, names option.Names) error {
	if err := strictSkipped(st, "", names); err != nil {
		return err
	}
	if len(st.Unmapped) > 0 {
		return fmt.Errorf("%s: a %s key no record has: %s", names.Of(option.Strict), names.Of(option.Map), strings.Join(st.Unmapped[:min(len(st.Unmapped), 5)], "; "))
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
	fmt.Fprintf(&b, "%s: %d %s not read", names.Of(option.Strict), len(passed), map[bool]string{true: "file", false: "files"}[len(passed) == 1])
	for _, p := range passed[:min(len(passed), 5)] {
		fmt.Fprintf(&b, "\n  %s: %s", p.File, p.Reason)
	}
	return errors.New(b.String())
}

// strictSkipped is the strict read's error for skipped records, with
// note after the count; nil when none was skipped.
func strictSkipped(st *ingest.Stats, note string, names option.Names) error {
	if st.Skipped == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d records skipped%s", names.Of(option.Strict), st.Skipped, st.Read, note)
	for _, x := range st.Errors[:min(len(st.Errors), 5)] {
		fmt.Fprintf(&b, "\n  %s", x)
	}
	return errors.New(b.String())
}

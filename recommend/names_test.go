package recommend

import "github.com/tailscope/tailscope/option"

// angled names each option <Name>, so that a test sees a message ask the
// caller's Names for the setting rather than spell a flag.
func angled(o option.Option) string { return "<" + o.String() + ">" }

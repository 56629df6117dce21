// The flag each option of the libraries is spelled as when their messages name it.

package main

import "github.com/tailscope/tailscope/option"

// flagOf spells the libraries' options as this command line's flags. The
// libraries say which setting a message is about (option.Option); what
// the user types for it is decided here only, so that renaming a flag
// touches this table and the flag's definition, not the packages that
// mention it (docs/DESIGN.md §11). TestFlagNames holds every option to
// a flag a command defines.
var flagOf = map[option.Option]string{
	option.HopBy:                     "--hop-by",
	option.Map:                       "--map",
	option.Input:                     "--input",
	option.Since:                     "--since",
	option.Until:                     "--until",
	option.ExcludeWindow:             "--exclude-window",
	option.Hops:                      "--hops",
	option.ExcludeHops:               "--exclude-hops",
	option.MaxRecord:                 "--max-record",
	option.MaxSpill:                  "--max-spill",
	option.Strict:                    "--strict",
	option.MaxHops:                   "--max-hops",
	option.SampleSpans:               "--sample-spans",
	option.Format:                    "-f",
	option.Verbose:                   "--verbose",
	option.PolicyInForce:             "--policy-in-force",
	option.Compare:                   "--compare",
	option.CompareWindow:             "--compare-window",
	option.Optimistic:                "--optimistic",
	option.MinSuccess:                "--min-success",
	option.MaxBudget:                 "--max-budget",
	option.HedgeLoad:                 "--hedge-load",
	option.MaxPredictedFalseTimeouts: "--max-predicted-false-timeouts",
	option.Emit:                      "--emit",
	option.GRPCClient:                "--grpc-client",
	option.Header:                    "--header",
	option.Token:                     "--token",
	option.Fetch:                     "--fetch-…",
	option.FetchTimeout:              "--fetch-timeout",
	option.FetchMaxResponse:          "--fetch-max-response",
	option.FetchLimit:                "--fetch-limit",
	option.FetchSlice:                "--fetch-slice",
	option.ClickHouseUser:            "--clickhouse-user",
}

// flagNames is the option.Names every command passes to the libraries.
func flagNames(o option.Option) string {
	if f, ok := flagOf[o]; ok {
		return f
	}
	return o.String()
}

// Package option lets a library of tailscope name, in the messages it
// writes, a setting its caller chose — a field of its Options — without
// spelling it the way one caller does. The command line calls these
// settings flags (--hop-by, --max-record); another caller, a test or a
// program using the packages, has other names for them. So a message
// that tells the reader which setting to change asks a Names for that
// setting's name, and cmd/tailscope passes the Names that spell its flags:
// a flag renamed is renamed in cmd/tailscope alone (docs/DESIGN.md §11).
//
// It imports nothing, so that every package may use it.
package option

// Option is a setting a library takes from its caller.
type Option uint8

// The settings libraries name in their messages. Each says where it is
// set when the packages are called directly.
const (
	_                         Option = iota
	HopBy                            // what a hop is (ingest Options.HopBy)
	Map                              // field names of a flat input (ingest Options.Map)
	Input                            // the input's format (ingest Options.Format)
	Since                            // the start of the window read (ingest Options.Since)
	Until                            // the end of the window read (ingest Options.Until)
	ExcludeWindow                    // windows left out of the read (ingest Options.Exclude)
	Hops                             // the hops kept (ingest Options.Hops)
	ExcludeHops                      // the hops left out (ingest Options.ExcludeHops)
	MaxRecord                        // the longest record read (ingest Options.MaxRecord)
	MaxSpill                         // the most a stream spills to disk (ingest Options.MaxSpill)
	Strict                           // a read with a skip is an error (pipeline.Strict)
	MaxHops                          // the most hops the analysis keeps apart
	SampleSpans                      // the spans kept whole for the trees
	Format                           // the report's format
	Verbose                          // a hop's whole basis in the text report
	PolicyInForce                    // the policy the logs were recorded under
	Compare                          // a baseline's logs to compare with
	CompareWindow                    // windows of one file compared
	Optimistic                       // undetermined requests counted as successes (check.Gates.Optimistic)
	MinSuccess                       // check's success gate
	MaxBudget                        // the largest budget recommended
	HedgeLoad                        // the extra load hedges may add
	MaxPredictedFalseTimeouts        // check's gate on the out-of-sample bound (check.Options.MaxPredicted)
	Emit                             // what recommend writes
	GRPCClient                       // the gRPC client a service config is for
	Header                           // HTTP headers sent to a backend (source.Options.Header)
	Token                            // a bearer token sent to a backend
	Fetch                            // the fetch settings as a family (the ones below)
	FetchTimeout                     // how long a backend's answer may take (source.Options.Timeout)
	FetchMaxResponse                 // the largest answer read (source.Options.MaxResponse)
	FetchLimit                       // traces asked for per search (source.Options.Limit)
	FetchSlice                       // the first slice of the window (source.Options.Slice)
	ClickHouseUser                   // the ClickHouse user
	last
)

var names = [...]string{
	HopBy: "HopBy", Map: "Map", Input: "Input", Since: "Since", Until: "Until",
	ExcludeWindow: "ExcludeWindow", Hops: "Hops", ExcludeHops: "ExcludeHops",
	MaxRecord: "MaxRecord", MaxSpill: "MaxSpill", Strict: "Strict", MaxHops: "MaxHops",
	SampleSpans: "SampleSpans", Format: "Format", Verbose: "Verbose",
	PolicyInForce: "PolicyInForce", Compare: "Compare", CompareWindow: "CompareWindow",
	Optimistic: "Optimistic", MinSuccess: "MinSuccess", MaxBudget: "MaxBudget",
	HedgeLoad: "HedgeLoad", MaxPredictedFalseTimeouts: "MaxPredictedFalseTimeouts",
	Emit: "Emit", GRPCClient: "GRPCClient", Header: "Header", Token: "Token",
	Fetch: "Fetch", FetchTimeout: "FetchTimeout", FetchMaxResponse: "FetchMaxResponse",
	FetchLimit: "FetchLimit", FetchSlice: "FetchSlice", ClickHouseUser: "ClickHouseUser",
}

// String is the option's own name (its constant's), what a message says
// when its caller gave no Names.
func (o Option) String() string {
	if o > 0 && o < last {
		return names[o]
	}
	return "Option(?)"
}

// All lists every option, in order.
func All() []Option {
	out := make([]Option, 0, last-1)
	for o := Option(1); o < last; o++ {
		out = append(out, o)
	}
	return out
}

// Names gives each option the name its caller's user knows it by;
// cmd/tailscope's spell its flags. A nil Names names each by String.
type Names func(Option) string

// Of is what a message calls o.
func (n Names) Of(o Option) string {
	if n == nil {
		return o.String()
	}
	return n(o)
}

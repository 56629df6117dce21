package clickhouse

// What the external tests use of the package's insides.
var (
	EncodeRowBinary = encodeRowBinary
	AllAliases      = allAliases
)

// The push-down's SQL of a sketch bin.
var (
	BinSQL  = binSQL
	BinWith = binWith
)

// The push-down's trace hash and leading zeros: q with column out
// added, computed from its column col.
func TraceHash32SQL(q, col, out string) string { return traceHashStages(col, out).wrap(q) }
func ClzSQL(q, col, out string) string         { return clzStages(col, out).wrap(q) }

// SetFloorBelow sets how far under the expected level the attempt times'
// floor lies, and returns the old value.
func SetFloorBelow(n int) int { old := floorBelow; floorBelow = n; return old }

// AttrAgain counts the attribute values whose examples a push-down asked
// for again.
func AttrAgain(p *Pushed) int { return p.attrAgain }

// AttrPerKey counts the attribute values' queries a push-down asked
// attribute by attribute.
func AttrPerKey(p *Pushed) int { return p.attrPerKey }

// CensusScans counts the scans a push-down made for the attribute
// values' census (not the sample's).
func CensusScans(p *Pushed) int { return p.censusScans }

// TraceList counts the samples a push-down read by the traces' ids the
// digests' scan brought.
func TraceList(p *Pushed) int { return p.traceList }

// SetMaxTraceText sets the bound on the sampled traces' ids' text, and
// returns the old one.
func SetMaxTraceText(n int) int { old := maxTraceText; maxTraceText = n; return old }

// SetMaxSkipText sets the bound on the text of the keys the values'
// query leaves out by the sample's census, and returns the old one.
func SetMaxSkipText(n int) int { old := maxSkipText; maxSkipText = n; return old }

// SetAttrCombos sets the bound on the attribute values' first level, and
// returns the old one.
func SetAttrCombos(n int) int { old := attrCombos; attrCombos = n; return old }

// AttemptRanks are the server's counts of each hop's attempts by rank
// (the leading zeros of analyze's keepTime hash), by hop.
func AttemptRanks(a *Aggregates) map[string][]int { return a.aranks }
